"""Limit resolution and validation (limits.core.policy): hierarchy, flags, bad input."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from limits.core.policy import (
    QOS,
    Association,
    AssocLimits,
    Enforce,
    PartitionLimits,
    Policy,
    PolicyError,
    QOSLimits,
    User,
    describe_limits,
)


def tree(*, user=None, acct=None, parent=None, root=None, qos=(), partitions=(), **kw) -> Policy:
    """root > parent-acct ("dept") > account ("proj") > user alice."""
    return Policy(
        associations=[
            Association("root", limits=root or AssocLimits()),
            Association("dept", parent="root", limits=parent or AssocLimits()),
            Association("proj", parent="dept", limits=acct or AssocLimits()),
            Association("proj", "alice", limits=user or AssocLimits()),
            Association("proj", "bob"),
        ],
        qos=[QOS("normal"), *qos],
        partitions=partitions,
        users=[User("alice", "proj"), User("bob", "proj")],
        **kw,
    )


def one(eff, limit, tres=""):
    (entry,) = eff.get(limit, tres)
    return entry


def test_spec_worked_example():
    """MaxJobs=20 in the partition QOS, nothing in the job QOS, MaxJobs=4 and MaxSubmitJobs=50
    in the user association: MaxJobs=20 and MaxSubmitJobs=50."""
    policy = tree(
        user=AssocLimits(max_jobs=4, max_submit_jobs=50),
        qos=[QOS("part_q", limits=QOSLimits(max_jobs_per_user=20))],
        partitions=[PartitionLimits("batch", qos="part_q")],
    )
    eff = policy.resolve("alice", "proj", "batch", "normal")
    mj = one(eff, "MaxJobs")
    assert (mj.value, mj.source.level, mj.source.name, mj.field) == (
        20,
        "PartitionQOS",
        "part_q",
        "MaxJobsPerUser",
    )
    ms = one(eff, "MaxSubmitJobs")
    assert (ms.value, ms.source.level, ms.source.name) == (50, "User", "proj/alice")


def test_job_qos_before_association_and_over_part_qos_swaps():
    qos = [
        QOS("part_q", limits=QOSLimits(max_jobs_per_user=20)),
        QOS("big", limits=QOSLimits(max_jobs_per_user=5)),
        QOS("over", flags=frozenset({"OverPartQOS"}), limits=QOSLimits(max_jobs_per_user=7)),
    ]
    policy = tree(user=AssocLimits(max_jobs=4), qos=qos, partitions=[PartitionLimits("batch", qos="part_q")])
    assert one(policy.resolve("alice", "proj", "batch", "big"), "MaxJobs").value == 20
    assert one(policy.resolve("alice", "proj", "batch", "over"), "MaxJobs").source.level == "QOS"
    assert one(policy.resolve("alice", "proj", "", "big"), "MaxJobs").value == 5
    assert one(policy.resolve("alice", "proj", "", "normal"), "MaxJobs").value == 4


def test_tres_limits_resolve_per_tres():
    policy = tree(
        user=AssocLimits(max_tres_per_job={"cpu": 8, "mem": 4096}),
        qos=[QOS("q", limits=QOSLimits(max_tres_per_job={"cpu": 64}))],
    )
    eff = policy.resolve("alice", "proj", "", "q")
    assert (one(eff, "MaxTRESPerJob", "cpu").value, one(eff, "MaxTRESPerJob", "cpu").source.level) == (
        64,
        "QOS",
    )
    assert (one(eff, "MaxTRESPerJob", "mem").value, one(eff, "MaxTRESPerJob", "mem").source.level) == (
        4096,
        "User",
    )


def test_account_limits_inherited_up_the_tree_and_root_last():
    policy = tree(parent=AssocLimits(max_jobs=3), root=AssocLimits(max_jobs=100, max_submit_jobs=9))
    eff = policy.resolve("alice", "proj")
    mj = one(eff, "MaxJobs")
    assert (mj.value, mj.source.level, mj.source.name) == (3, "Account", "dept")
    assert mj.counter == ("assoc", "proj", "alice", "")  # counted per user association
    ms = one(eff, "MaxSubmitJobs")
    assert (ms.value, ms.source.level) == (9, "Root")


def test_grp_limits_apply_at_every_association_level():
    policy = tree(
        user=AssocLimits(grp_tres={"cpu": 100}),
        acct=AssocLimits(grp_tres={"cpu": 50}),
        root=AssocLimits(grp_tres={"cpu": 1000}, grp_jobs=7),
    )
    eff = policy.resolve("alice", "proj")
    levels = [(r.source.level, r.source.name, r.value) for r in eff.get("GrpTRES", "cpu")]
    assert levels == [("User", "proj/alice", 100), ("Account", "proj", 50), ("Root", "root", 1000)]
    assert eff.value("GrpTRES", "cpu") == 50  # the account's tighter limit is what holds
    assert [r.counter for r in eff.get("GrpJobs")] == [("assoc", "root", "", "")]


def test_qos_grp_limit_takes_precedence_over_association_grp():
    policy = tree(
        acct=AssocLimits(grp_jobs=2),
        qos=[QOS("q", limits=QOSLimits(grp_jobs=30))],
    )
    eff = policy.resolve("alice", "proj", "", "q")
    assert [(r.source.level, r.value) for r in eff.get("GrpJobs")] == [("QOS", 30)]


def test_grp_jobs_accrue_ignores_partition_qos():
    qos = [QOS("part_q", limits=QOSLimits(grp_jobs_accrue=1, grp_jobs=3))]
    policy = tree(qos=qos, partitions=[PartitionLimits("batch", qos="part_q")])
    eff = policy.resolve("alice", "proj", "batch")
    assert eff.get("GrpJobsAccrue") == ()
    assert eff.value("GrpJobs") == 3


def test_qos_only_limits():
    q = QOS(
        "q",
        limits=QOSLimits(
            max_tres_per_user={"gres/gpu": 4},
            max_tres_per_account={"cpu": 100},
            max_jobs_per_account=9,
            max_submit_jobs_per_account=10,
            max_jobs_accrue_per_account=2,
            min_tres_per_job={"cpu": 2},
        ),
    )
    eff = tree(qos=[q]).resolve("alice", "proj", "", "q")
    assert one(eff, "MaxTRESPerUser", "gres/gpu").counter == ("qos_user", "q", "alice")
    assert one(eff, "MaxTRESPerAccount", "cpu").counter == ("qos_acct", "q", "proj")
    assert one(eff, "MaxJobsPerAccount").value == 9
    assert one(eff, "MaxSubmitJobsPerAccount").value == 10
    assert one(eff, "MaxJobsAccruePerAccount").value == 2
    assert one(eff, "MinTRESPerJob", "cpu").value == 2


def test_partition_bounds_max_wall_and_nodes_unless_flags():
    part = PartitionLimits("batch", max_time=60, max_nodes=4, min_nodes=2)
    plain = QOS("plain", limits=QOSLimits(max_wall_duration_per_job=120, max_tres_per_job={"node": 8}))
    freed = dataclasses.replace(
        plain,
        name="freed",
        flags=frozenset({"PartitionTimeLimit", "PartitionMaxNodes", "PartitionMinNodes"}),
        limits=QOSLimits(
            max_wall_duration_per_job=120, max_tres_per_job={"node": 8}, min_tres_per_job={"node": 1}
        ),
    )
    policy = tree(qos=[plain, freed], partitions=[part])
    eff = policy.resolve("alice", "proj", "batch", "plain")
    wall = one(eff, "MaxWallDurationPerJob")
    assert (wall.value, wall.source.level, wall.field) == (60, "Partition", "MaxTime")
    assert one(eff, "MaxTRESPerJob", "node").value == 4
    assert one(eff, "MinTRESPerJob", "node").value == 2
    eff = policy.resolve("alice", "proj", "batch", "freed")
    assert (one(eff, "MaxWallDurationPerJob").value, one(eff, "MaxWallDurationPerJob").source.level) == (
        120,
        "QOS",
    )
    assert one(eff, "MaxTRESPerJob", "node").value == 8
    assert one(eff, "MinTRESPerJob", "node").value == 1


def test_partition_limit_is_the_last_level():
    policy = tree(partitions=[PartitionLimits("batch", max_time=30)])
    wall = one(policy.resolve("alice", "proj", "batch"), "MaxWallDurationPerJob")
    assert (wall.value, wall.source.level) == (30, "Partition")
    # a tighter association limit stays in force under the partition bound
    policy = tree(
        user=AssocLimits(max_wall_duration_per_job=10), partitions=[PartitionLimits("batch", max_time=30)]
    )
    wall = one(policy.resolve("alice", "proj", "batch"), "MaxWallDurationPerJob")
    assert (wall.value, wall.source.level) == (10, "User")


def test_limit_factor_scales_association_tres_limits_only():
    q = QOS("half", limit_factor=2.0, limits=QOSLimits(max_tres_per_user={"cpu": 10}))
    policy = tree(acct=AssocLimits(grp_tres={"cpu": 30}, max_tres_per_job={"cpu": 8}), qos=[q])
    eff = policy.resolve("alice", "proj", "", "half")
    assert eff.value("GrpTRES", "cpu") == 60
    assert eff.value("MaxTRESPerJob", "cpu") == 16
    assert eff.value("MaxTRESPerUser", "cpu") == 10


def test_default_qos_and_partition_specific_association():
    policy = Policy(
        associations=[
            Association("proj", parent="root", default_qos="low", qos=frozenset({"low", "high"})),
            Association("proj", "alice", limits=AssocLimits(max_jobs=1)),
            Association("proj", "alice", partition="gpu", limits=AssocLimits(max_jobs=2)),
        ],
        qos=[QOS("low"), QOS("high")],
    )
    assert policy.resolve("alice", "proj").qos == "low"
    assert policy.resolve("alice", "proj", "gpu").value("MaxJobs") == 2
    assert policy.resolve("alice", "proj", "cpu").value("MaxJobs") == 1


def test_describe_for_the_console():
    policy = tree(user=AssocLimits(grp_tres={"mem": 2048}))
    assert describe_limits(policy.resolve("alice", "proj")) == ["GrpTRES=mem=2G  from association proj/alice"]


# --------------------------------------------------------------------------- bad input


def test_unknown_qos_is_refused():
    with pytest.raises(PolicyError, match="QOS 'gold' does not exist"):
        Policy(associations=[Association("a", qos=frozenset({"gold"}))], qos=[QOS("normal")])
    with pytest.raises(PolicyError, match="partition batch: QOS 'gold' does not exist"):
        Policy(qos=[QOS("normal")], partitions=[PartitionLimits("batch", qos="gold")])
    with pytest.raises(PolicyError, match="QOS gold does not exist"):
        tree().resolve("alice", "proj", "", "gold")


def test_cycle_in_account_tree_is_refused():
    with pytest.raises(PolicyError, match=r"cycle in the account tree: a -> b -> a"):
        Policy(associations=[Association("a", parent="b"), Association("b", parent="a")])


def test_missing_parent_and_account_are_refused():
    with pytest.raises(PolicyError, match="parent account 'nowhere' does not exist"):
        Policy(associations=[Association("a", parent="nowhere")])
    with pytest.raises(PolicyError, match="account 'ghost' does not exist"):
        Policy(associations=[Association("ghost", "alice")])


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        (AssocLimits(max_jobs=-2), "max_jobs=-2 is not a number >= 0"),
        (AssocLimits(grp_tres={"cpu": -5}), "cpu=-5 is not a count >= 0"),
        (AssocLimits(grp_tres={"gpus": 1}), "Unknown TRES 'gpus'"),
        (AssocLimits(grp_tres={"CPU": 1}), "must be written 'cpu'"),
    ],
)
def test_negative_and_malformed_limits_are_refused(limits, message):
    with pytest.raises(PolicyError, match=message):
        Policy(associations=[Association("a", limits=limits)])


def test_bad_qos_settings_are_refused():
    with pytest.raises(PolicyError, match="unknown flag 'Fast'"):
        Policy(qos=[QOS("q", flags=frozenset({"Fast"}))])
    with pytest.raises(PolicyError, match="UsageFactor must be >= 0"):
        Policy(qos=[QOS("q", usage_factor=-1)])
    with pytest.raises(PolicyError, match="defined twice"):
        Policy(qos=[QOS("q"), QOS("q")])
    with pytest.raises(PolicyError, match="Fairshare must be"):
        Policy(associations=[Association("a", fairshare="half")])
    with pytest.raises(PolicyError, match="DefaultQOS 'b' is not in its QOS list"):
        Policy(
            associations=[Association("a", qos=frozenset({"a"}), default_qos="b")], qos=[QOS("a"), QOS("b")]
        )


def test_enforce_options_imply_each_other():
    e = Enforce.parse("safe")
    assert (e.associations, e.limits, e.safe, e.qos) == (True, True, True, False)
    e = Enforce.parse("qos,wckeys")
    assert (e.associations, e.limits, e.qos, e.wckeys) == (True, False, True, True)
    assert Enforce.parse("").associations is False
    assert str(Enforce.parse("limits")) == "associations,limits"
    with pytest.raises(PolicyError, match="unknown option 'limit'"):
        Enforce.parse("limit")


# --------------------------------------------------------------------------- property

_LEVEL_NAMES = ["PartitionQOS", "QOS", "User", "Account", "Account", "Root"]


@given(
    st.lists(st.one_of(st.none(), st.integers(0, 1000)), min_size=6, max_size=6),
    st.lists(st.one_of(st.none(), st.integers(0, 1000)), min_size=6, max_size=6),
    st.booleans(),
)
def test_resolved_limit_comes_from_highest_defining_level(max_jobs, max_cpus, over):
    """Levels: partition QOS, job QOS, user, account, parent account, root.  Whatever is set,
    the resolved MaxJobs / MaxTRESPerJob[cpu] is the first defined in hierarchy order."""

    def q(name, i, flags=frozenset()):
        return QOS(
            name,
            flags=flags,
            limits=QOSLimits(
                max_jobs_per_user=max_jobs[i],
                max_tres_per_job={} if max_cpus[i] is None else {"cpu": max_cpus[i]},
            ),
        )

    def a(i):
        return AssocLimits(
            max_jobs=max_jobs[i], max_tres_per_job={} if max_cpus[i] is None else {"cpu": max_cpus[i]}
        )

    policy = tree(
        qos=[q("part_q", 0), q("job_q", 1, frozenset({"OverPartQOS"}) if over else frozenset())],
        user=a(2),
        acct=a(3),
        parent=a(4),
        root=a(5),
        partitions=[PartitionLimits("batch", qos="part_q")],
    )
    eff = policy.resolve("alice", "proj", "batch", "job_q")
    order = [1, 0, 2, 3, 4, 5] if over else [0, 1, 2, 3, 4, 5]
    for values, limit, tres in ((max_jobs, "MaxJobs", ""), (max_cpus, "MaxTRESPerJob", "cpu")):
        first = next((i for i in order if values[i] is not None), None)
        got = eff.get(limit, tres)
        if first is None:
            assert got == ()
        else:
            (r,) = got
            assert r.value == values[first]
            assert r.source.level == _LEVEL_NAMES[first]
