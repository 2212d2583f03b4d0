"""The running jobs' limit counters of a pass derived from the last pass's when a few jobs
started or ended (limits.core.policy.RunningCharges, #18: charged afresh at every pass of
a busy cluster, 5% of the simulator's time at 10,000 nodes).

A count: a pass whose running jobs differ from the last by one ended and one started
charges no job afresh (``LimitState._charge``) and counts as a LimitState built afresh,
a counter no job charges any more gone; with limits that book TRES-minutes (run-minutes,
GrpTRESMins) the jobs are charged afresh.
The oracle on random passes is tests/limits/test_running_charges_memo.py.
"""

from __future__ import annotations

import dataclasses
import random

import pytest

from cluster.core.states import JobState
from limits.core.plugin import JobLimitsInfo, LimitsPlugin, ShapeMemo
from limits.core.policy import LimitState
from tests.limits.test_running_charges_memo import _policy
from tests.limits.test_running_requests_memo import _counts
from tests.limits.test_shape_memo import _jobs, _snapshot


@pytest.mark.parametrize(("kind", "afresh"), [("plain", False), ("kills", True), ("run_mins", True)])
def test_a_pass_after_one_start_and_one_end_charges_no_job_afresh(kind, afresh, monkeypatch):
    rng = random.Random(11)
    jobs = [j for j in _jobs(rng) if j.node_indices and j.state == JobState.RUNNING]
    while len(jobs) < 4:
        jobs += [j for j in _jobs(rng) if j.node_indices and j.state == JobState.RUNNING]
    jobs = [dataclasses.replace(j, job_id=k) for k, j in enumerate(jobs, 1)]
    accounts = {j.job_id: "other" if j.job_id == 1 else "phys" for j in jobs}
    infos = {j.job_id: JobLimitsInfo(account=accounts[j.job_id], qos="normal") for j in jobs}
    policy = _policy(kind)
    memo = ShapeMemo()
    snap = _snapshot(rng, jobs, None)
    LimitsPlugin(policy, jobs=infos, memo=memo).begin_pass(snap)

    charged = []
    charge = LimitState._charge

    def counted(self, job, **kw):
        charged.append(job.job_id)
        return charge(self, job, **kw)

    monkeypatch.setattr(LimitState, "_charge", counted)
    # Job 1 (the only one of account "other") ends; a new one starts.
    came = dataclasses.replace(jobs[1], job_id=99)
    infos = {**infos, 99: infos[jobs[1].job_id]}
    later = dataclasses.replace(snap, running=(*snap.running[1:], came))
    kept = LimitsPlugin(policy, jobs=infos, memo=memo)
    kept.begin_pass(later)
    assert bool(charged) is afresh, charged
    monkeypatch.undo()
    fresh = LimitsPlugin(policy, jobs=infos)
    fresh.begin_pass(later)
    assert _counts(kept) == _counts(fresh)
    assert (kept.kills, kept.accrue_start) == (fresh.kills, fresh.accrue_start)
