"""Multifactor priority and Fair Tree (limits.core.priority)."""

from __future__ import annotations

import pytest

from cluster.core.scheduler import JobView, PartitionView
from limits.core.policy import QOS, Association, PartitionLimits, Policy
from limits.core.priority import JobPriorityInfo, MultifactorPriority, PriorityConfig, fair_tree, may_reserve
from limits.core.usage import UsageRecord, assoc_key

NOW = 1_000_000.0


def accounts(*assocs: Association) -> Policy:
    return Policy(
        associations=assocs, qos=[QOS("normal"), QOS("high", priority=100), QOS("low", priority=25)]
    )


def test_fair_tree_ranks_idle_account_users_first():
    p = accounts(
        Association("a", parent="root"),
        Association("b", parent="root"),
        Association("a", "a1"),
        Association("a", "a2"),
        Association("b", "b1"),
        Association("b", "b2"),
    )
    usage = {
        assoc_key("a", "a1"): UsageRecord(raw_usage=100.0),
        assoc_key("a", "a2"): UsageRecord(raw_usage=300.0),
        assoc_key("b", "b1"): UsageRecord(raw_usage=10.0),
    }
    fs = fair_tree(p, usage)
    # b used less than a: b's users first; within b, b2 (no usage) before b1.
    order = sorted(fs, key=fs.get, reverse=True)
    assert [k[2] for k in order] == ["b2", "b1", "a1", "a2"]
    assert fs[assoc_key("b", "b2")] == 1.0 and fs[assoc_key("a", "a2")] == 0.25


def test_fair_tree_ties_share_a_rank_and_shares_count():
    p = accounts(
        Association("a", parent="root", fairshare=3),
        Association("b", parent="root", fairshare=1),
        Association("a", "u1"),
        Association("a", "u2"),
        Association("b", "u3"),
    )
    usage = {
        assoc_key("a", "u1"): UsageRecord(raw_usage=60.0),
        assoc_key("a", "u2"): UsageRecord(raw_usage=60.0),
    }
    usage[assoc_key("b", "u3")] = UsageRecord(raw_usage=40.0)
    fs = fair_tree(p, usage)
    # a: S=0.75, U=0.75 -> 1.0; b: S=0.25, U=0.4 -> 0.625; a's users tie.
    assert fs[assoc_key("a", "u1")] == fs[assoc_key("a", "u2")] == 1.0
    assert fs[assoc_key("b", "u3")] == pytest.approx(1 / 3)


def test_fairshare_parent_account_is_dissolved():
    p = accounts(
        Association("dept", parent="root"),
        Association("grp", parent="dept", fairshare="parent"),
        Association("other", parent="dept"),
        Association("grp", "g1"),
        Association("other", "o1"),
    )
    usage = {assoc_key("other", "o1"): UsageRecord(raw_usage=10.0)}
    fs = fair_tree(p, usage)
    # g1 competes directly with the account "other" under dept and has used nothing.
    assert fs[assoc_key("grp", "g1")] == 1.0
    assert fs[assoc_key("other", "o1")] == 0.5


def job(jid=1, **kw) -> JobView:
    return JobView(job_id=jid, partition="batch", user=kw.pop("user", "u1"), submit_time=NOW - 3600, **kw)


def test_multifactor_combines_weighted_factors():
    p = Policy(
        associations=[Association("a", parent="root"), Association("a", "u1")],
        qos=[QOS("normal"), QOS("high", priority=100), QOS("low", priority=25)],
        partitions=[
            PartitionLimits("batch", priority_job_factor=1),
            PartitionLimits("prio", priority_job_factor=4),
        ],
    )
    cfg = PriorityConfig(
        weight_age=1000,
        weight_fairshare=10000,
        weight_job_size=100,
        weight_partition=400,
        weight_qos=2000,
        max_age=7200,
    )
    info = {1: JobPriorityInfo(account="a", qos="low", accrue_time=NOW - 3600)}
    prio = MultifactorPriority(
        cfg, p, info=info, fairshare={assoc_key("a", "u1"): 0.5}, total_nodes=10, total_cpus=100
    )
    part = PartitionView("batch", (), priority_job_factor=1)
    f = prio.factors(job(num_tasks=10), part, NOW)
    assert f == {"age": 0.5, "fairshare": 0.5, "jobsize": 0.1, "partition": 0.25, "qos": 0.25}
    assert prio(job(num_tasks=10), part, NOW) == 500 + 5000 + 10 + 100 + 500
    assert prio(job(priority=42), part, NOW) == 42  # an administrator's priority wins


def test_age_does_not_grow_without_accrue_time():
    p = accounts(Association("a", parent="root"), Association("a", "u1"))
    cfg = PriorityConfig(weight_age=1000)
    prio = MultifactorPriority(cfg, p, info={1: JobPriorityInfo(account="a")})
    assert prio.factors(job(), None, NOW)["age"] == 0.0
    assert prio(job(), None, NOW) == 1  # never 0: that means held


def test_favor_small_and_nice():
    p = accounts(Association("a", parent="root"), Association("a", "u1"))
    cfg = PriorityConfig(weight_job_size=1000, favor_small=True)
    prio = MultifactorPriority(
        cfg, p, info={1: JobPriorityInfo(account="a", nice=100)}, total_nodes=4, total_cpus=100
    )
    assert prio(job(min_nodes=1), None, NOW) == 750 - 100


def test_config_from_slurm_conf_options():
    cfg = PriorityConfig.from_options(
        {
            "PriorityWeightAge": "1000",
            "priorityweightfairshare": "5000",
            "PriorityWeightTRES": "CPU=1000,Mem=2000,GRES/gpu=3000",
            "PriorityDecayHalfLife": "14-0",
            "PriorityMaxAge": "60",
            "PriorityFavorSmall": "YES",
            "PriorityUsageResetPeriod": "monthly",
            "SchedulerParameters": "bf_window=60,bf_min_prio_reserve=5000",
        }
    )
    assert (cfg.weight_age, cfg.weight_fairshare) == (1000, 5000)
    assert cfg.weight_tres == {"cpu": 1000.0, "mem": 2000.0, "gres/gpu": 3000.0}
    assert cfg.decay_half_life == 14 * 86400
    assert cfg.max_age == 3600
    assert cfg.favor_small and cfg.usage_reset_period == "MONTHLY"
    assert cfg.bf_min_prio_reserve == 5000


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"PriorityWeightAge": "lots"}, "PriorityWeightAge=lots"),
        ({"PriorityWeightQOS": "-1"}, "must be >= 0"),
        ({"PriorityDecayHalfLife": "soon"}, "PriorityDecayHalfLife=soon"),
        ({"PriorityWeightTRES": "gpus=3"}, "PriorityWeightTRES"),
        ({"PriorityUsageResetPeriod": "hourly"}, "PriorityUsageResetPeriod"),
    ],
)
def test_bad_priority_options(options, message):
    with pytest.raises(ValueError, match=message):
        PriorityConfig.from_options(options)


def test_min_prio_threshold_overrides_bf_min_prio_reserve():
    assert may_reserve(10, None)
    assert not may_reserve(10, 20)
    assert may_reserve(10, 5, bf_min_prio_reserve=100)
    assert not may_reserve(10, None, bf_min_prio_reserve=100)


@pytest.mark.parametrize("nice", [-2_000_000, -5, -1, 0, 1, 40, 10_000])
def test_weightless_multifactor_is_the_sum_of_nothing_less_the_nice(nice):
    # With no weight (Slurm's default) the pass's shortcut gives what the full sum gives:
    # every factor times 0, less the nice, at least 1.
    policy = Policy(associations=[Association("a", parent="root"), Association("a", "u")])
    job = JobView(job_id=3, partition="p", user="u", submit_time=0.0, num_tasks=4, nice=nice)
    info = {3: JobPriorityInfo(account="a", accrue_time=0.0, nice=nice)}
    mf = MultifactorPriority(PriorityConfig(), policy, info=info, fairshare={assoc_key("a", "u"): 1.0})
    assert mf.weightless
    w = mf.weighted(job, PartitionView("p", ()), 1000.0)
    full = max(1, int(w["age"] + w["fairshare"] + w["jobsize"] + w["partition"] + w["qos"] - w["nice"]))
    assert mf(job, PartitionView("p", ()), 1000.0) == full == max(1, -nice)
    weighted = MultifactorPriority(PriorityConfig(weight_age=1000), policy, info=info)
    assert not weighted.weightless
