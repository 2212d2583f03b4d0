"""config_load's new nodes written in batches when nothing audits them (the simulator's run,
#18: at 10,000 nodes the one-by-one saves were most of the start) against the one-by-one
saves of the audited path: the same node rows and events in the same order, for random
configurations and reconfigures that add, keep, change and drop nodes.

A batch that left out a field configured_state sets, wrote the nodes in another order
than slurm.conf's, or wrote an event for a node that was already there, fails here.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from auditlog.context import disable_auditlog
from auditlog.models import LogEntry

from cluster import clock
from cluster.models import ClusterConfig, Event, Node, Partition
from cluster.services.configuration import config_load

pytestmark = pytest.mark.django_db

START = datetime(2026, 1, 1, tzinfo=UTC)
STATES = ["UNKNOWN", "UNKNOWN", "IDLE", "DOWN", "FUTURE", "CLOUD"]


def _conf(rng: random.Random, path: Path) -> None:
    lines = ["ClusterName=test", "SlurmctldHost=ctl"]
    names = rng.sample(range(1, 40), rng.randint(1, 25))
    for i in sorted(names, key=lambda _: rng.random()):
        extra = []
        if rng.random() < 0.3:
            extra.append(f"Feature={rng.choice(['a', 'a,b', 'fast'])}")
        if rng.random() < 0.2:
            extra.append(f"Weight={rng.randint(1, 9)}")
        lines.append(
            f"NodeName=n{i:02d} CPUs={rng.choice([4, 8, 16])} RealMemory={rng.choice([1000, 8000])} "
            f"State={rng.choice(STATES)} {' '.join(extra)}".rstrip()
        )
    lines.append("PartitionName=all Nodes=ALL Default=YES")
    path.write_text("\n".join(lines) + "\n")


def _stored() -> tuple[list, list]:
    skip = {"id"}
    nodes = [{k: v for k, v in row.items() if k not in skip} for row in Node.objects.order_by("id").values()]
    events = [
        {k: v for k, v in row.items() if k not in skip}
        for row in Event.objects.filter(kind=Event.Kind.NODE).order_by("id").values()
    ]
    return nodes, events


def _clear() -> None:
    Event.objects.all().delete()
    Node.objects.all().delete()
    Partition.objects.all().delete()
    ClusterConfig.objects.all().delete()


@pytest.mark.parametrize("seed", range(5))
def test_batched_new_nodes_equal_the_saved_ones(seed, tmp_path):
    rng = random.Random(seed)
    confs = []
    for k in range(3):  # a start, then two reconfigures
        path = tmp_path / f"{k}" / "slurm.conf"
        path.parent.mkdir()
        _conf(rng, path)
        confs.append(path)
    found = {}
    for batched in (False, True):
        _clear()
        moments = iter(START + timedelta(seconds=k) for k in range(1000))
        clock.install(moments.__next__)  # each path sees the same moments
        audits = LogEntry.objects.count()
        try:
            for path in confs:
                if batched:
                    with disable_auditlog():
                        config_load(path=path)
                else:
                    config_load(path=path)
        finally:
            clock.uninstall()
        found[batched] = _stored()
        if batched:
            assert LogEntry.objects.count() == audits
        else:
            assert LogEntry.objects.count() > audits  # the audited path still audits each node
    assert found[True] == found[False]
    assert found[True][1]  # nodes were added
