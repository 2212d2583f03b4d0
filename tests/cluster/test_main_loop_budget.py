"""SchedulerParameters=max_sched_time: the main loop stops trying jobs once its budget is
spent, by the clock the pass is given; the jobs it did not try wait (reason Priority) and
the next pass tries them.  A clock that does not move (the simulator's virtual one while a
pass runs) never spends it: the pass decides what it decided without a budget.  No
database, and no wall time: the clocks are counters.
"""

from __future__ import annotations

import dataclasses
import random

import pytest

from cluster.core.sched_params import SchedParams, main_loop_budget, parse_scheduler_parameters
from cluster.core.scheduler import JobView, NodeView, PartitionView, SchedulerConfig, Snapshot, schedule
from cluster.core.states import NodeBase, Reason

NOW = 1_000_000.0


class Ticking:
    """A clock that moves one second each time it is read."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        self.t += 1.0
        return self.t


def _snap(nodes, pending, running=(), **config) -> Snapshot:
    return Snapshot(
        now=NOW,
        nodes=tuple(nodes),
        partitions={"batch": PartitionView("batch", tuple(n.index for n in nodes))},
        pending=tuple(pending),
        running=tuple(running),
        config=SchedulerConfig(**config),
    )


def _node(i: int, cpus: int = 4) -> NodeView:
    return NodeView(
        index=i, name=f"n{i:02d}", cpus=cpus, real_memory=16_000, weight=1, base=NodeBase.IDLE, flags=0
    )


def _job(job_id: int, **kw) -> JobView:
    return JobView(job_id=job_id, partition="batch", user="alice", submit_time=NOW - 1000 + job_id, **kw)


def _as_running(start, job: JobView) -> JobView:
    return dataclasses.replace(
        job,
        state="RUNNING",
        start_time=NOW,
        time_limit=start.time_limit,
        node_indices=start.node_indices,
        alloc_cpus=start.cpus_per_node,
        alloc_mem=start.mem_per_node,
    )


def test_a_spent_budget_leaves_the_rest_to_the_next_pass():
    nodes = [_node(i) for i in range(4)]
    queue = [_job(i) for i in range(1, 11)]
    # Read once to start the budget, then once before each job: the third read spends it.
    first = schedule(_snap(nodes, queue, backfill=False, max_sched_time=3), clock=Ticking())
    assert [s.job_id for s in first.starts] == [1, 2]
    assert {p.job_id: p.reason for p in first.pending} == {i: Reason.PRIORITY for i in range(3, 11)}
    assert first.stats.untried == 8
    # The next pass, the first two running, goes on where it stopped.
    running = [_as_running(s, queue[s.job_id - 1]) for s in first.starts]
    second = schedule(_snap(nodes, queue[2:], running, backfill=False, max_sched_time=3), clock=Ticking())
    assert [s.job_id for s in second.starts] == [3, 4]
    # Pass after pass, every job starts where one pass without a budget puts it.
    whole = schedule(_snap(nodes, queue, backfill=False))
    placed = {s.job_id: s for s in (*first.starts, *second.starts)}
    running += [_as_running(s, queue[s.job_id - 1]) for s in second.starts]
    left = queue[4:]
    while left:
        more = schedule(_snap(nodes, left, running, backfill=False, max_sched_time=3), clock=Ticking())
        assert more.starts
        placed.update({s.job_id: s for s in more.starts})
        running += [_as_running(s, queue[s.job_id - 1]) for s in more.starts]
        left = [j for j in left if j.job_id not in placed]
    assert placed == {s.job_id: s for s in whole.starts}


def test_backfill_may_still_start_the_jobs_the_main_loop_did_not_try():
    nodes = [_node(i) for i in range(4)]
    queue = [_job(i, time_limit=10) for i in range(1, 6)]
    result = schedule(_snap(nodes, queue, backfill=True, max_sched_time=2), clock=Ticking())
    assert result.stats.untried == 4
    assert {s.job_id for s in result.starts} == {1, 2, 3, 4, 5}
    assert {s.job_id for s in result.starts if s.backfill} == {2, 3, 4, 5}


def _random_case(rng: random.Random) -> Snapshot:
    nodes = [_node(i, cpus=rng.choice([2, 4, 16])) for i in range(rng.randrange(1, 12))]
    queue = [
        _job(
            i,
            num_tasks=rng.choice([1, 1, 2, 4, 8]),
            min_nodes=rng.choice([1, 1, 2]),
            max_nodes=rng.choice([1, 2, 3]),
            time_limit=rng.choice([5, 30, 120]),
            nice=rng.choice([0, 0, 100]),
        )
        for i in range(1, rng.randrange(1, 60))
    ]
    return _snap(nodes, queue, backfill=rng.random() < 0.5, max_sched_time=rng.choice([1, 2, 30]))


@pytest.mark.parametrize("seed", range(10))
def test_a_budget_that_never_runs_out_changes_no_decision(seed):
    rng = random.Random(seed)
    for _ in range(20):
        budgeted = _random_case(rng)
        plain = dataclasses.replace(
            budgeted, config=dataclasses.replace(budgeted.config, max_sched_time=None)
        )
        still = schedule(budgeted, clock=lambda: 5.0)
        assert still == schedule(plain)
        assert still == schedule(budgeted)  # no clock: no budget
        assert still.stats.untried == 0


def test_max_sched_time_and_its_default():
    assert parse_scheduler_parameters("max_sched_time=7").max_sched_time == 7
    with pytest.raises(ValueError, match="max_sched_time=0"):
        parse_scheduler_parameters("max_sched_time=0")
    # Unset: half of MessageTimeout, at least 1 and at most 2 seconds.
    assert [main_loop_budget(SchedParams(), t) for t in (1, 2, 3, 4, 10, 60)] == [1, 1, 1, 2, 2, 2]
    assert main_loop_budget(SchedParams(max_sched_time=9), 10) == 9
