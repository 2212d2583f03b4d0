"""cluster.services.state.sync_node_flag (backfill's PLANNED, a maintenance reservation's
MAINTENANCE) writes a set of nodes in a few statements, whatever its size, and what it
writes is what it wrote node by node before: the same flags, the same node events, and
no audit entry (the flag is the system's, not a person's change)."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest
from auditlog.models import LogEntry
from django.db import connection
from django.test.utils import CaptureQueriesContext

from cluster.core.states import NodeBase, NodeFlag
from cluster.models import Event, Node
from cluster.services.state import set_node_state, sync_node_flag

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 1, 1, tzinfo=UTC)
BASES = (NodeBase.IDLE, NodeBase.MIXED, NodeBase.ALLOCATED, NodeBase.DOWN)
OTHER_FLAGS = (NodeFlag.NONE, NodeFlag.DRAIN, NodeFlag.POWERED_DOWN, NodeFlag.COMPLETING)


def make_nodes(count: int, rng: random.Random, flag: NodeFlag = NodeFlag.PLANNED) -> list[str]:
    names = [f"c{i:04d}" for i in range(count)]
    Node.objects.bulk_create(
        Node(
            name=name,
            cpus=8,
            base_state=rng.choice(BASES),
            flags=int(rng.choice(OTHER_FLAGS) | (flag if rng.random() < 0.4 else 0)),
            reason=rng.choice(("", "maintenance window")),
        )
        for name in names
    )
    return names


def node_by_node(flag, wanted, *, now, bases=None) -> list[str]:
    """sync_node_flag as it was: every node saved on its own, with its event."""
    wanted = set(wanted)
    allowed = None if bases is None else {NodeBase(b).value for b in bases}
    changed = []
    for node in Node.objects.select_for_update().order_by("name"):
        on = node.name in wanted and (allowed is None or node.base_state in allowed)
        if bool(node.flags & flag) == on:
            continue
        set_node_state(node, add=flag if on else NodeFlag.NONE, remove=NodeFlag.NONE if on else flag, now=now)
        Node.objects.filter(pk=node.pk).update(flags=node.flags)  # the flags, as node.save wrote them
        changed.append(node.name)
    return changed


def written() -> tuple[dict[str, int], list[tuple]]:
    flags = dict(Node.objects.values_list("name", "flags"))
    events = list(
        Event.objects.filter(kind=Event.Kind.NODE)
        .order_by("node", "id")
        .values_list("time", "node", "old_state", "new_state", "reason", "user", "detail")
    )
    return flags, events


@pytest.mark.parametrize("seed", range(6))
def test_the_nodes_written_together_equal_those_written_one_by_one(seed):
    rng = random.Random(seed)
    flag = rng.choice((NodeFlag.PLANNED, NodeFlag.MAINTENANCE))
    names = make_nodes(60, rng, flag)
    wanted = set(rng.sample(names, rng.randrange(1, len(names))))
    bases = rng.choice((None, (NodeBase.IDLE, NodeBase.MIXED)))
    start = dict(Node.objects.values_list("name", "flags"))

    expected_changed = node_by_node(flag, wanted, now=NOW, bases=bases)
    expected = written()
    Event.objects.all().delete()
    for name, flags in start.items():
        Node.objects.filter(name=name).update(flags=flags)
    LogEntry.objects.all().delete()

    assert sync_node_flag(flag, wanted, now=NOW, bases=bases) == expected_changed
    assert written() == expected
    assert expected_changed and expected[1]  # the draw changed something, with events
    assert not LogEntry.objects.exists()  # no audit entry: nobody changed the nodes


@pytest.mark.parametrize("count", [8, 80])
def test_a_set_of_nodes_takes_the_same_few_statements_whatever_its_size(count):
    names = make_nodes(count, random.Random(count))
    Node.objects.update(base_state=NodeBase.IDLE, flags=0)
    with CaptureQueriesContext(connection) as set_on:
        assert len(sync_node_flag(NodeFlag.PLANNED, names, now=NOW)) == count
    with CaptureQueriesContext(connection) as cleared:
        assert len(sync_node_flag(NodeFlag.PLANNED, (), now=NOW)) == count
    # Read the nodes, lock those that change, write their flags, insert their events.
    assert len(set_on) == len(cleared) == 4
    assert Event.objects.filter(kind=Event.Kind.NODE).count() == 2 * count
