"""The running jobs' limit requests brought up to date from the views gone and come since
the last pass (the snapshot's RunningChange; limits.core.plugin.ShapeMemo.changed_running,
#18 simulator speed) instead of walking every running job: an oracle on random passes
against requests built afresh, and a count of the jobs looked at."""

from __future__ import annotations

import dataclasses
import random

import pytest

from cluster.core.scheduler import JobView, RunningChange
from cluster.core.states import JobState
from limits.core.plugin import JobLimitsInfo, LimitsPlugin, ShapeMemo
from tests.limits.test_running_requests_memo import _counts, _plain, _running
from tests.limits.test_shape_memo import NOW, POLICIES, _jobs, _snapshot


class _Counting(LimitsPlugin):
    """Counts the jobs whose limits info it looks up (each running job walked, once)."""

    looked = 0

    def _info(self, job: JobView) -> JobLimitsInfo:
        type(self).looked += 1
        return super()._info(job)


def _new_views(rng: random.Random, first_id: int, count: int, unheld: float = 0.1) -> list[JobView]:
    """Running views, ``unheld`` of those without their allocation (``--mem=0`` ones among
    them: a request of one pass only, none kept)."""
    views = []
    while len(views) < count:
        for v in _running(rng, _jobs(rng)):
            held = len(v.alloc_cpus) == len(v.node_indices)
            if v.node_indices and (held or rng.random() < unheld):
                views.append(v)
    return [dataclasses.replace(v, job_id=first_id + i) for i, v in enumerate(views[:count])]


def _info(rng: random.Random) -> JobLimitsInfo:
    return JobLimitsInfo(
        account=rng.choice(["phys", "phys", "other"]),
        qos="normal",
        accrue_time=rng.choice([None, NOW - 50]),
        usage_factor=rng.choice([None, 0.5, 2.0]),
    )


@pytest.mark.parametrize("seed", range(10))
def test_derived_running_requests_equal_those_of_the_pass(seed):
    rng = random.Random(seed)
    memo = ShapeMemo()
    next_id = 1
    running = tuple(_new_views(rng, next_id, rng.randint(0, 30)))
    next_id += 100
    infos = {v.job_id: _info(rng) for v in running}
    snap = dataclasses.replace(_snapshot(rng, [], None), running=running)
    chosen = POLICIES[0]
    derived = 0
    for _ in range(60):
        base = snap.running
        gone = tuple(rng.sample(base, min(len(base), rng.choice([0, 1, 1, 2, 5]))))
        came = _new_views(rng, next_id, rng.choice([0, 1, 1, 2, 4]))
        next_id += 100
        if gone and came and rng.random() < 0.3:
            came[0] = dataclasses.replace(came[0], job_id=gone[0].job_id)  # a job read again
        result = tuple(v for v in base if v not in gone) + tuple(came)
        roll = rng.random()
        if roll < 0.7:
            since = RunningChange(base, result, gone, tuple(came))
        elif roll < 0.8:
            since = RunningChange((), result, gone, tuple(came))  # from another base
        else:
            since = None
        snap = dataclasses.replace(
            _snapshot(rng, [], snap),
            running=result,
            running_since=since,
            now=NOW + rng.choice([-20, 0, 0, 20]),
        )
        infos = dict(infos) if rng.random() < 0.5 else infos
        for view in came:
            infos[view.job_id] = _info(rng)
        if result and rng.random() < 0.15:
            infos = {**infos, rng.choice(result).job_id: _info(rng)}  # a running job's written
        if rng.random() < 0.05:
            chosen = rng.choice(POLICIES)
        _Counting.looked = 0
        kept = _Counting(chosen, jobs=infos, memo=memo)
        kept.begin_pass(snap)
        fresh = LimitsPlugin(chosen, jobs=infos)
        fresh.begin_pass(snap)
        assert [_plain(r) for r in kept.state.running] == [_plain(r) for r in fresh.state.running]
        assert _counts(kept) == _counts(fresh)
        assert (kept.kills, kept.accrue_start) == (fresh.kills, fresh.accrue_start)
        walked = sum(1 for v in result if v.state != JobState.COMPLETING)
        derived += since is not None and _Counting.looked < walked
    assert derived  # some passes were derived


def test_a_pass_where_one_job_ended_and_one_started_looks_at_those_two():
    rng = random.Random(3)
    running = tuple(v for v in _new_views(rng, 1, 200, unheld=0) if v.state != JobState.COMPLETING)
    infos = {v.job_id: _info(rng) for v in running}
    snap = dataclasses.replace(_snapshot(rng, [], None), running=running)
    memo = ShapeMemo()
    _Counting(POLICIES[0], jobs=infos, memo=memo).begin_pass(snap)
    came = dataclasses.replace(_new_views(rng, 1000, 1, unheld=0)[0], state=JobState.RUNNING)
    result = (*running[1:], came)
    infos = {**infos, came.job_id: _info(rng)}  # a new mapping, the others the same objects
    since = RunningChange(running, result, running[:1], (came,))
    _Counting.looked = 0
    second = _Counting(POLICIES[0], jobs=infos, memo=memo)
    second.begin_pass(dataclasses.replace(snap, running=result, running_since=since))
    assert _Counting.looked <= 2  # the job come (its request and what is kept of it)
    fresh = LimitsPlugin(POLICIES[0], jobs=infos)
    fresh.begin_pass(dataclasses.replace(snap, running=result))
    assert [_plain(r) for r in second.state.running] == [_plain(r) for r in fresh.state.running]
    assert _counts(second) == _counts(fresh)
