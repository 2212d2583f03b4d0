"""What the kept-snapshot tests share: nodes registered, and the kept views against a
fresh read (nodes, partitions, holding jobs, and the queue at several depths)."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable

from cluster.models import Job
from cluster.services import agents, pass_snapshot, snapshot_rows


def register(nodes: list[str]) -> None:
    agents.agent_register(
        agent_id="test:1",
        nodes=[{"name": n, "cpus": 4, "real_memory": 4000, "boot_time": 1.0} for n in nodes],
        running=[],
        completions=[],
    )


CHANGES_SEEN = [0]  # how many kept tuples came with their change said


def assert_running_change_exact(running: tuple) -> None:
    """What ``pass_snapshot.running_change`` says changed (the pass core brings its kept
    holdings up to date by it alone) is exactly the difference, view by view."""
    change = pass_snapshot.running_change(running)
    if change is None:
        return
    CHANGES_SEEN[0] += 1
    views = Counter(map(id, change.base))
    views.subtract(map(id, change.gone))
    views.update(map(id, change.came))
    assert +views == Counter(map(id, running))
    assert all(n >= 0 for n in views.values()), "a view gone that was not there"


def assert_kept_equals_fresh() -> None:
    kept = pass_snapshot.resources()
    want = snapshot_rows.fresh()
    assert kept.names == want.names
    assert kept.nodes == want.nodes
    assert kept.partitions == want.partitions
    assert kept.running == want.running
    assert_running_change_exact(kept.running)
    for depth in (None, 1, 2, 100):
        queued = pass_snapshot.resources(queue=True, queue_depth=depth).pending
        assert queued == snapshot_rows.read_queue(list(want.partitions), depth), depth


def foreign_writes(rng: random.Random, execute: Callable[[str, tuple], object], nodes: list[str], ph: str):
    """Another process's writes to the rows a pass keeps, through ``execute`` (a plain
    sqlite3 or psycopg connection, whose statements Django never sees; ``ph`` its
    placeholder): a node's weight, a running job ended, a queued job held, released,
    reprioritised or cancelled."""

    def node_weight():
        execute(
            f"UPDATE cluster_node SET weight = {ph} WHERE name = {ph}",  # noqa: S608 - a placeholder
            (rng.randint(1, 50), rng.choice(nodes)),
        )

    def job_ended():
        running = list(Job.objects.filter(state="RUNNING").values_list("id", flat=True))
        if running:
            ended = rng.choice(running)
            execute(f"UPDATE cluster_job SET state = 'COMPLETED' WHERE id = {ph}", (ended,))  # noqa: S608

    def queued_job():
        pending = list(Job.objects.filter(state="PENDING").values_list("id", flat=True))
        if pending:
            change = rng.choice(
                ["hold = 'user'", "hold = ''", "priority = priority + 7", "state = 'CANCELLED'"]
            )
            execute(f"UPDATE cluster_job SET {change} WHERE id = {ph}", (rng.choice(pending),))  # noqa: S608

    return [node_weight, job_ended, queued_job]
