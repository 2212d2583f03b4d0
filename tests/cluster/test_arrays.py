"""The array throttle plugin on the pure scheduler core."""

from __future__ import annotations

from cluster.core.arrays import ArrayThrottlePlugin
from cluster.core.scheduler import JobView, NodeView, PartitionView, Snapshot, schedule


def snapshot(pending, running=()):
    nodes = tuple(
        NodeView(index=i, name=f"n{i}", cpus=4, real_memory=1000, weight=1, base="IDLE", flags=0)
        for i in range(4)
    )
    parts = {"p": PartitionView(name="p", node_indices=(0, 1, 2, 3))}
    return Snapshot(now=1000.0, nodes=nodes, partitions=parts, pending=tuple(pending), running=tuple(running))


def task(job_id, array=1, throttle=2, **kw):
    return JobView(
        job_id=job_id,
        partition="p",
        user="u",
        submit_time=1.0,
        array_job_id=array,
        array_max_tasks=throttle,
        **kw,
    )


def test_throttle_counts_tasks_started_in_the_same_pass():
    result = schedule(snapshot([task(i) for i in range(1, 6)]), [ArrayThrottlePlugin()])
    assert [s.job_id for s in result.starts] == [1, 2]
    assert {p.job_id: p.reason for p in result.pending} == {
        3: "JobArrayTaskLimit",
        4: "JobArrayTaskLimit",
        5: "JobArrayTaskLimit",
    }


def test_running_tasks_count_and_other_arrays_are_free():
    running = [task(1, state="RUNNING", start_time=900.0, node_indices=(0,), alloc_cpus=(1,), alloc_mem=(0,))]
    result = schedule(snapshot([task(2), task(3), task(4, array=9)], running), [ArrayThrottlePlugin()])
    assert sorted(s.job_id for s in result.starts) == [2, 4]


def test_unthrottled_arrays_are_not_limited():
    result = schedule(snapshot([task(i, throttle=None) for i in range(1, 6)]), [ArrayThrottlePlugin()])
    assert len(result.starts) == 5
