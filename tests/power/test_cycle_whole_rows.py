"""The power-save cycle decides from the few columns it reads of each node
(power.cycle_input.locked_rows) and loads whole rows (model instances) only for the nodes its
decisions change (#18): at 10,000 nodes the idle ones past SuspendTime are thousands every
cycle, of which SuspendRate lets a few power down, and the cycle loaded every one of them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.db.models.signals import post_init
from django.test.utils import CaptureQueriesContext

from cluster.core.states import NodeBase, NodeFlag
from cluster.models import Node
from cluster.services import pass_snapshot
from cluster.services.configuration import config_load
from power import cycle_input, services

pytestmark = pytest.mark.django_db

NOW = 1_767_225_600.0 + 86_400

CONF = """\
ClusterName=test
SlurmctldHost=ctl
SuspendProgram=/bin/true
ResumeProgram=/bin/true
SuspendTime=60
SuspendRate=3
NodeName=n[01-30] CPUs=4
PartitionName=batch Nodes=n[01-30] Default=YES
"""


@pytest.mark.parametrize(
    ("names_at_once", "kept"),
    [(500, False), (5, False), (5, True)],
    ids=["by-name", "every-node", "every-node-kept"],
)
def test_whole_rows_only_for_the_nodes_changed(tmp_path, settings, monkeypatch, names_at_once, kept) -> None:
    (tmp_path / "slurm.conf").write_text(CONF)
    settings.CONF_DIR = tmp_path
    config_load(path=tmp_path / "slurm.conf")
    Node.objects.update(base_state=NodeBase.IDLE, flags=0, last_busy=datetime.fromtimestamp(NOW - 1_000, UTC))
    monkeypatch.setattr(cycle_input, "NAMES_AT_ONCE", names_at_once)
    built: list[str] = []

    def count(sender, instance, **_):
        built.append(instance.name)

    post_init.connect(count, sender=Node)
    try:
        with pass_snapshot.keep() if kept else _nothing():
            if kept:
                # A cycle deciding nothing first: the rows it reads are kept, then brought
                # up to date from the nodes written since (n30 here).
                cycle_input.locked_rows({f"n{i:02d}" for i in range(1, 31)})
                Node.objects.filter(name="n30").update(last_busy=datetime.fromtimestamp(NOW, UTC))
                built.clear()
            result = services.power_pass(now=datetime.fromtimestamp(NOW, UTC), force=True)
    finally:
        post_init.disconnect(count, sender=Node)
    down = list(
        Node.objects.filter(flags=NodeFlag.POWERING_DOWN).order_by("name").values_list("name", flat=True)
    )
    assert down == ["n01", "n02", "n03"]  # SuspendRate, in name order
    # 26 eligible nodes deferred (n30 busy now when kept), 27 read and decided about.
    assert result == f"decisions=4 deferred_suspends={26 if kept else 27} deferred_resumes=0"
    assert set(built) == set(down)  # (each more than once: the writes after the decisions)


def test_a_node_freed_is_read_again_alone(tmp_path, settings, monkeypatch) -> None:
    """A job's end writes its idle nodes' last busy time by id: the rows the cycle keeps
    are brought up to date by reading those nodes again, not every node (a write by name
    could be any row)."""
    (tmp_path / "slurm.conf").write_text(CONF)
    settings.CONF_DIR = tmp_path
    config_load(path=tmp_path / "slurm.conf")
    Node.objects.update(base_state=NodeBase.IDLE, flags=0)
    monkeypatch.setattr(cycle_input, "NAMES_AT_ONCE", 5)
    names = {f"n{i:02d}" for i in range(1, 31)}
    now = datetime.fromtimestamp(NOW, UTC)
    with pass_snapshot.keep():
        cycle_input.locked_rows(names)
        services.nodes_freed({"n07": {"batch"}, "n08": {"batch"}}, now=now)
        with CaptureQueriesContext(connection) as queries:
            rows = cycle_input.locked_rows(names)
    reads = [q["sql"] for q in queries if q["sql"].startswith("SELECT") and "cluster_node" in q["sql"]]
    assert reads and all("WHERE" in sql for sql in reads), reads
    assert [n for n, row in rows.items() if row[5] == now] == ["n07", "n08"]


def test_the_views_of_nodes_not_written_are_kept(tmp_path, settings, monkeypatch) -> None:
    """The core's views of the idle nodes are made once while their rows are not written:
    a second cycle makes those of the nodes it powered down alone, and decides as the
    cycle making every view again."""
    (tmp_path / "slurm.conf").write_text(CONF)
    settings.CONF_DIR = tmp_path
    config_load(path=tmp_path / "slurm.conf")
    Node.objects.update(base_state=NodeBase.IDLE, flags=0, last_busy=datetime.fromtimestamp(NOW - 1_000, UTC))
    monkeypatch.setattr(cycle_input, "NAMES_AT_ONCE", 5)
    made: list[str] = []
    view = services.power_node_of

    def counted(row, *args, **kwargs):
        made.append(row[1])
        return view(row, *args, **kwargs)

    monkeypatch.setattr(services, "power_node_of", counted)
    with pass_snapshot.keep():
        services.power_pass(now=datetime.fromtimestamp(NOW, UTC), force=True)
        made.clear()
        second = services.power_pass(now=datetime.fromtimestamp(NOW + 70, UTC), force=True)
    assert sorted(made) == ["n01", "n02", "n03"]  # powering down since the first cycle
    # n01-n03 past SuspendTimeout (powered down), n04-n06 powering down, one SuspendNodes.
    assert second == "decisions=7 deferred_suspends=24 deferred_resumes=0"
    down = Node.objects.filter(flags=NodeFlag.POWERING_DOWN).order_by("name").values_list("name", flat=True)
    assert list(down) == ["n04", "n05", "n06"]


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *_: object) -> None:
        return None
