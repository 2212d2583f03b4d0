"""The running jobs' limit counters kept from pass to pass (limits.core.policy.RunningCharges,
#18 simulator speed), and their requests kept as a whole (ShapeMemo.same_running), against a
LimitState built afresh each pass: an oracle on random passes.

Between passes the running jobs' views are handed again as the same objects or as new
ones, their infos change, the clock moves (run-minutes limits book the time a job has
left: GrpTRESRunMins), the usage records change (GrpTRESMins kills) and the policy is
another one now and then: with run-minutes limits, with limits that kill (GrpTRESMins,
MaxTRESMinsPerJob), with neither.  A plugin with the memo and one without must count the
same, kill the same jobs, start the same accrual and make the same pass, twice in a row at
the same moment too (the kept counters must not carry the first pass's starts into the
next).  Counters kept across a clock step while some job books run-minutes, or kept while
the running requests changed, fail here; so do requests kept whole across new infos or a
clock step over a running job's BeginTime.
"""

from __future__ import annotations

import dataclasses
import random

import pytest

from cluster.core.scheduler import schedule
from limits.core.plugin import JobLimitsInfo, LimitsPlugin, ShapeMemo
from limits.core.policy import QOS, Association, AssocLimits, Enforce, PartitionLimits, Policy, QOSLimits
from limits.core.usage import UsageRecord, assoc_key, qos_key
from tests.limits.test_running_requests_memo import _counts, _infos, _plain, _running
from tests.limits.test_shape_memo import NOW, _jobs, _snapshot


def _policy(kind: str) -> Policy:
    assoc = {
        "plain": AssocLimits(grp_tres={"cpu": 40}),
        "run_mins": AssocLimits(grp_tres_run_mins={"cpu": 900}, grp_tres={"cpu": 60}),
        "kills": AssocLimits(grp_tres_mins={"cpu": 500}),
    }[kind]
    qos = QOSLimits(max_tres_mins_per_job={"cpu": 200}) if kind == "kills" else QOSLimits()
    user = AssocLimits(grp_tres_run_mins={"mem": 400_000}) if kind == "run_mins" else AssocLimits()
    return Policy(
        associations=[
            Association("phys", parent="root", limits=assoc),
            Association("other", parent="root", limits=AssocLimits(grp_jobs=3)),
            Association("phys", "alice", limits=user),
            Association("phys", "bob"),
            Association("other", "alice"),
            Association("other", "bob"),
        ],
        qos=[QOS("normal", limits=qos)],
        partitions=[PartitionLimits(name=p) for p in ("batch", "long")],
        enforce=Enforce.parse("limits"),
    )


KINDS = ["plain", "run_mins", "kills"]


def _usage(rng: random.Random) -> dict:
    return {
        key: UsageRecord(tres_seconds={"cpu": rng.choice([0.0, 10_000.0, 40_000.0])})
        for key in (assoc_key("phys"), assoc_key("other"), qos_key("normal"))
    }


@pytest.mark.parametrize("seed", range(10))
def test_kept_running_counters_equal_those_built_each_pass(seed):
    rng = random.Random(seed)
    policies = {kind: _policy(kind) for kind in KINDS}
    memo = ShapeMemo()
    jobs = _running(rng, _jobs(rng))
    infos: dict = {}
    usage = _usage(rng)
    snap = None
    chosen = policies[KINDS[seed % 3]]
    restored = reused = kills = timed = 0
    now = NOW
    for _ in range(120):
        step = rng.random()
        if step < 0.1:
            jobs = _running(rng, _jobs(rng))
        elif step < 0.25:
            jobs = _running(rng, jobs)  # some views new, the others the same objects
        if rng.random() < 0.1:
            chosen = policies[KINDS[seed % 3]]
        if rng.random() < 0.15:
            usage = _usage(rng)
        if rng.random() < 0.3:
            infos = _infos(rng, jobs, infos)
        if step >= 0.25 and rng.random() < 0.5:
            snap = snap if snap is not None else _snapshot(rng, jobs, None)
        else:
            snap = _snapshot(rng, jobs, snap)
        # The clock steps (back too: over a BeginTime both ways), or another pass at the
        # same moment.
        now = rng.choice([now, now, now + 30, NOW - 20, NOW + 20])
        snap = dataclasses.replace(snap, now=now)
        for _again in range(rng.choice([1, 2])):
            before = memo.charges._kept
            whole = memo._whole
            kept = LimitsPlugin(chosen, jobs=infos, usage=usage, memo=memo)
            fresh = LimitsPlugin(chosen, jobs=infos, usage=usage)
            kept.begin_pass(snap)
            fresh.begin_pass(snap)
            assert [_plain(r) for r in kept.state.running] == [_plain(r) for r in fresh.state.running]
            assert _counts(kept) == _counts(fresh)
            assert (kept.kills, kept.accrue_start) == (fresh.kills, fresh.accrue_start)
            restored += memo.charges._kept is before and before is not None
            reused += whole is not None and kept.state.running == whole[5]
            kills += bool(fresh.kills)
            timed += any(c.run_mins for c in fresh.state.counters.values())
            # The pass charges its starts to the state: the kept counters must not see them.
            assert schedule(snap, [LimitsPlugin(chosen, jobs=infos, usage=usage, memo=memo)]) == schedule(
                snap, [LimitsPlugin(chosen, jobs=infos, usage=usage)]
            )
    assert restored and reused  # counters and the running requests as a whole were reused
    assert timed or seed % 3 != 1  # these seeds start with run-minutes limits
    assert kills or seed % 3 != 2  # and these with the killing ones


def test_kept_counters_follow_the_clock_only_with_run_minutes():
    """Counters booking run-minutes are not reused at another moment; others are."""
    rng = random.Random(5)
    jobs = [j for j in _running(rng, _jobs(rng)) if j.node_indices] or _jobs(random.Random(1))
    snap = _snapshot(rng, jobs, None)
    infos = {j.job_id: JobLimitsInfo(account="phys", qos="normal") for j in jobs}
    for kind, reused in (("plain", True), ("run_mins", False)):
        memo = ShapeMemo()
        policy = _policy(kind)
        LimitsPlugin(policy, jobs=infos, memo=memo).begin_pass(snap)
        assert memo.charges._kept[3], "something was charged"
        first = memo.charges._kept
        later = dataclasses.replace(snap, now=snap.now + 60)
        LimitsPlugin(policy, jobs=infos, memo=memo).begin_pass(later)
        assert (memo.charges._kept is first) is reused, kind
