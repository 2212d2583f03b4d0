"""Limits wired into a real scheduler pass (limits.core.plugin.LimitsPlugin + cluster.core.scheduler)."""

from __future__ import annotations

from cluster.core.scheduler import JobView, NodeView, PartitionView, Snapshot, schedule
from cluster.core.states import NodeBase
from limits.core.plugin import JobLimitsInfo, LimitsPlugin
from limits.core.policy import QOS, Association, AssocLimits, Enforce, Policy, QOSLimits
from limits.core.usage import UsageRecord, assoc_key

NOW = 1_000_000.0


def nodes(n=4, cpus=8):
    return tuple(NodeView(i, f"n{i}", cpus, 16_000, 1, NodeBase.IDLE, 0) for i in range(n))


def snap(pending, running=(), n=4):
    part = PartitionView("batch", tuple(range(n)), default_time=60)
    return Snapshot(NOW, nodes(n), {"batch": part}, tuple(pending), tuple(running))


def pend(jid, user, **kw):
    return JobView(job_id=jid, partition="batch", user=user, submit_time=NOW - 1000 + jid, **kw)


def make_policy(enforce="limits", **kw):
    return Policy(
        associations=[
            Association("phys", parent="root", limits=kw.pop("acct", AssocLimits())),
            Association("phys", "alice", limits=kw.pop("alice", AssocLimits())),
            Association("phys", "bob"),
        ],
        qos=[QOS("normal"), *kw.pop("qos", ())],
        enforce=Enforce.parse(enforce),
    )


def info(jobs, **kw):
    return {j.job_id: JobLimitsInfo(account="phys", **kw) for j in jobs}


def test_max_jobs_holds_one_user_not_the_partition():
    policy = make_policy(alice=AssocLimits(max_jobs=1))
    jobs = [pend(1, "alice"), pend(2, "alice"), pend(3, "bob")]
    result = schedule(snap(jobs), [LimitsPlugin(policy, jobs=info(jobs))])
    assert sorted(s.job_id for s in result.starts) == [1, 3]
    (held,) = result.pending
    assert (held.job_id, held.reason) == (2, "AssocMaxJobsLimit")
    assert "MaxJobs=1" in held.detail


def test_grp_tres_counts_jobs_started_in_the_same_pass():
    q = QOS("small", limits=QOSLimits(grp_tres={"cpu": 10}))
    policy = make_policy(qos=[q])
    jobs = [pend(i, "alice" if i % 2 else "bob", num_tasks=4) for i in range(1, 5)]
    result = schedule(snap(jobs), [LimitsPlugin(policy, jobs=info(jobs, qos="small"))])
    assert len(result.starts) == 2
    assert {p.reason for p in result.pending} == {"QOSGrpCpuLimit"}


def test_running_jobs_count_and_kills_and_accrue_are_reported():
    policy = make_policy(acct=AssocLimits(grp_tres_mins={"cpu": 100}, max_jobs_accrue=1))
    run = JobView(
        job_id=9,
        partition="batch",
        user="bob",
        submit_time=NOW - 5000,
        state="RUNNING",
        start_time=NOW - 600,
        time_limit=60,
        node_indices=(0,),
        alloc_cpus=(2,),
        alloc_mem=(100,),
    )
    jobs = [pend(1, "alice"), pend(2, "alice")]
    usage = {assoc_key("phys"): UsageRecord(tres_seconds={"cpu": 100 * 60})}
    plugin = LimitsPlugin(policy, jobs=info([*jobs, run]), usage=usage)
    result = schedule(snap(jobs, [run]), [plugin])
    assert {p.reason for p in result.pending} == {"AssocGrpCPUMinutesLimit"}
    assert [(k.job_id, k.reason) for k in plugin.kills] == [(9, "AssocGrpCPUMinutesLimit")]
    # MaxJobsAccrue=1 is inherited from the account and counted per user association
    assert plugin.accrue_start == {1}


def test_may_reserve_uses_min_prio_threshold():
    policy = make_policy(qos=[QOS("bf", limits=QOSLimits(min_prio_threshold=500))])
    j = pend(1, "alice")
    plugin = LimitsPlugin(policy, jobs={1: JobLimitsInfo(account="phys", qos="bf")})
    assert not plugin.may_reserve(j, 499)
    assert plugin.may_reserve(j, 500)


def test_whole_node_memory_request_is_counted_as_the_nodes_memory():
    policy = make_policy(alice=AssocLimits(max_tres_per_job={"mem": 10_000}))
    jobs = [pend(1, "alice", mem_per_node=0)]
    result = schedule(snap(jobs), [LimitsPlugin(policy, jobs=info(jobs))])
    assert result.pending[0].reason == "AssocMaxMemPerJob"
