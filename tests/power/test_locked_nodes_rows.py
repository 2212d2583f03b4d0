"""The power-save cycle's locked nodes read without compiling a query
(power.cycle_input.locked_nodes, #18) against the ORM's ``select_for_update`` read it
replaced: the same nodes, in the same (name) order, with every field's value equal, for
random nodes and random name sets, short and past NAMES_AT_ONCE; and the power-save cycle's
columns of them (locked_rows), kept between cycles."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from cluster.core.states import NodeBase, NodeFlag
from cluster.models import Node
from cluster.services import pass_snapshot
from power import cycle_input

pytestmark = pytest.mark.django_db


def _orm(names: set[str]) -> dict[str, Node]:
    query = Node.objects.select_for_update().order_by("name")
    if len(names) <= cycle_input.NAMES_AT_ONCE:
        return {n.name: n for n in query.filter(name__in=sorted(names))}
    return {n.name: n for n in query if n.name in names}


def _fields(node: Node) -> dict:
    return {f.attname: getattr(node, f.attname) for f in Node._meta.concrete_fields}


@pytest.mark.parametrize("seed", range(4))
def test_locked_nodes_as_the_orm_reads_them(seed, monkeypatch):
    rng = random.Random(seed)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    names = [f"n{i:03d}" for i in rng.sample(range(200), rng.randint(1, 40))]
    for name in names:
        Node.objects.create(
            name=name,
            cpus=rng.choice([4, 16]),
            base_state=rng.choice(list(NodeBase)).value,
            flags=rng.choice([0, int(NodeFlag.POWERED_DOWN), int(NodeFlag.POWERING_UP | NodeFlag.DRAIN)]),
            last_busy=rng.choice([None, start + timedelta(seconds=rng.randint(0, 999))]),
            extra=rng.choice([{}, {"k": "v"}]),
            reason=rng.choice(["", "why"]),
        )
    if seed % 2:
        monkeypatch.setattr(cycle_input, "NAMES_AT_ONCE", 3)  # the read of every node
    for _ in range(5):
        wanted = set(rng.sample(names, rng.randint(0, len(names)))) | {"absent"}
        mine = cycle_input.locked_nodes(wanted)
        theirs = _orm(wanted)
        assert list(mine) == list(theirs)
        assert [_fields(n) for n in mine.values()] == [_fields(n) for n in theirs.values()]


@pytest.mark.parametrize("seed", range(6))
def test_locked_rows_as_the_orm_reads_them(seed, monkeypatch):
    """The cycle's columns (locked_rows), short and past NAMES_AT_ONCE, and kept between
    calls inside ``keep()`` while nodes are written, added and removed: the ORM's rows'
    values, in name order."""
    rng = random.Random(seed)
    start = datetime(2026, 1, 1, tzinfo=UTC)

    def node(name: str) -> Node:
        return Node(
            name=name,
            base_state=rng.choice(list(NodeBase)).value,
            flags=rng.choice([0, int(NodeFlag.POWERED_DOWN), int(NodeFlag.POWERING_UP | NodeFlag.DRAIN)]),
            last_busy=rng.choice([None, start + timedelta(seconds=rng.randint(0, 999))]),
            power_entered=rng.choice([None, start]),
            boot_time=rng.choice([None, start + timedelta(seconds=5)]),
            power_action=rng.choice(["", "cloud"]),
            suspend_time=rng.choice([None, -1, 60]),
            weight=rng.choice([1, 7]),
            reason=rng.choice(["", "why"]),
        )

    names = [f"n{i:03d}" for i in rng.sample(range(200), rng.randint(5, 40))]
    Node.objects.bulk_create([node(n) for n in names])
    if seed % 2:
        monkeypatch.setattr(cycle_input, "NAMES_AT_ONCE", 3)  # the read of every node
    with pass_snapshot.keep():
        for _ in range(6):
            wanted = set(rng.sample(names, rng.randint(0, len(names)))) | {"absent"}
            mine = cycle_input.locked_rows(wanted)
            theirs = {n.name: cycle_input.power_row(n) for n in _orm(wanted).values()}
            assert list(mine.items()) == list(theirs.items())
            # Between two cycles: a node written, one added, one removed.
            changed = rng.choice(names)
            Node.objects.filter(name=changed).update(flags=int(NodeFlag.POWER_DOWN), last_busy=start)
            plain = node(f"m{rng.randint(0, 999):03d}")
            if plain.name not in names:
                plain.save()
                names.append(plain.name)
            gone = names.pop(rng.randrange(len(names)))
            Node.objects.filter(name=gone).delete()
