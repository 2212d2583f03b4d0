"""Enforcement (limits.core.policy.LimitState, check_submit): reason codes, safe mode, kills,
accrue limits, DenyOnLimit."""

from __future__ import annotations

import itertools

import pytest

from limits.core import reasons as R
from limits.core.policy import (
    QOS,
    Association,
    AssocLimits,
    Enforce,
    JobRequest,
    LimitState,
    PartitionLimits,
    Policy,
    QOSLimits,
    User,
    check_submit,
    make_shape,
)
from limits.core.usage import UsageRecord, assoc_key, qos_key
from slurmwords.tres import parse_billing_weights

NOW = 1_000_000.0
LIMITS = Enforce.parse("limits")
SAFE = Enforce.parse("safe")
_ids = itertools.count(1)


def policy(*, user=None, acct=None, qos=(), enforce=LIMITS, partitions=(), **kw) -> Policy:
    return Policy(
        associations=[
            Association("phys", parent="root", limits=acct or AssocLimits()),
            Association("phys", "alice", limits=user or AssocLimits()),
            Association("phys", "bob"),
        ],
        qos=[QOS("normal"), *qos],
        partitions=partitions,
        users=[User("alice", "phys", wckeys=frozenset({"w1"})), User("bob", "phys")],
        enforce=enforce,
        **kw,
    )


def job(
    p, user="alice", *, qos="", cpus=1, mem=1000, nodes=1, time=60, gres=None, part="", **kw
) -> JobRequest:
    shape = make_shape(p, part, cpus=cpus, mem=mem, nodes=nodes, time_limit=time, gres_per_node=gres)
    return JobRequest(next(_ids), user, "phys", part, qos, shape, **kw)


def running(p, user="alice", started=NOW - 600, **kw) -> JobRequest:
    return job(p, user, running=True, start_time=started, **kw)


def state(p, run=(), pend=(), usage=None) -> LimitState:
    return LimitState(p, running=run, pending=pend, usage=usage, now=NOW)


def reason(st, j):
    block = st.check_run(j)
    return block.reason if block else None


# --------------------------------------------------------------------------- job counts


def test_assoc_max_jobs_counts_and_charges_starts():
    p = policy(user=AssocLimits(max_jobs=2))
    st = state(p, run=[running(p)])
    first, second = job(p), job(p)
    assert st.check_run(first) is None
    st.charge_start(first)
    block = st.check_run(second)
    assert block.reason == "AssocMaxJobsLimit"
    assert (block.level, block.value, block.usage) == ("User", 2, 2)
    assert "MaxJobs=2 (association phys/alice)" in block.detail
    assert st.check_run(job(p, "bob")) is None  # bob's association is not limited


def test_qos_max_jobs_per_user_and_per_account():
    q = QOS("q", limits=QOSLimits(max_jobs_per_user=1, max_jobs_per_account=2))
    p = policy(qos=[q])
    st = state(p, run=[running(p, qos="q")])
    assert reason(st, job(p, qos="q")) == "QOSMaxJobsPerUserLimit"
    assert reason(st, job(p, "bob", qos="q")) is None
    st.charge_start(job(p, "bob", qos="q"))
    assert reason(st, job(p, "bob", qos="q")) == "QOSMaxJobsPerUserLimit"
    p2 = policy(qos=[QOS("q", limits=QOSLimits(max_jobs_per_account=2))])
    st = state(p2, run=[running(p2, qos="q"), running(p2, "bob", qos="q")])
    assert reason(st, job(p2, qos="q")) == "MaxJobsPerAccount"
    assert reason(st, job(p2, qos="normal")) is None


def test_grp_jobs_counts_the_whole_account():
    p = policy(acct=AssocLimits(grp_jobs=2))
    st = state(p, run=[running(p), running(p, "bob")])
    block = st.check_run(job(p))
    assert (block.reason, block.level) == ("AssocGrpJobsLimit", "Account")
    q = QOS("q", limits=QOSLimits(grp_jobs=1))
    p = policy(qos=[q])
    st = state(p, run=[running(p, "bob", qos="q")])
    assert reason(st, job(p, qos="q")) == "QOSGrpJobsLimit"


# --------------------------------------------------------------------------- TRES in use


@pytest.mark.parametrize(
    ("limits", "req", "code"),
    [
        ({"cpu": 8}, {"cpus": 6}, "AssocGrpCpuLimit"),
        ({"mem": 4096}, {"mem": 3000}, "AssocGrpMemLimit"),
        ({"node": 2}, {"nodes": 2}, "AssocGrpNodeLimit"),
        ({"gres/gpu": 2}, {"gres": {"gres/gpu": 2}}, "AssocGrpGRES"),
        ({"billing": 8}, {"cpus": 6}, "AssocGrpBilling"),
    ],
)
def test_assoc_grp_tres(limits, req, code):
    p = policy(acct=AssocLimits(grp_tres=limits))
    st = state(p, run=[running(p, "bob", **req)])
    assert reason(st, job(p, **req)) == code


def test_qos_grp_and_per_user_and_per_account_tres():
    q = QOS("q", limits=QOSLimits(grp_tres={"cpu": 10}))
    p = policy(qos=[q])
    st = state(p, run=[running(p, "bob", qos="q", cpus=8)])
    assert reason(st, job(p, qos="q", cpus=2)) is None
    assert reason(st, job(p, qos="q", cpus=3)) == "QOSGrpCpuLimit"
    q = QOS("q", limits=QOSLimits(max_tres_per_user={"gres/gpu": 2}, max_tres_per_account={"cpu": 4}))
    p = policy(qos=[q])
    st = state(p, run=[running(p, qos="q", gres={"gres/gpu": 2})])
    assert reason(st, job(p, qos="q", gres={"gres/gpu": 1})) == "QOSMaxGRESPerUser"
    assert reason(st, job(p, qos="q", cpus=4)) == "MaxCpuPerAccount"
    assert reason(st, job(p, qos="q", cpus=3)) is None


def test_typed_gres_limit_does_not_catch_generic_requests():
    """A limit on gres/gpu:tesla does not hold --gres=gpu:2 (Slurm's resource_limits.html,
    "Specific limits over GRES")."""
    q = QOS("q", limits=QOSLimits(max_tres_per_user={"gres/gpu:tesla": 1}))
    p = policy(qos=[q])
    st = state(p)
    assert reason(st, job(p, qos="q", gres={"gres/gpu": 2})) is None
    assert reason(st, job(p, qos="q", gres={"gres/gpu": 2, "gres/gpu:tesla": 2})) == "QOSMaxGRESPerUser"


# --------------------------------------------------------------------------- per-job limits


@pytest.mark.parametrize(
    ("qlimits", "req", "code"),
    [
        (QOSLimits(max_tres_per_job={"cpu": 4}), {"cpus": 5}, "QOSMaxCpuPerJobLimit"),
        (QOSLimits(max_tres_per_job={"node": 1}), {"nodes": 2}, "QOSMaxNodePerJobLimit"),
        (QOSLimits(max_tres_per_job={"mem": 100}), {"mem": 200}, "QOSMaxMemoryPerJob"),
        (QOSLimits(max_tres_per_node={"cpu": 2}), {"cpus": 6, "nodes": 2}, "QOSMaxCpuPerNode"),
        (QOSLimits(max_tres_per_node={"gres/gpu": 1}), {"gres": {"gres/gpu": 2}}, "QOSMaxGRESPerNode"),
        (QOSLimits(min_tres_per_job={"cpu": 4}), {"cpus": 2}, "QOSMinCpuNotSatisfied"),
        (QOSLimits(min_tres_per_job={"node": 2}), {"nodes": 1}, "QOSMinNode"),
        (QOSLimits(max_wall_duration_per_job=30), {"time": 60}, "QOSMaxWallDurationPerJobLimit"),
        (QOSLimits(max_wall_duration_per_job=30), {"time": None}, "QOSMaxWallDurationPerJobLimit"),
    ],
)
def test_qos_per_job_limits_keep_the_job_pending(qlimits, req, code):
    p = policy(qos=[QOS("q", limits=qlimits)])
    assert reason(state(p), job(p, qos="q", **req)) == code


@pytest.mark.parametrize(
    ("alimits", "req", "code"),
    [
        (AssocLimits(max_tres_per_job={"cpu": 4}), {"cpus": 5}, "AssocMaxCpuPerJobLimit"),
        (AssocLimits(max_tres_per_job={"node": 1}), {"nodes": 3}, "AssocMaxNodePerJobLimit"),
        (AssocLimits(max_tres_per_node={"mem": 100}), {"mem": 300, "nodes": 2}, "AssocMaxMemPerNode"),
        (AssocLimits(max_wall_duration_per_job=30), {"time": 31}, "AssocMaxWallDurationPerJobLimit"),
    ],
)
def test_assoc_per_job_limits(alimits, req, code):
    p = policy(user=alimits)
    assert reason(state(p), job(p, **req)) == code


def test_partition_bound_reported_as_partition_reason():
    p = policy(
        qos=[QOS("q", limits=QOSLimits(max_wall_duration_per_job=120))],
        partitions=[PartitionLimits("batch", max_time=60)],
    )
    assert reason(state(p), job(p, qos="q", time=90, part="batch")) == "PartitionTimeLimit"
    p = policy(
        qos=[
            QOS("q", flags=frozenset({"PartitionTimeLimit"}), limits=QOSLimits(max_wall_duration_per_job=120))
        ],
        partitions=[PartitionLimits("batch", max_time=60)],
    )
    assert reason(state(p), job(p, qos="q", time=90, part="batch")) is None


def test_limit_factor_lets_association_grow_under_the_qos():
    p = policy(acct=AssocLimits(grp_tres={"cpu": 30}), qos=[QOS("x2", limit_factor=2.0)])
    st = state(p, run=[running(p, "bob", cpus=30, qos="x2")])
    assert reason(st, job(p, qos="x2", cpus=30)) is None
    assert reason(st, job(p, qos="x2", cpus=31)) == "AssocGrpCpuLimit"


# --------------------------------------------------------------------------- TRES-minutes


def test_grp_tres_run_mins_books_remaining_time_with_start_factor():
    q = QOS("q", usage_factor=2.0, limits=QOSLimits(grp_tres_run_mins={"cpu": 1000}))
    p = policy(qos=[q])
    # 4 CPUs, 60 min limit, started 10 min ago, booked at factor 1.5: 4 * 50 * 1.5 = 300
    r = running(p, "bob", qos="q", cpus=4, time=60, usage_factor=1.5)
    st = state(p, run=[r])
    assert st.counters[qos_key("q")].run_mins["cpu"] == pytest.approx(300)
    assert reason(st, job(p, qos="q", cpus=10, time=70)) is None  # 700 + 300 = 1000
    block = st.check_run(job(p, qos="q", cpus=10, time=71))
    assert block.reason == "QOSGrpCPURunMinutesLimit"
    assert reason(st, job(p, qos="q", cpus=1, time=None)) == "QOSGrpCPURunMinutesLimit"


def _spent(mins: float) -> UsageRecord:
    return UsageRecord(tres_seconds={"cpu": mins * 60})


def test_grp_tres_mins_without_safe_blocks_when_spent_and_kills_running():
    p = policy(acct=AssocLimits(grp_tres_mins={"cpu": 1000}))
    r = running(p, "bob", cpus=2)
    usage = {assoc_key("phys"): _spent(999)}
    st = state(p, run=[r], usage=usage)
    assert reason(st, job(p, cpus=100, time=1000)) is None  # not reached yet: it may start
    assert st.kills() == ()
    usage = {assoc_key("phys"): _spent(1000)}
    st = state(p, run=[r], usage=usage)
    block = st.check_run(job(p))
    assert (block.reason, block.level, block.usage) == ("AssocGrpCPUMinutesLimit", "Account", 1000)
    (kill,) = st.kills()
    assert (kill.job_id, kill.reason) == (r.job_id, "AssocGrpCPUMinutesLimit")


def test_grp_tres_mins_safe_needs_room_to_finish_and_never_kills():
    p = policy(acct=AssocLimits(grp_tres_mins={"cpu": 1000}), enforce=SAFE)
    r = running(p, "bob", cpus=2, time=60, started=NOW - 600)  # 2 * 50 = 100 booked
    usage = {assoc_key("phys"): _spent(800)}
    st = state(p, run=[r], usage=usage)
    assert reason(st, job(p, cpus=1, time=100)) is None  # 800 + 100 + 100 = 1000
    block = st.check_run(job(p, cpus=1, time=101))
    assert block.reason == "AssocGrpCPUMinutesLimit" and "(safe)" in block.detail
    st = state(p, run=[r], usage={assoc_key("phys"): _spent(5000)})
    assert st.kills() == ()


def test_usage_factor_safe_applies_factor_to_the_safety_check():
    limits = QOSLimits(grp_tres_mins={"cpu": 100})
    plain = QOS("plain", usage_factor=2.0, limits=limits)
    strict = QOS("strict", usage_factor=2.0, flags=frozenset({"UsageFactorSafe"}), limits=limits)
    p = policy(qos=[plain, strict], enforce=SAFE)
    st = state(p)
    assert reason(st, job(p, qos="plain", cpus=1, time=80)) is None
    assert reason(st, job(p, qos="strict", cpus=1, time=80)) == "QOSGrpCPUMinutesLimit"


def test_grp_tres_mins_needs_multifactor():
    p = policy(acct=AssocLimits(grp_tres_mins={"cpu": 10}), multifactor=False)
    st = state(p, run=[running(p)], usage={assoc_key("phys"): _spent(50)})
    assert reason(st, job(p)) is None
    assert st.kills() == ()


def test_max_tres_mins_per_job_pends_with_safe_and_kills_without():
    q = QOS("q", limits=QOSLimits(max_tres_mins_per_job={"cpu": 100}))
    p_safe = policy(qos=[q], enforce=SAFE)
    assert reason(state(p_safe), job(p_safe, qos="q", cpus=2, time=51)) == "QOSMaxCpuMinutesPerJobLimit"
    assert reason(state(p_safe), job(p_safe, qos="q", cpus=2, time=50)) is None
    p = policy(qos=[q])
    assert reason(state(p), job(p, qos="q", cpus=2, time=51)) is None
    long = running(p, qos="q", cpus=2, time=120, started=NOW - 50 * 60)
    short = running(p, qos="q", cpus=2, time=120, started=NOW - 49 * 60)
    kills = state(p, run=[long, short]).kills()
    assert [(k.job_id, k.reason) for k in kills] == [(long.job_id, "QOSMaxCpuMinutesPerJobLimit")]


def test_grp_wall():
    p = policy(acct=AssocLimits(grp_wall=600))
    st = state(p, usage={assoc_key("phys"): UsageRecord(wall_seconds=600 * 60)})
    block = st.check_run(job(p))
    assert (block.reason, block.level) == ("AssocGrpWallLimit", "Account")
    q = QOS("q", limits=QOSLimits(grp_wall=10))
    p = policy(qos=[q])
    st = state(p, usage={qos_key("q"): UsageRecord(wall_seconds=9 * 60)})
    assert reason(st, job(p, qos="q")) is None


# --------------------------------------------------------------------------- enforcement switches


def test_nothing_enforced_without_accounting_storage_enforce():
    p = policy(user=AssocLimits(max_jobs=0), enforce=Enforce())
    st = state(p)
    assert st.check_run(job(p)) is None
    assert st.check_run(job(p, "mallory")) is None
    assert check_submit(p, job(p, "mallory"), now=NOW) is None


def test_associations_enforced_invalid_account():
    p = policy(enforce=Enforce.parse("associations"))
    assert reason(state(p), job(p, "mallory")) == "InvalidAccount"
    assert check_submit(p, job(p, "mallory"), now=NOW).startswith("Invalid account")
    # associations alone do not enforce limits
    p = policy(user=AssocLimits(max_jobs=0), enforce=Enforce.parse("associations"))
    assert reason(state(p), job(p)) is None


def test_qos_enforced():
    p = Policy(
        associations=[Association("phys", qos=frozenset({"normal"})), Association("phys", "alice")],
        qos=[QOS("normal"), QOS("vip")],
        enforce=Enforce.parse("qos"),
    )
    msg = check_submit(p, job(p, qos="vip"), now=NOW)
    assert msg.startswith("Invalid qos specification")
    assert reason(state(p), job(p, qos="vip")) == "QOSNotAllowed"
    assert reason(state(p), job(p, qos="gold")) == "InvalidQOS"
    assert check_submit(p, job(p, qos="normal"), now=NOW) is None


def test_wckeys_enforced():
    p = policy(enforce=Enforce.parse("wckeys"))
    assert check_submit(p, job(p, wckey="w1"), now=NOW) is None
    assert "Invalid wckey" in check_submit(p, job(p, wckey="w9"), now=NOW)


def test_partition_allow_lists():
    p = policy(partitions=[PartitionLimits("priv", allow_accounts=frozenset({"other"}))])
    assert reason(state(p), job(p, part="priv")) == "AccountNotAllowed"


# --------------------------------------------------------------------------- submission


def test_submit_limits_reject_at_submission():
    p = policy(user=AssocLimits(max_submit_jobs=2))
    active = [job(p), running(p)]
    msg = check_submit(p, job(p), active=active, now=NOW)
    assert msg.startswith("Job violates accounting/QOS policy")
    assert "MaxSubmitJobs=2 (association phys/alice) reached with 2 jobs" in msg
    assert check_submit(p, job(p), active=active[:1], now=NOW) is None


@pytest.mark.parametrize(
    ("kw", "text"),
    [
        (
            {"acct": AssocLimits(grp_submit_jobs=1), "qos": [QOS("normal2")]},
            "GrpSubmitJobs=1 (account association phys)",
        ),
        ({"qos": [QOS("normal2", limits=QOSLimits(max_submit_jobs_per_user=1))]}, "MaxSubmitJobsPerUser=1"),
        (
            {"qos": [QOS("normal2", limits=QOSLimits(max_submit_jobs_per_account=1))]},
            "MaxSubmitJobsPerAccount=1",
        ),
        ({"qos": [QOS("normal2", limits=QOSLimits(grp_submit_jobs=1))]}, "GrpSubmitJobs=1 (QOS normal2)"),
    ],
)
def test_every_submit_limit(kw, text):
    p = policy(**kw)
    active = [job(p, qos="normal2")]
    msg = check_submit(p, job(p, qos="normal2"), active=active, now=NOW)
    assert msg is not None and text in msg


def test_assoc_max_wall_denies_at_submit_qos_max_wall_pends():
    p = policy(user=AssocLimits(max_wall_duration_per_job=60))
    assert "exceeds MaxWallDurationPerJob=60" in check_submit(p, job(p, time=61), now=NOW)
    p = policy(qos=[QOS("q", limits=QOSLimits(max_wall_duration_per_job=60))])
    assert check_submit(p, job(p, qos="q", time=61), now=NOW) is None


def test_deny_on_limit_rejects_what_would_pend_and_treats_grp_as_max():
    deny = frozenset({"DenyOnLimit"})
    q = QOS("d", flags=deny, limits=QOSLimits(max_tres_per_job={"cpu": 4}, grp_tres={"mem": 1000}))
    p = policy(qos=[q])
    assert "over MaxTRESPerJob=cpu=4" in check_submit(p, job(p, qos="d", cpus=5), now=NOW)
    assert "over GrpTRES=mem=1000M" in check_submit(p, job(p, qos="d", mem=2000), now=NOW)
    assert check_submit(p, job(p, qos="d", cpus=4, mem=1000), now=NOW) is None
    # without the flag the same job is accepted and pends
    p = policy(qos=[QOS("d", limits=q.limits)])
    assert check_submit(p, job(p, qos="d", cpus=5), now=NOW) is None


# --------------------------------------------------------------------------- accrue


def test_max_jobs_accrue_lets_the_oldest_accrue_only():
    p = policy(user=AssocLimits(max_jobs_accrue=2))
    old = job(p, submit_time=NOW - 300, accrue_time=NOW - 200)
    a = job(p, submit_time=NOW - 250)
    b = job(p, submit_time=NOW - 100)
    c = job(p, submit_time=NOW - 50)
    held = job(p, submit_time=NOW - 400, eligible=False)
    st = state(p, pend=[old, a, b, c, held])
    assert st.accrue_plan() == {a.job_id}
    # accrue limits never hold a job from running
    assert st.check_run(c) is None


def test_grp_and_qos_accrue_limits():
    p = policy(acct=AssocLimits(grp_jobs_accrue=1))
    a, b = job(p, "bob", submit_time=1), job(p, submit_time=2)
    assert state(p, pend=[a, b]).accrue_plan() == {a.job_id}
    q = QOS("q", limits=QOSLimits(max_jobs_accrue_per_user=1, max_jobs_accrue_per_account=2))
    p = policy(qos=[q])
    jobs = [job(p, u, qos="q", submit_time=i) for i, u in enumerate(["alice", "alice", "bob", "bob"])]
    assert state(p, pend=jobs).accrue_plan() == {jobs[0].job_id, jobs[2].job_id}


# --------------------------------------------------------------------------- explainer


def test_explain_lists_every_limit_holding_a_job():
    q = QOS("q", limits=QOSLimits(max_tres_per_job={"cpu": 2}, max_jobs_per_user=0))
    p = policy(qos=[q], acct=AssocLimits(grp_tres={"cpu": 1}))
    blocks = state(p).explain(job(p, qos="q", cpus=4))
    assert [b.reason for b in blocks] == [
        "QOSMaxCpuPerJobLimit",
        "QOSMaxJobsPerUserLimit",
        "AssocGrpCpuLimit",
    ]
    assert all(b.detail for b in blocks)


def test_billing_uses_partition_weights():
    w = parse_billing_weights("CPU=1.0,GRES/gpu=10")
    p = policy(
        acct=AssocLimits(grp_tres={"billing": 25}), partitions=[PartitionLimits("gpu", billing_weights=w)]
    )
    j = job(p, part="gpu", cpus=4, gres={"gres/gpu": 2})
    assert j.shape.tres["billing"] == 24
    st = state(p, run=[running(p, "bob", part="gpu", cpus=2)])
    assert reason(st, j) == "AssocGrpBilling"


def test_every_reason_used_is_a_slurm_reason():
    p = policy(acct=AssocLimits(max_jobs=0))
    assert reason(state(p), job(p)) in R.ALL_REASONS
