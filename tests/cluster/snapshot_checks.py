"""What the kept-snapshot tests share: nodes registered, and the kept views against a
fresh read (nodes, partitions, holding jobs, and the queue at several depths)."""

from __future__ import annotations

from cluster.services import agents, pass_snapshot


def register(nodes: list[str]) -> None:
    agents.agent_register(
        agent_id="test:1",
        nodes=[{"name": n, "cpus": 4, "real_memory": 4000, "boot_time": 1.0} for n in nodes],
        running=[],
        completions=[],
    )


def assert_kept_equals_fresh() -> None:
    kept = pass_snapshot.resources()
    want = pass_snapshot.fresh()
    assert kept.names == want.names
    assert kept.nodes == want.nodes
    assert kept.partitions == want.partitions
    assert kept.running == want.running
    for depth in (None, 1, 2, 100):
        queued = pass_snapshot.resources(queue=True, queue_depth=depth).pending
        assert queued == pass_snapshot.read_queue(list(want.partitions), depth), depth
