"""The running jobs' limit requests kept from pass to pass with their shapes
(limits.core.plugin.ShapeMemo.running_requests, #18 simulator speed) against requests
built in each pass: an oracle on random passes.

The jobs' views are handed again as the same objects between passes (as the kept
snapshot does) or as new ones; their infos (accrue time, booked UsageFactor, account)
change, a running job's hold and BeginTime move it in and out of ``eligible`` as the
moment passes, some ask for a whole node's memory without an allocation in the view, and
the policy, partitions and DefMemPerNode change now and then.  A plugin with the memo and
one without must hand the limits the same running requests, count the same and make the
same pass.  A memo that reused a request across one of those changes fails.
"""

from __future__ import annotations

import dataclasses
import random

import pytest

from cluster.core.scheduler import JobView, schedule
from cluster.core.states import JobState
from limits.core.plugin import JobLimitsInfo, LimitsPlugin, ShapeMemo
from tests.limits.test_shape_memo import NODES, NOW, POLICIES, _jobs, _snapshot


def _running(rng: random.Random, jobs: list[JobView]) -> list[JobView]:
    """Some running jobs held or with a BeginTime around now, a few in COMPLETING or
    without their allocation in the view (``--mem=0``: a shape of the pass only)."""
    out = []
    for view in jobs:
        job = view
        if view.node_indices and rng.random() < 0.3:
            job = dataclasses.replace(
                view,
                hold=rng.choice([None, "user"]),
                begin_time=rng.choice([None, NOW - 10, NOW + 10]),
                state=rng.choice([JobState.RUNNING, JobState.RUNNING, JobState.COMPLETING]),
            )
        elif not view.node_indices and rng.random() < 0.15:
            job = dataclasses.replace(
                view, state=JobState.RUNNING, start_time=NOW - 5, node_indices=(rng.randrange(NODES),)
            )
        out.append(job)
    return out


def _infos(rng: random.Random, jobs: list[JobView], was: dict) -> dict[int, JobLimitsInfo]:
    out = {}
    for job in jobs:
        info = was.get(job.job_id)
        if info is None or rng.random() < 0.2:
            info = JobLimitsInfo(
                account=rng.choice(["phys", "phys", "other"]),
                qos="normal",
                accrue_time=rng.choice([None, NOW - 50]),
                usage_factor=rng.choice([None, 0.5, 2.0]),
            )
        elif rng.random() < 0.2:
            info = dataclasses.replace(info)  # equal, another object
        out[job.job_id] = info
    return out


def _plain(request) -> tuple:
    """A request by value (shapes compare by identity: shared by the jobs of one request)."""
    s = request.shape
    fields = dataclasses.asdict(dataclasses.replace(request, shape=None))
    return tuple(fields.items()), (dict(s.tres), dict(s.per_node), s.nodes, s.time_limit)


def _counts(plugin: LimitsPlugin) -> dict:
    counters = plugin.state.counters
    return {key: (c.running, c.submitted, c.accruing, c.tres, c.run_mins) for key, c in counters.items()}


@pytest.mark.parametrize("seed", range(8))
def test_kept_running_requests_equal_those_of_the_pass(seed):
    rng = random.Random(seed)
    memo = ShapeMemo()
    jobs = _running(rng, _jobs(rng))
    infos: dict = {}
    snap = None
    chosen = POLICIES[0]
    hits = 0
    for _ in range(80):
        if rng.random() < 0.15:
            jobs = _running(rng, _jobs(rng))
        elif rng.random() < 0.3:
            jobs = _running(rng, jobs)  # some views new, the others the same objects
        snap = _snapshot(rng, jobs, snap)
        snap = dataclasses.replace(snap, now=NOW + rng.choice([-20, 0, 20]))
        if rng.random() < 0.1:
            chosen = rng.choice(POLICIES)
        infos = _infos(rng, jobs, infos)
        before = dict(memo.running_requests(memo._kept[1])) if memo._kept else {}
        kept = LimitsPlugin(chosen, jobs=infos, memo=memo)
        fresh = LimitsPlugin(chosen, jobs=infos)
        kept.begin_pass(snap)
        fresh.begin_pass(snap)
        assert [_plain(r) for r in kept.state.running] == [_plain(r) for r in fresh.state.running]
        assert _counts(kept) == _counts(fresh)
        assert (kept.kills, kept.accrue_start) == (fresh.kills, fresh.accrue_start)
        hits += sum(1 for r in kept.state.running if any(r is b[2] for b in before.values()))
        assert schedule(snap, [LimitsPlugin(chosen, jobs=infos, memo=memo)]) == schedule(
            snap, [LimitsPlugin(chosen, jobs=infos)]
        )
    assert hits  # requests were reused
