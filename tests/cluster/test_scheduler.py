"""The scheduler's pure core: reasons, fit, ordering, backfill, timeouts, plugins.

No database: snapshots are built by hand.  Run with
``.venv/bin/pytest -p no:django tests/cluster/test_scheduler.py``.
"""

from __future__ import annotations

import dataclasses
import os
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cluster.core.reservations import ReservationPlugin
from cluster.core.scheduler import (
    TOP_PRIORITY,
    Blocked,
    JobView,
    NodeView,
    PartitionView,
    PassResult,
    SchedulerConfig,
    SchedulerPlugin,
    Snapshot,
    Start,
    Timeout,
    job_priority,
    parse_constraint,
    resolve_time_limit,
    schedule,
    validate_against_partition,
)
from cluster.core.states import NodeBase, NodeFlag, Reason

NOW = 1_000_000.0
MIN = 60.0


def node(i: int, cpus: int = 8, mem: int = 16_000, weight: int = 1, **kw) -> NodeView:
    return NodeView(
        index=i,
        name=f"n{i:02d}",
        cpus=cpus,
        real_memory=mem,
        weight=weight,
        base=kw.pop("base", NodeBase.IDLE),
        flags=int(kw.pop("flags", NodeFlag.NONE)),
        **kw,
    )


_next_id = iter(range(1, 10**9))


def job(job_id: int | None = None, partition: str = "batch", **kw) -> JobView:
    return JobView(
        job_id=job_id if job_id is not None else next(_next_id),
        partition=partition,
        user=kw.pop("user", "alice"),
        submit_time=kw.pop("submit_time", NOW - 100),
        **kw,
    )


def running(
    job_id: int, nodes: dict[int, tuple[int, int]], *, started: float, limit: int | None, **kw
) -> JobView:
    """A holding job: ``nodes`` maps node index -> (cpus, mem) allocated there."""
    idx = tuple(sorted(nodes))
    return job(
        job_id,
        state=kw.pop("state", "RUNNING"),
        start_time=started,
        time_limit=limit,
        node_indices=idx,
        alloc_cpus=tuple(nodes[i][0] for i in idx),
        alloc_mem=tuple(nodes[i][1] for i in idx),
        **kw,
    )


def snap(
    nodes,
    pending=(),
    running_jobs=(),
    partitions=None,
    now: float = NOW,
    **config,
) -> Snapshot:
    nodes = tuple(nodes)
    if partitions is None:
        partitions = [PartitionView("batch", tuple(n.index for n in nodes))]
    return Snapshot(
        now=now,
        nodes=nodes,
        partitions={p.name: p for p in partitions},
        pending=tuple(pending),
        running=tuple(running_jobs),
        config=SchedulerConfig(**config),
    )


def started(result: PassResult) -> dict[int, Start]:
    return {s.job_id: s for s in result.starts}


def reasons(result: PassResult) -> dict[int, str]:
    return {p.job_id: p.reason for p in result.pending}


def one(result: PassResult, job_id: int):
    return next(p for p in result.pending if p.job_id == job_id)


# --------------------------------------------------------------------------- fit


def test_job_starts_on_an_idle_node_with_resolved_time_limit_and_priority():
    p = PartitionView("batch", (0,), default_time=30, max_time=60)
    r = schedule(snap([node(0)], [job(7, num_tasks=2, mem_per_node=1000)], partitions=[p]))
    assert r.starts == (Start(7, (0,), (2,), (1000,), 30, job_priority(job(7), p, NOW)),)
    assert r.pending == ()
    assert r.stats.started == 1 and r.stats.considered == 1


def test_fit_by_free_cpus():
    busy = running(1, {0: (6, 0)}, started=NOW - 10, limit=None)
    r = schedule(snap([node(0)], [job(2, num_tasks=4), job(3, num_tasks=2)], [busy], backfill=False))
    # 4 CPUs do not fit in the 2 left: the first job waits for Resources, the second behind it.
    assert reasons(r) == {2: Reason.RESOURCES, 3: Reason.PRIORITY}
    r = schedule(snap([node(0)], [job(3, num_tasks=2)], [busy]))
    assert started(r)[3].cpus_per_node == (2,)


def test_fit_by_free_memory_and_default_memory():
    busy = running(1, {0: (1, 12_000)}, started=NOW - 10, limit=None)
    r = schedule(snap([node(0)], [job(2, mem_per_node=8000)], [busy], backfill=False))
    assert reasons(r) == {2: Reason.RESOURCES}
    r = schedule(snap([node(0)], [job(2, mem_per_node=4000)], [busy]))
    assert started(r)[2].mem_per_node == (4000,)
    # Not requested: DefMemPerNode is charged (0 by default).
    r = schedule(snap([node(0)], [job(3)], [busy]))
    assert started(r)[3].mem_per_node == (0,)
    r = schedule(snap([node(0)], [job(3)], [busy], default_mem_per_node=2000))
    assert started(r)[3].mem_per_node == (2000,)
    r = schedule(snap([node(0)], [job(3)], [busy], default_mem_per_node=5000, backfill=False))
    assert reasons(r) == {3: Reason.RESOURCES}


def test_mem_zero_takes_all_of_the_nodes_memory():
    nodes = [node(0, mem=16_000), node(1, mem=32_000)]
    busy = running(1, {0: (1, 100)}, started=NOW - 10, limit=None)
    r = schedule(snap(nodes, [job(2, mem_per_node=0)], [busy]))
    assert started(r)[2].node_indices == (1,)
    assert started(r)[2].mem_per_node == (32_000,)
    # Two --mem=0 jobs cannot share a node, even with CPUs to spare.
    r = schedule(snap([node(0)], [job(2, mem_per_node=0), job(3, mem_per_node=0)], backfill=False))
    assert list(started(r)) == [2]
    assert reasons(r) == {3: Reason.RESOURCES}


def test_nodes_node_count_and_block_distribution():
    nodes = [node(i, cpus=4) for i in range(4)]
    r = schedule(snap(nodes, [job(1, min_nodes=2, num_tasks=5)]))
    s = started(r)[1]
    assert s.node_indices == (0, 1) and s.cpus_per_node == (3, 2)
    r = schedule(snap(nodes, [job(1, min_nodes=3, num_tasks=4, cpus_per_task=2)]))
    s = started(r)[1]
    assert s.node_indices == (0, 1, 2) and s.cpus_per_node == (4, 2, 2)
    # Fewer tasks than nodes: one task per node.
    r = schedule(snap(nodes, [job(1, min_nodes=3, num_tasks=1)]))
    assert started(r)[1].cpus_per_node == (1, 1, 1)
    # max_nodes does not grow the allocation.
    r = schedule(snap(nodes, [job(1, min_nodes=1, max_nodes=4, num_tasks=2)]))
    assert started(r)[1].node_indices == (0,)


def test_multi_node_job_needs_enough_nodes_with_the_per_node_share():
    nodes = [node(i, cpus=4) for i in range(3)]
    busy = running(1, {0: (2, 0), 1: (2, 0)}, started=NOW - 10, limit=None)
    # 6 tasks on 2 nodes need 3 CPUs on each: only node 2 has them.
    r = schedule(snap(nodes, [job(2, min_nodes=2, num_tasks=6)], [busy], backfill=False))
    assert reasons(r) == {2: Reason.RESOURCES}
    r = schedule(snap(nodes, [job(2, min_nodes=2, num_tasks=4)], [busy]))
    assert started(r)[2].node_indices == (0, 1)


def test_jobs_fill_nodes_in_order_within_a_pass():
    nodes = [node(i, cpus=4) for i in range(2)]
    r = schedule(snap(nodes, [job(i, num_tasks=2) for i in range(1, 6)], backfill=False))
    assert [s.node_indices for s in r.starts] == [(0,), (0,), (1,), (1,)]
    assert reasons(r) == {5: Reason.RESOURCES}


def test_weight_then_index_order():
    nodes = [node(0, weight=5), node(1, weight=1), node(2, weight=1), node(3, weight=2)]
    r = schedule(snap(nodes, [job(1, min_nodes=3)]))
    assert started(r)[1].node_indices == (1, 2, 3)


def test_node_order_key_is_an_extension_point():
    nodes = [node(0), node(1, flags=NodeFlag.POWERED_DOWN), node(2)]

    def powered_up_first(n: NodeView) -> tuple[int, ...]:
        return (1 if n.flags & NodeFlag.POWERED_DOWN else 0, -n.index)

    r = schedule(snap(nodes, [job(1, min_nodes=2)]), node_key=powered_up_first)
    assert started(r)[1].node_indices == (0, 2)


def test_node_alloc_fields_count_when_no_running_job_says_so():
    nodes = [node(0, alloc_cpus=8), node(1, alloc_mem=15_000)]
    r = schedule(snap(nodes, [job(1, mem_per_node=2000)], backfill=False))
    assert reasons(r) == {1: Reason.RESOURCES}


# --------------------------------------------------------------------------- nodes and node lists


@pytest.mark.parametrize(
    ("base", "flags"),
    [
        (NodeBase.IDLE, NodeFlag.DRAIN),
        (NodeBase.DOWN, NodeFlag.NONE),
        (NodeBase.DOWN, NodeFlag.NOT_RESPONDING),
        (NodeBase.IDLE, NodeFlag.NOT_RESPONDING),
        (NodeBase.FUTURE, NodeFlag.NONE),
        (NodeBase.IDLE, NodeFlag.POWER_DOWN),
        (NodeBase.IDLE, NodeFlag.POWERING_DOWN),
    ],
)
def test_unusable_nodes_are_skipped(base, flags):
    nodes = [node(0, base=base, flags=flags), node(1)]
    r = schedule(snap(nodes, [job(1)]))
    assert started(r)[1].node_indices == (1,)
    r = schedule(snap(nodes, [job(1, min_nodes=2)]))
    assert reasons(r) == {1: Reason.RESOURCES}


def test_required_and_excluded_nodes():
    nodes = [node(i) for i in range(4)]
    r = schedule(snap(nodes, [job(1, min_nodes=2, req_nodes=frozenset({"n03"}))]))
    assert started(r)[1].node_indices == (0, 3)
    # More required nodes than min_nodes: all of them.
    r = schedule(snap(nodes, [job(1, req_nodes=frozenset({"n02", "n03"}))]))
    assert started(r)[1].node_indices == (2, 3)
    r = schedule(snap(nodes, [job(1, min_nodes=2, exc_nodes=frozenset({"n00", "n02"}))]))
    assert started(r)[1].node_indices == (1, 3)


def test_required_node_busy_is_resources_unusable_is_req_node_not_avail():
    nodes = [node(0), node(1, flags=NodeFlag.DRAIN), node(2)]
    parts = [PartitionView("batch", (0, 1)), PartitionView("other", (2,))]
    busy = running(1, {0: (8, 0)}, started=NOW, limit=None)
    pending = [
        job(2, req_nodes=frozenset({"n00"})),
        job(3, partition="other", req_nodes=frozenset({"n02"})),
        job(4, req_nodes=frozenset({"n01"})),
        job(5, req_nodes=frozenset({"n02"})),
        job(6, req_nodes=frozenset({"n99"})),
    ]
    r = schedule(snap(nodes, pending, [busy], partitions=parts, backfill=False))
    assert started(r).keys() == {3}
    assert reasons(r) == {
        2: Reason.RESOURCES,
        4: Reason.REQ_NODE_NOT_AVAIL,
        5: Reason.REQ_NODE_NOT_AVAIL,
        6: Reason.REQ_NODE_NOT_AVAIL,
    }
    assert one(r, 4).detail == "UnavailableNodes:n01"


def test_required_nodes_that_can_never_take_the_job_are_bad_constraints():
    nodes = [node(0, features=frozenset({"a"})), node(1, cpus=2)]
    pending = [
        job(1, req_nodes=frozenset({"n00"}), exc_nodes=frozenset({"n00"})),
        job(2, req_nodes=frozenset({"n01"}), features="a"),
        job(3, req_nodes=frozenset({"n01"}), num_tasks=4),
    ]
    r = schedule(snap(nodes, pending))
    assert {p.job_id: (p.reason, p.detail) for p in r.pending} == {
        1: (Reason.BAD_CONSTRAINTS, "required node n00 is excluded"),
        2: (Reason.BAD_CONSTRAINTS, "required node n01 lacks a"),
        3: (Reason.BAD_CONSTRAINTS, "required node n01 is too small"),
    }


def test_excluding_too_many_nodes_is_bad_constraints():
    r = schedule(snap([node(0), node(1)], [job(1, min_nodes=2, exc_nodes=frozenset({"n01"}))]))
    assert reasons(r) == {1: Reason.BAD_CONSTRAINTS}


def test_features():
    nodes = [node(0, features=frozenset({"a"})), node(1, features=frozenset({"a", "b"})), node(2)]
    r = schedule(snap(nodes, [job(1, features="b")]))
    assert started(r)[1].node_indices == (1,)
    r = schedule(snap(nodes, [job(1, features="a&b", min_nodes=1)]))
    assert started(r)[1].node_indices == (1,)
    r = schedule(snap(nodes, [job(1, features="b|a", min_nodes=2)]))
    assert started(r)[1].node_indices == (0, 1)
    r = schedule(snap(nodes, [job(1, features="c"), job(2, features="a&c"), job(3, features="[a*2]")]))
    assert reasons(r) == {1: Reason.BAD_CONSTRAINTS, 2: Reason.BAD_CONSTRAINTS, 3: Reason.BAD_CONSTRAINTS}
    r = schedule(snap(nodes, [job(1, features="a", min_nodes=3)]))
    assert reasons(r) == {1: Reason.BAD_CONSTRAINTS}


def test_parse_constraint():
    assert parse_constraint("") == ()
    assert parse_constraint("gpu") == (frozenset({"gpu"}),)
    assert parse_constraint("a&b|c") == (frozenset({"a", "b"}), frozenset({"c"}))
    assert parse_constraint("a&") is None
    assert parse_constraint("(a|b)&c") == (frozenset({"a", "c"}), frozenset({"b", "c"}))
    assert parse_constraint("[a|b]") is None


# --------------------------------------------------------------------------- reasons


def test_per_job_reasons():
    nodes = [node(0), node(1)]
    parts = [
        PartitionView("batch", (0, 1), max_time=60, max_nodes=2, min_nodes=1),
        PartitionView("down", (0,), state="DOWN"),
        PartitionView("inactive", (0,), state="INACTIVE"),
        PartitionView("big", (0, 1), min_nodes=2),
    ]
    pending = [
        job(1, hold="user"),
        job(2, hold="admin"),
        job(3, begin_time=NOW + 1),
        job(4, partition="down"),
        job(5, partition="inactive"),
        job(6, time_limit=61),
        job(7, time_limit=0),  # INFINITE
        job(8, min_nodes=3),
        job(9, partition="big"),
        job(10, partition="nosuch"),
        job(11, reservation="maint"),
        job(12, num_tasks=9),  # no node has 9 CPUs
        job(13, mem_per_node=20_000),
    ]
    # No reservation "maint" exists: the reservation plugin holds job 11.
    r = schedule(snap(nodes, pending, partitions=parts), [ReservationPlugin(())])
    assert r.starts == ()
    assert reasons(r) == {
        1: Reason.JOB_HELD_USER,
        2: Reason.JOB_HELD_ADMIN,
        3: Reason.BEGIN_TIME,
        4: Reason.PARTITION_DOWN,
        5: Reason.PARTITION_INACTIVE,
        6: Reason.PARTITION_TIME_LIMIT,
        7: Reason.PARTITION_TIME_LIMIT,
        8: Reason.PARTITION_NODE_LIMIT,
        9: Reason.PARTITION_NODE_LIMIT,
        10: Reason.PARTITION_DOWN,
        11: Reason.RESERVATION,
        12: Reason.BAD_CONSTRAINTS,
        13: Reason.BAD_CONSTRAINTS,
    }
    # Held jobs show priority 0, as in Slurm; other blocked jobs keep theirs.
    priorities = {p.job_id: p.priority for p in r.pending}
    assert priorities[1] == priorities[2] == 0
    assert priorities[3] > 0 and priorities[4] > 0


def test_begin_time_reached_runs():
    r = schedule(snap([node(0)], [job(1, begin_time=NOW)]))
    assert started(r).keys() == {1}


def test_drain_partition_still_runs_queued_jobs():
    r = schedule(snap([node(0)], [job(1)], partitions=[PartitionView("batch", (0,), state="DRAIN")]))
    assert started(r).keys() == {1}


def test_partition_node_limit_more_nodes_than_partition():
    r = schedule(snap([node(0), node(1)], [job(1, min_nodes=3)]))
    assert reasons(r) == {1: Reason.PARTITION_NODE_LIMIT}


def test_resources_then_priority_in_a_partition():
    nodes = [node(0, cpus=4)]
    busy = running(1, {0: (4, 0)}, started=NOW, limit=None)
    r = schedule(snap(nodes, [job(2), job(3), job(4)], [busy], backfill=False))
    assert reasons(r) == {2: Reason.RESOURCES, 3: Reason.PRIORITY, 4: Reason.PRIORITY}
    # The order of the pending decisions is the priority order.
    assert [p.job_id for p in r.pending] == [2, 3, 4]


def test_a_blocked_job_holds_back_smaller_later_jobs_without_backfill():
    nodes = [node(0, cpus=4)]
    busy = running(1, {0: (2, 0)}, started=NOW, limit=None)
    r = schedule(snap(nodes, [job(2, num_tasks=4), job(3, num_tasks=1)], [busy], backfill=False))
    assert r.starts == ()
    assert reasons(r) == {2: Reason.RESOURCES, 3: Reason.PRIORITY}


def test_other_partitions_keep_scheduling_but_not_on_a_blocked_partitions_nodes():
    nodes = [node(0, cpus=4), node(1, cpus=4), node(2, cpus=4)]
    parts = [
        PartitionView("high", (0, 1), priority_tier=2),
        PartitionView("low", (1, 2)),
        PartitionView("solo", (2,)),
    ]
    pending = [
        job(1, partition="high", min_nodes=2, num_tasks=8),
        job(2, partition="low"),
        job(3, partition="solo"),
    ]
    busy = running(9, {0: (1, 0)}, started=NOW, limit=None, partition="high")
    r = schedule(snap(nodes, pending, [busy], partitions=parts, backfill=False))
    # "high" is blocked: node 1 is kept for it, job 2 goes to node 2, job 3 still fits there.
    assert reasons(r) == {1: Reason.RESOURCES}
    assert started(r)[2].node_indices == (2,)
    assert started(r)[3].node_indices == (2,)


def test_partition_priority_tier_first_then_submit_order():
    nodes = [node(0, cpus=1)]
    parts = [PartitionView("low", (0,)), PartitionView("high", (0,), priority_tier=3)]
    pending = [job(1, partition="low"), job(2, partition="high"), job(3, partition="high")]
    r = schedule(snap(nodes, pending, partitions=parts, backfill=False))
    assert list(started(r)) == [2]
    assert reasons(r) == {3: Reason.RESOURCES, 1: Reason.RESOURCES}
    prios = {p.job_id: p.priority for p in r.pending} | {s.job_id: s.priority for s in r.starts}
    # The tier orders the pass but is not in the number: priority/basic counts down by
    # submission, in the 32 bits Slurm's tools print.
    assert TOP_PRIORITY > prios[1] > prios[2] > prios[3] > 0


def test_job_priority():
    p1 = PartitionView("a", (), priority_tier=1)
    p2 = PartitionView("b", (), priority_tier=2)
    assert job_priority(job(5), p1, NOW) > job_priority(job(6), p1, NOW) > 0
    # slurmctld's first job gets TOP_PRIORITY - 1 (4294901759), the next one less: 32 bits,
    # whatever the tier (the pass sorts by PriorityTier apart from the number).
    assert job_priority(job(1), p1, NOW) == job_priority(job(1), p2, NOW) == 4294901759
    assert job_priority(job(10**6), p2, NOW) == 4294901759 - 999_999
    assert job_priority(job(TOP_PRIORITY + 5), p1, NOW) == 1
    assert job_priority(job(5, priority=42), p1, NOW) == 42


def test_explicit_priority_orders_within_a_tier():
    r = schedule(snap([node(0, cpus=1)], [job(1, priority=10), job(2, priority=20)], backfill=False))
    assert list(started(r)) == [2]


def test_max_starts_per_pass():
    # sched_max_job_start: the main loop stops starting; the rest wait with Priority.
    r = schedule(snap([node(0)], [job(i) for i in range(1, 5)], max_starts_per_pass=2, backfill=False))
    assert list(started(r)) == [1, 2]
    assert reasons(r) == {3: Reason.PRIORITY, 4: Reason.PRIORITY}


def test_backfill_starts_what_the_main_loop_did_not_reach_within_bf_max_job_start():
    pending = [job(i) for i in range(1, 6)]
    r = schedule(snap([node(0)], pending, max_starts_per_pass=2, bf_max_job_start=2))
    assert list(started(r)) == [1, 2, 3, 4]
    assert [s.job_id for s in r.starts if s.backfill] == [3, 4]
    assert reasons(r) == {5: Reason.PRIORITY}
    assert list(started(schedule(snap([node(0)], pending, max_starts_per_pass=2)))) == [1, 2, 3, 4, 5]


# --------------------------------------------------------------------------- time limits


def test_resolve_time_limit():
    p = PartitionView("p", (), max_time=120, default_time=30)
    assert resolve_time_limit(job(time_limit=None), p) == 30
    assert resolve_time_limit(job(time_limit=None), dataclasses.replace(p, default_time=None)) == 120
    assert resolve_time_limit(job(time_limit=None), PartitionView("q", ())) is None
    assert resolve_time_limit(job(time_limit=45), p) == 45
    assert resolve_time_limit(job(time_limit=0), p) is None


def test_validate_against_partition():
    nodes = [node(0), node(1, cpus=16)]
    p = PartitionView("p", (0, 1), max_time=60, max_nodes=2)
    assert validate_against_partition(job(time_limit=30), p, nodes) is None
    assert validate_against_partition(job(time_limit=90), p, nodes) == Reason.PARTITION_TIME_LIMIT
    assert validate_against_partition(job(min_nodes=3), p, nodes) == Reason.PARTITION_NODE_LIMIT
    assert validate_against_partition(job(num_tasks=16), p, nodes) is None
    assert validate_against_partition(job(num_tasks=16, min_nodes=2, cpus_per_task=2), p, nodes) == (
        Reason.BAD_CONSTRAINTS
    )
    assert validate_against_partition(job(features="gpu"), p, nodes) == Reason.BAD_CONSTRAINTS


def test_timeouts_with_a_moved_clock():
    parts = [PartitionView("batch", (0,), default_time=5)]
    jobs = [
        running(1, {0: (1, 0)}, started=NOW, limit=10),
        running(2, {0: (1, 0)}, started=NOW, limit=None),  # partition default: 5 minutes
        running(3, {0: (1, 0)}, started=NOW, limit=0, partition="nosuch"),  # INFINITE
        running(4, {0: (1, 0)}, started=NOW, limit=1, state="SUSPENDED"),
        running(5, {0: (1, 0)}, started=NOW, limit=1, state="COMPLETING"),
    ]
    at = {
        t: schedule(snap([node(0)], running_jobs=jobs, partitions=parts, now=NOW + t)).timeouts
        for t in (0, 299, 300, 599, 600, 10**7)
    }
    assert at[0] == at[299] == ()
    assert at[300] == at[599] == (Timeout(2),)
    assert at[600] == at[10**7] == (Timeout(1), Timeout(2))


def test_time_spent_suspended_or_stopped_does_not_count_against_the_limit():
    """Slurm does not count suspended time; a STOPPED job (load thresholds) is the same."""
    parts = [PartitionView("batch", (0,))]
    jobs = [
        running(1, {0: (1, 0)}, started=NOW, limit=10, paused=300),  # paused 5 minutes, then went on
        running(2, {0: (1, 0)}, started=NOW, limit=1, state="STOPPED"),
    ]
    at = {
        t: schedule(snap([node(0)], running_jobs=jobs, partitions=parts, now=NOW + t)).timeouts
        for t in (899, 900)
    }
    assert at == {899: (), 900: (Timeout(1),)}


# --------------------------------------------------------------------------- backfill


def _two_node_cluster():
    """Node 0 busy for an hour, node 1 idle; a 2-node job waits for node 0."""
    nodes = [node(0, cpus=4), node(1, cpus=4)]
    busy = running(1, {0: (4, 0)}, started=NOW, limit=60)
    big = job(2, min_nodes=2, num_tasks=8, time_limit=120)
    return nodes, busy, big


def test_backfill_starts_a_short_job_that_does_not_delay_the_blocked_one():
    nodes, busy, big = _two_node_cluster()
    short = job(3, time_limit=30)
    r = schedule(snap(nodes, [big, short], [busy]))
    assert started(r)[3] == Start(3, (1,), (1,), (0,), 30, started(r)[3].priority, backfill=True)
    p = one(r, 2)
    assert p.reason == Reason.RESOURCES
    assert p.start_time == NOW + 60 * MIN and p.sched_nodes == (0, 1)
    assert r.stats.backfilled == 1 and r.stats.reservations == 1


def test_backfill_refuses_a_job_that_would_delay_the_blocked_one():
    nodes, busy, big = _two_node_cluster()
    long = job(3, time_limit=90)
    endless = job(4, time_limit=0, partition="batch")
    r = schedule(snap(nodes, [big, long, endless], [busy]))
    assert r.starts == ()
    assert reasons(r) == {2: Reason.RESOURCES, 3: Reason.PRIORITY, 4: Reason.PRIORITY}
    # Conservative: both are planned after job 2's window, the endless one on the node job 3
    # does not take (it could never end before a reservation there).
    assert (one(r, 3).start_time, one(r, 3).sched_nodes) == (NOW + 180 * MIN, (0,))
    assert (one(r, 4).start_time, one(r, 4).sched_nodes) == (NOW + 180 * MIN, (1,))


def test_a_job_ending_exactly_at_the_reservation_is_backfilled():
    nodes, busy, big = _two_node_cluster()
    r = schedule(snap(nodes, [big, job(3, time_limit=60)], [busy]))
    assert started(r).keys() == {3}


def test_backfill_counts_partial_releases_per_cpu():
    # Node 0: 8 CPUs, job A (4 CPUs) ends in 10 min, job B (2 CPUs) in 100 min.  A job that
    # needs 6 CPUs can start there in 10 min, so a 50-minute job on the 2 free CPUs would
    # delay it and must not be backfilled; a 5-minute one may.
    nodes = [node(0)]
    a = running(1, {0: (4, 0)}, started=NOW, limit=10)
    b = running(2, {0: (2, 0)}, started=NOW, limit=100)
    big = job(3, num_tasks=6, time_limit=60)
    r = schedule(snap(nodes, [big, job(4, num_tasks=2, time_limit=50)], [a, b]))
    assert r.starts == ()
    assert one(r, 3).start_time == NOW + 10 * MIN
    r = schedule(snap(nodes, [big, job(4, num_tasks=2, time_limit=5)], [a, b]))
    assert started(r).keys() == {4}


def test_backfill_plans_in_priority_order_and_stacks_reservations():
    nodes = [node(0, cpus=2)]
    busy = running(1, {0: (2, 0)}, started=NOW, limit=10)
    pending = [
        job(2, num_tasks=2, time_limit=20),
        job(3, num_tasks=2, time_limit=20),
        job(4, num_tasks=1, time_limit=5),
    ]
    r = schedule(snap(nodes, pending, [busy]))
    assert one(r, 2).start_time == NOW + 10 * MIN
    assert one(r, 3).start_time == NOW + 30 * MIN
    assert one(r, 4).start_time == NOW + 50 * MIN
    assert r.starts == ()


def test_backfill_uses_the_nodes_of_a_blocked_partition_when_that_delays_nothing():
    nodes = [node(0, cpus=4), node(1, cpus=4)]
    parts = [PartitionView("high", (0, 1), priority_tier=2), PartitionView("low", (1,))]
    busy = running(1, {0: (4, 0)}, started=NOW, limit=60, partition="high")
    pending = [
        job(2, partition="high", min_nodes=2, num_tasks=8, time_limit=60),
        job(3, partition="low", time_limit=30),
    ]
    r = schedule(snap(nodes, pending, [busy], partitions=parts, backfill=False))
    assert reasons(r) == {2: Reason.RESOURCES, 3: Reason.RESOURCES}
    r = schedule(snap(nodes, pending, [busy], partitions=parts))
    assert started(r)[3].backfill


def test_backfill_job_test_limit_and_switch():
    nodes, busy, big = _two_node_cluster()
    pending = [big, job(3, time_limit=30)]
    assert schedule(snap(nodes, pending, [busy], bf_max_job_test=1)).starts == ()
    assert schedule(snap(nodes, pending, [busy], backfill=False)).starts == ()
    assert len(schedule(snap(nodes, pending, [busy], bf_max_job_test=2)).starts) == 1


def test_backfill_window_bounds_planning():
    nodes = [node(0)]
    busy = running(1, {0: (8, 0)}, started=NOW, limit=3000)
    r = schedule(snap(nodes, [job(2, time_limit=10)], [busy]))
    assert one(r, 2).start_time is None  # beyond the default 1440-minute window
    r = schedule(snap(nodes, [job(2, time_limit=10)], [busy], bf_window=4000))
    assert one(r, 2).start_time == NOW + 3000 * MIN


def test_jobs_past_their_limit_or_completing_release_now_for_planning():
    nodes = [node(0)]
    over = running(1, {0: (8, 0)}, started=NOW - 3600, limit=10)
    r = schedule(snap(nodes, [job(2, time_limit=10), job(3, time_limit=1)], [over]))
    assert r.timeouts == (Timeout(1),)
    assert r.starts == ()  # the resources are still held this pass
    assert one(r, 2).start_time == NOW and one(r, 2).reason == Reason.RESOURCES
    assert one(r, 3).start_time == NOW + 10 * MIN


# --------------------------------------------------------------------------- plugins


class OnePerUser(SchedulerPlugin):
    """A limit plugin: at most one running job per user (charged as jobs start)."""

    def begin_pass(self, snapshot: Snapshot) -> None:
        self.running = {j.user for j in snapshot.running}

    def job_gate(self, job: JobView, partition: PartitionView) -> Blocked | None:
        if job.user in self.running:
            return Blocked("QOSMaxJobsPerUserLimit")
        return None

    def on_start(self, job: JobView, start: Start) -> None:
        self.running.add(job.user)


class LastNodes(SchedulerPlugin):
    """A node selector that takes the last candidates, and vetoes jobs needing 3 nodes."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, tuple[int, ...]]] = []

    def select_nodes(self, job, candidates, count, proposal):
        self.seen.append((job.job_id, tuple(candidates)))
        if count == 3:
            return Blocked(Reason.LICENSES, "layer empty")
        return tuple(candidates[-count:])


def test_gate_and_charge_plugin_sees_jobs_started_earlier_in_the_pass():
    nodes = [node(0), node(1)]
    pending = [job(1, user="a"), job(2, user="a"), job(3, user="b"), job(4, user="c")]
    busy = running(9, {1: (1, 0)}, started=NOW, limit=None, user="c")
    r = schedule(snap(nodes, pending, [busy]), [OnePerUser()])
    assert started(r).keys() == {1, 3}
    assert reasons(r) == {2: "QOSMaxJobsPerUserLimit", 4: "QOSMaxJobsPerUserLimit"}
    # Plugins are rebuilt every pass: the same plugin object gives the same answer twice.
    plugin = OnePerUser()
    assert schedule(snap(nodes, pending, [busy]), [plugin]) == schedule(
        snap(nodes, pending, [busy]), [plugin]
    )


def test_select_nodes_plugin_chooses_among_all_candidates_or_vetoes():
    nodes = [node(i) for i in range(4)]
    plugin = LastNodes()
    r = schedule(snap(nodes, [job(1, min_nodes=2), job(2, min_nodes=3)]), [plugin])
    assert started(r)[1].node_indices == (2, 3)
    assert plugin.seen[0] == (1, (0, 1, 2, 3))
    p = one(r, 2)
    assert (p.reason, p.detail) == (Reason.LICENSES, "layer empty")


def test_select_nodes_plugin_returning_a_bad_set_is_an_error():
    class Bad(SchedulerPlugin):
        def select_nodes(self, job, candidates, count, proposal):
            return (99,)

    with pytest.raises(ValueError, match="bad node set"):
        schedule(snap([node(0)], [job(1)]), [Bad()])


def test_a_plugin_resources_veto_blocks_the_partition():
    class NoRoom(SchedulerPlugin):
        def select_nodes(self, job, candidates, count, proposal):
            return Blocked(Reason.RESOURCES) if job.job_id == 1 else proposal

    r = schedule(snap([node(0)], [job(1), job(2)], backfill=False), [NoRoom()])
    assert reasons(r) == {1: Reason.RESOURCES, 2: Reason.PRIORITY}


# --------------------------------------------------------------------------- determinism


def test_same_snapshot_same_decisions_whatever_the_input_order():
    rng = random.Random(3)
    nodes = [node(i, cpus=rng.choice((4, 8)), weight=rng.randint(1, 3)) for i in range(12)]
    busy = [running(1000 + i, {i: (2, 1000)}, started=NOW - 60 * i, limit=30 + i) for i in range(6)]
    pending = [
        job(i, num_tasks=rng.randint(1, 8), min_nodes=rng.randint(1, 3), time_limit=rng.choice((5, 30, 90)))
        for i in range(1, 60)
    ]
    first = schedule(snap(nodes, pending, busy))
    again = schedule(snap(nodes, pending, busy))
    shuffled = list(pending)
    rng.shuffle(shuffled)
    other = schedule(snap(nodes, shuffled, list(reversed(busy))))
    assert first == again == other
    assert first.starts and first.stats.reservations


# --------------------------------------------------------------------------- properties


@st.composite
def clusters(draw):
    n_nodes = draw(st.integers(1, 8))
    nodes = []
    for i in range(n_nodes):
        flags = draw(st.sampled_from([NodeFlag.NONE] * 4 + [NodeFlag.DRAIN, NodeFlag.NOT_RESPONDING]))
        nodes.append(
            node(
                i,
                cpus=draw(st.integers(1, 8)),
                mem=draw(st.integers(1, 4)) * 1000,
                weight=draw(st.integers(1, 3)),
                flags=flags,
                features=frozenset(draw(st.sets(st.sampled_from("ab"), max_size=2))),
            )
        )
    indices = list(range(n_nodes))
    parts = [
        PartitionView("p0", tuple(draw(st.lists(st.sampled_from(indices), unique=True, min_size=1)))),
        PartitionView(
            "p1",
            tuple(draw(st.lists(st.sampled_from(indices), unique=True))),
            priority_tier=draw(st.integers(1, 2)),
            max_time=draw(st.sampled_from([None, 30, 120])),
        ),
    ]
    # Running jobs never over the node's capacity.
    run = []
    jid = 1000
    for nd in nodes:
        if draw(st.booleans()):
            c = draw(st.integers(1, nd.cpus))
            m = draw(st.integers(0, nd.real_memory))
            run.append(
                running(
                    jid,
                    {nd.index: (c, m)},
                    started=NOW - draw(st.integers(0, 7200)),
                    limit=draw(st.sampled_from([None, 10, 60, 240])),
                    partition="p0",
                )
            )
            jid += 1
    pending = []
    names = [nd.name for nd in nodes]
    for jid in range(1, draw(st.integers(0, 25)) + 1):
        pending.append(
            job(
                jid,
                partition=draw(st.sampled_from(["p0", "p1"])),
                min_nodes=draw(st.integers(1, 3)),
                num_tasks=draw(st.integers(1, 10)),
                cpus_per_task=draw(st.integers(1, 2)),
                mem_per_node=draw(st.sampled_from([None, 0, 500, 1500])),
                time_limit=draw(st.sampled_from([None, 0, 5, 60, 200])),
                features=draw(st.sampled_from(["", "a", "a|b", "a&b"])),
                req_nodes=frozenset(draw(st.lists(st.sampled_from(names), max_size=1))),
                exc_nodes=frozenset(draw(st.lists(st.sampled_from(names), max_size=2))),
                hold=draw(st.sampled_from([None] * 8 + ["user"])),
            )
        )
    return snap(
        nodes,
        pending,
        run,
        partitions=parts,
        backfill=draw(st.booleans()),
        default_mem_per_node=draw(st.sampled_from([0, 700])),
    )


@settings(max_examples=int(os.environ.get("FSCHED_HYPOTHESIS_EXAMPLES", "150")), deadline=None)
@given(clusters())
def test_properties(s: Snapshot):
    r = schedule(s)
    # Every pending job gets exactly one decision.
    decided = [x.job_id for x in r.starts] + [p.job_id for p in r.pending]
    assert sorted(decided) == sorted(j.job_id for j in s.pending)
    # Never over-allocate CPUs or memory on any node.
    by_index = {nd.index: nd for nd in s.nodes}
    cpus = dict.fromkeys(by_index, 0)
    mem = dict.fromkeys(by_index, 0)
    for j in s.running:
        for i, c, m in zip(j.node_indices, j.alloc_cpus, j.alloc_mem, strict=True):
            cpus[i] += c
            mem[i] += m
    jobs = {j.job_id: j for j in s.pending}
    for st_ in r.starts:
        j = jobs[st_.job_id]
        part = s.partitions[j.partition]
        assert len(st_.node_indices) == len(set(st_.node_indices)) >= j.min_nodes
        for i, c, m in zip(st_.node_indices, st_.cpus_per_node, st_.mem_per_node, strict=True):
            nd = by_index[i]
            cpus[i] += c
            mem[i] += m
            # Starts respect partition membership, node state, exclusions and features.
            assert i in part.node_indices
            assert not nd.flags & (NodeFlag.DRAIN | NodeFlag.NOT_RESPONDING)
            assert nd.name not in j.exc_nodes
            assert not j.features or any(set(alt) <= nd.features for alt in parse_constraint(j.features))
        assert {by_index[i].name for i in st_.node_indices} >= j.req_nodes
        assert sum(st_.cpus_per_node) >= j.num_tasks * j.cpus_per_task
    for i, nd in by_index.items():
        assert cpus[i] <= nd.cpus
        assert mem[i] <= nd.real_memory
    # Conservative backfill: a backfilled job ends before the planned start of every job of
    # higher priority planned on one of its nodes, and planned windows never share a node.
    plans = [p for p in r.pending if p.start_time is not None]
    for b in (x for x in r.starts if x.backfill):
        end = s.now + b.time_limit * 60 if b.time_limit is not None else float("inf")
        for p in plans:
            if p.priority > b.priority and set(p.sched_nodes) & set(b.node_indices):
                assert end <= p.start_time
    windows = []
    for p in plans:
        j = jobs[p.job_id]
        limit = resolve_time_limit(j, s.partitions[j.partition])
        windows.append(
            (p.start_time, p.start_time + limit * 60 if limit else float("inf"), set(p.sched_nodes))
        )
    for k, (a0, a1, an) in enumerate(windows):
        for b0, b1, bn in windows[k + 1 :]:
            assert not (an & bn) or a1 <= b0 or b1 <= a0
    # Deterministic.
    assert schedule(s) == r
