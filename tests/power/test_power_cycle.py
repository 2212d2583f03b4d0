"""power.core.policy.power_cycle and the events around it, with a moving clock."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from cluster.core.scheduler import NodeView
from cluster.core.states import JobState, NodeBase, NodeFlag, is_usable
from power.core.config import Exclusions, parse_exc_nodes
from power.core.policy import (
    RESUME_TIMEOUT_REASON,
    UNEXPECTED_REBOOT_REASON,
    LaunchJobs,
    MarkDown,
    NodeChange,
    PowerJob,
    PowerNode,
    ResumeFailed,
    ResumeNodes,
    SuspendNodes,
    on_allocation,
    on_node_idle,
    power_cycle,
    power_node_order_key,
)

from .conftest import BASE, conf  # type: ignore[import-not-found]

PD = NodeFlag.POWERED_DOWN


def names(n: int, prefix: str = "n") -> list[str]:
    return [f"{prefix}{i}" for i in range(1, n + 1)]


def suspended(result) -> list[str]:
    return sorted(n for d in result.of(SuspendNodes) for n in d.nodes)


def resumed(result) -> list[str]:
    return sorted(n for d in result.of(ResumeNodes) for n in d.nodes)


# --- automatic suspend ------------------------------------------------------------------


def test_idle_node_is_suspended_after_suspend_time_then_powered_down_after_timeout(sim, nodes) -> None:
    s = sim(conf(BASE), nodes(["n1"]))
    assert s.advance(599).decisions == ()
    r = s.advance(1)  # idle for exactly SuspendTime
    [action] = r.of(SuspendNodes)
    assert action.nodes == ("n1",) and action.program == s.cfg.suspend_program
    assert s.flags("n1") == {"POWERING_DOWN"} and s.nodes["n1"].power_entered == 600
    assert not is_usable(s.nodes["n1"].base, s.nodes["n1"].flags)  # unusable for SuspendTimeout
    assert s.advance(29).decisions == ()
    s.advance(1)  # SuspendTimeout (30 s default)
    assert s.flags("n1") == {"POWERED_DOWN"}
    assert is_usable(s.nodes["n1"].base, s.nodes["n1"].flags)  # a job may be given it (resumed)
    assert s.advance(3600).decisions == ()  # stays down; nothing to repeat


def test_busy_completing_and_unknown_nodes_are_not_suspended(sim) -> None:
    busy = [
        PowerNode("n1", NodeBase.ALLOCATED, 0, ("batch",)),
        PowerNode("n2", NodeBase.MIXED, 0, ("batch",)),
        PowerNode("n3", NodeBase.IDLE, NodeFlag.COMPLETING, ("batch",)),
        PowerNode("n4", NodeBase.UNKNOWN, 0, ("batch",)),
        PowerNode("n5", NodeBase.FUTURE, 0, ("batch",)),
        PowerNode("n6", NodeBase.IDLE, NodeFlag.REBOOT_REQUESTED, ("batch",)),
        PowerNode("n7", NodeBase.IDLE, 0, ("batch",)),  # held by a job below
        PowerNode("n8", NodeBase.DOWN, NodeFlag.NOT_RESPONDING, ("batch",)),  # idle *or down*
    ]
    job = PowerJob(1, ("n7",), state=JobState.RUNNING)
    s = sim(conf(BASE), busy, [job])
    assert suspended(s.advance(10_000)) == ["n8"]


def test_idle_time_counts_from_last_busy(sim, nodes) -> None:
    s = sim(conf(BASE), nodes(["n1", "n2"]))
    s.nodes["n2"] = replace(s.nodes["n2"], last_busy=500)
    assert suspended(s.advance(600)) == ["n1"]
    assert suspended(s.advance(499)) == []
    assert suspended(s.advance(1)) == ["n2"]


def test_suspend_time_precedence_in_the_cycle(sim) -> None:
    cfg = conf(
        BASE.replace("SuspendTime=600", "SuspendTime=1000")
        + "PartitionName=short Nodes=n[1-3] SuspendTime=100\n"
        + "PartitionName=off Nodes=n3 SuspendTime=INFINITE\n"
    )
    s = sim(
        cfg,
        [
            PowerNode("n1", NodeBase.IDLE, 0, ("batch", "short")),  # partition: 100
            PowerNode("n2", NodeBase.IDLE, 0, ("batch", "short"), suspend_time=50),  # node: 50
            PowerNode("n3", NodeBase.IDLE, 0, ("batch", "short", "off")),  # INFINITE wins
            PowerNode("n4", NodeBase.IDLE, 0, ("batch",)),  # global: 1000
            PowerNode("n5", NodeBase.IDLE, 0, ("batch", "off"), suspend_time=200),  # node beats INFINITE
            PowerNode("n6", NodeBase.IDLE, 0, ("batch",), suspend_time=-1),  # node INFINITE
        ],
    )
    when = {}
    for _ in range(200):
        for n in suspended(s.advance(10)):
            when[n] = s.now
    assert when == {"n2": 50, "n1": 100, "n5": 200, "n4": 1000}


def test_no_automatic_suspend_when_auto_is_off(sim, nodes) -> None:
    cfg = conf(BASE.replace("SuspendTime=600", "SuspendTime=INFINITE"))
    s = sim(cfg, nodes(["n1"], suspend_time=60))
    assert not cfg.auto_enabled
    assert s.advance(100).decisions == ()
    # A runtime per-node SuspendTime turned it on (the adapter's sticky flag).
    s.now += 1
    assert suspended(s.cycle(auto_enabled=True)) == ["n1"]


# --- exclusions --------------------------------------------------------------------------------


def test_excluded_nodes_partitions_and_states(sim) -> None:
    cfg = conf(
        BASE
        + "SuspendExcNodes=n1\nSuspendExcParts=debug\nSuspendExcStates=DRAIN,CLOUD\n"
        + "PartitionName=debug Nodes=n2\n"
    )
    s = sim(
        cfg,
        [
            PowerNode("n1", NodeBase.IDLE, 0, ("batch",)),
            PowerNode("n2", NodeBase.IDLE, 0, ("batch", "debug")),
            PowerNode("n3", NodeBase.IDLE, NodeFlag.DRAIN, ("batch",)),
            PowerNode("n4", NodeBase.IDLE, NodeFlag.CLOUD, ("batch",)),
            PowerNode("n5", NodeBase.DOWN, 0, ("batch",)),
            PowerNode("n6", NodeBase.IDLE, 0, ("batch",)),
        ],
    )
    assert suspended(s.advance(600)) == ["n5", "n6"]
    # scontrol update SuspendExcStates=DOWN at runtime: the cycle takes the running values.
    s2 = sim(cfg, [PowerNode("n5", NodeBase.DOWN, 0, ("batch",))])
    s2.now = 600
    assert suspended(s2.cycle(exclusions=Exclusions(states=frozenset({"DOWN"})))) == []


def test_count_exclusion_keeps_that_many_usable_nodes_up(sim, nodes) -> None:
    cfg = conf(BASE + "SuspendExcNodes=n[1-6]:2\n")
    s = sim(cfg, nodes(names(8)))
    assert suspended(s.advance(600)) == ["n1", "n2", "n3", "n4", "n7", "n8"]
    assert s.advance(1000).of(SuspendNodes) == []  # n5, n6 stay up for good


def test_count_exclusion_ignores_unusable_members(sim) -> None:
    cfg = conf(BASE + "SuspendExcNodes=n[1-6]:2\n")
    s = sim(
        cfg,
        [
            PowerNode("n1", NodeBase.IDLE, NodeFlag.DRAIN, ("batch",)),  # drained: not usable
            PowerNode("n2", NodeBase.DOWN, 0, ("batch",)),  # down: not usable
            PowerNode("n3", NodeBase.IDLE, PD, ("batch",)),  # already powered down
            PowerNode("n4", NodeBase.ALLOCATED, 0, ("batch",)),  # busy: not idle
            PowerNode("n5", NodeBase.IDLE, 0, ("batch",)),
            PowerNode("n6", NodeBase.IDLE, 0, ("batch",)),
        ],
    )
    # Two usable nodes (n5, n6) is exactly the count: neither goes; n1/n2 may.
    assert suspended(s.advance(600)) == ["n1", "n2"]
    # n4's job ends: three usable now, so one of them may power down.
    s.nodes["n4"] = replace(s.nodes["n4"], base=NodeBase.IDLE, last_busy=600)
    assert suspended(s.advance(600)) == ["n4"]  # the first in node order


def test_overlapping_count_sets_must_both_hold(sim, nodes) -> None:
    cfg = conf(BASE + "SuspendExcNodes=n[1-4]:1,n[3-6]:3\n")
    s = sim(cfg, nodes(names(6)))
    # n[3-6] keeps 3 up -> one of n3..n6 may go; n[1-4] keeps 1 -> three of n1..n4 may go.
    assert suspended(s.advance(600)) == ["n1", "n2", "n3"]


@settings(max_examples=40, deadline=None)
@given(
    count=st.integers(1, 6),
    busy=st.sets(st.integers(1, 8), max_size=8),
    drained=st.sets(st.integers(1, 8), max_size=3),
)
def test_count_exclusion_invariant(count: int, busy: set[int], drained: set[int]) -> None:
    from power.core.policy import RateState

    cfg = conf(BASE + f"SuspendExcNodes=n[1-8]:{count}\nSuspendRate=0\n")
    node_list = [
        PowerNode(
            f"n{i}",
            NodeBase.ALLOCATED if i in busy else NodeBase.IDLE,
            NodeFlag.DRAIN if i in drained else 0,
            ("batch",),
        )
        for i in range(1, 9)
    ]
    usable_before = sum(1 for n in node_list if n.base == NodeBase.IDLE and not n.flags)
    r = power_cycle(cfg, node_list, now=10_000, rates=RateState())
    gone = set(suspended(r))
    usable_after = sum(1 for n in node_list if n.base == NodeBase.IDLE and not n.flags and n.name not in gone)
    assert usable_after == min(usable_before, count)
    assert all(n.base == NodeBase.IDLE for n in node_list if n.name in gone)


# --- rates -------------------------------------------------------------------------------------


def test_suspend_rate_spreads_suspends_over_minutes(sim, nodes) -> None:
    s = sim(conf(BASE + "SuspendRate=5\n"), nodes(names(12)))
    r = s.advance(600)
    assert suspended(r) == ["n1", "n2", "n3", "n4", "n5"]
    assert r.deferred_suspends == ("n6", "n7", "n8", "n9", "n10", "n11", "n12")
    assert suspended(s.advance(30)) == []  # same minute
    assert suspended(s.advance(29)) == []
    assert suspended(s.advance(1)) == ["n10", "n6", "n7", "n8", "n9"]  # 60 s after the first five
    assert suspended(s.advance(60)) == ["n11", "n12"]


def test_suspend_rate_zero_is_unlimited(sim, nodes) -> None:
    s = sim(conf(BASE + "SuspendRate=0\n"), nodes(names(8)))
    assert len(suspended(s.advance(600))) == 8


@settings(max_examples=25, deadline=None)
@given(
    rate=st.integers(1, 4),
    steps=st.lists(st.tuples(st.integers(1, 40), st.integers(0, 3)), min_size=1, max_size=25),
)
def test_suspend_rate_holds_in_every_minute(rate: int, steps: list[tuple[int, int]]) -> None:
    """Nodes go idle at random times; no 60-second window sees more than ``rate`` suspends."""
    from power.core.policy import RateState

    cfg = conf(BASE + f"SuspendRate={rate}\nSuspendTime=0\n")
    all_nodes: dict[str, PowerNode] = {}
    rates, now, times = RateState(), 0.0, []
    for i, (dt, new) in enumerate(steps):
        now += dt
        for k in range(new):
            name = f"x{i}_{k}"
            all_nodes[name] = PowerNode(name, NodeBase.IDLE, 0, (), last_busy=now)
        r = power_cycle(cfg, list(all_nodes.values()), now=now, rates=rates)
        rates = r.rates
        for change in r.changes().values():
            all_nodes[change.node] = change.apply(all_nodes[change.node])
        times += [now] * len(suspended(r))
    for t in times:
        assert sum(1 for u in times if t <= u < t + 60) <= rate


def test_resume_rate_limits_resumes(sim) -> None:
    cfg = conf(BASE + "ResumeRate=3\n")
    down = [PowerNode(n, NodeBase.IDLE, PD | NodeFlag.POWER_UP, ("batch",)) for n in names(5)]
    s = sim(cfg, down)
    r = s.advance(1)
    assert resumed(r) == ["n1", "n2", "n3"] and r.deferred_resumes == ("n4", "n5")
    assert s.with_flags(NodeFlag.POWER_UP) == ["n4", "n5"]  # the request waits, it is not lost
    assert resumed(s.advance(59)) == []
    assert resumed(s.advance(1)) == ["n4", "n5"]


# --- resume for jobs -------------------------------------------------------------------------


def test_job_on_powered_down_nodes_resumes_them_and_launches_when_all_registered(sim) -> None:
    cfg = conf(BASE)
    down = [PowerNode(n, NodeBase.IDLE, PD, ("batch",), boot_time=0.0) for n in names(3)]
    s = sim(cfg, down)
    s.now = 1000
    waits, changes = on_allocation([s.nodes["n1"], s.nodes["n2"]])
    assert waits and [c.node for c in changes] == ["n1", "n2"]
    s.apply(changes)
    s.jobs[7] = PowerJob(7, ("n1", "n2"), partition="batch", features="c1")
    r = s.cycle()
    [res] = r.of(ResumeNodes)
    assert res.nodes == ("n1", "n2") and res.jobs == (7,) and res.program == cfg.resume_program
    assert '"nodes_resume": "n[1-2]"' in res.resume_file
    assert s.with_flags(NodeFlag.POWERING_UP) == ["n1", "n2"]
    s.now += 20
    s.register("n1")
    assert s.advance(1).of(LaunchJobs) == []  # n2 still powering up
    s.register("n2")
    r = s.advance(1)
    assert r.of(LaunchJobs) == [LaunchJobs((7,))]
    assert s.jobs[7].state == JobState.RUNNING
    assert s.nodes["n1"].flags == 0 and s.nodes["n1"].last_busy == 1020


def test_powered_down_node_held_by_a_job_is_resumed_even_without_power_up_flag(sim) -> None:
    s = sim(conf(BASE), [PowerNode("n1", NodeBase.ALLOCATED, PD, ("batch",))], [PowerJob(3, ("n1",))])
    assert resumed(s.advance(1)) == ["n1"]


def test_fast_power_up_launch_launches_at_registration(sim) -> None:
    cfg = conf(BASE + "SlurmctldParameters=fast_power_up_launch\n")
    s = sim(
        cfg, [PowerNode("n1", NodeBase.ALLOCATED, PD | NodeFlag.POWER_UP, ("batch",))], [PowerJob(9, ("n1",))]
    )
    s.advance(1)
    s.now += 5
    out = s.register("n1")
    assert LaunchJobs((9,)) in out and s.jobs[9].state == JobState.RUNNING


def test_registration_with_an_old_boot_time_is_not_a_power_up(sim) -> None:
    s = sim(conf(BASE), [PowerNode("n1", NodeBase.IDLE, PD | NodeFlag.POWER_UP, ("batch",), boot_time=5.0)])
    s.advance(100)
    assert s.register("n1", boot_time=5.0) == ()  # slurmd did not restart (start it with -b)
    assert s.flags("n1") == {"POWERING_UP"}


# --- timeouts --------------------------------------------------------------------------------


def test_resume_timeout_marks_down_requeues_and_runs_resume_fail_program(sim) -> None:
    cfg = conf(BASE)
    s = sim(
        cfg,
        [
            PowerNode(n, NodeBase.ALLOCATED, PD | NodeFlag.POWER_UP, ("batch",), boot_time=0.0)
            for n in names(3)
        ],
        [PowerJob(1, ("n1", "n2")), PowerJob(2, ("n3",), requeue=False)],
    )
    s.advance(10)  # resume requested at t=10
    s.now += 5
    s.register("n2")  # n2 comes up in time
    assert s.advance(54).of(MarkDown) == []  # t=69
    r = s.advance(1)  # t=70: ResumeTimeout (60 s) after the request
    assert sorted(m.node for m in r.of(MarkDown)) == ["n1", "n3"]
    assert all(m.reason == RESUME_TIMEOUT_REASON for m in r.of(MarkDown))
    assert r.of(ResumeFailed) == [ResumeFailed(("n1", "n3"), cfg.resume_fail_program)]
    assert s.requeued == [1] and s.node_failed == [2] and s.cancelled == []  # NODE_FAIL, as slurmctld
    assert s.nodes["n1"].base == NodeBase.DOWN and s.flags("n1") == {"POWERED_DOWN"}
    assert s.nodes["n1"].reason == RESUME_TIMEOUT_REASON
    # The node boots late on its own: DOWN, "Node unexpectedly rebooted".
    s.now += 100
    out = s.register("n1")
    assert MarkDown("n1", UNEXPECTED_REBOOT_REASON) in out
    assert s.nodes["n1"].reason == UNEXPECTED_REBOOT_REASON and s.flags("n1") == set()


def test_registration_after_resume_timeout_before_the_cycle_noticed(sim) -> None:
    s = sim(
        conf(BASE),
        [PowerNode("n1", NodeBase.IDLE, PD | NodeFlag.POWER_UP, ("batch",))],
        [PowerJob(4, ("n1",))],
    )
    s.advance(1)
    s.now += 61
    out = s.register("n1")
    assert MarkDown("n1", UNEXPECTED_REBOOT_REASON) in out and s.requeued == [4]


def test_resume_timeout_takes_the_highest_partition_value(sim) -> None:
    cfg = conf(
        BASE + "PartitionName=slow Nodes=n1 ResumeTimeout=300\nPartitionName=mid Nodes=n1 ResumeTimeout=120\n"
    )
    s = sim(cfg, [PowerNode("n1", NodeBase.IDLE, PD | NodeFlag.POWER_UP, ("batch", "slow", "mid"))])
    s.advance(1)
    assert s.advance(299).of(MarkDown) == []
    assert s.advance(1).of(MarkDown) == [MarkDown("n1", RESUME_TIMEOUT_REASON)]


def test_no_resume_fail_program_configured(sim) -> None:
    cfg = conf(BASE.replace("ResumeFailProgram=/usr/sbin/slurm_resume_fail\n", ""))
    s = sim(cfg, [PowerNode("n1", NodeBase.IDLE, PD | NodeFlag.POWER_UP, ("batch",))])
    s.advance(1)
    r = s.advance(60)
    assert r.of(MarkDown) and not r.of(ResumeFailed)


def test_powering_down_node_cannot_be_resumed_before_suspend_timeout(sim) -> None:
    cfg = conf(BASE + "SuspendTimeout=100\n")
    s = sim(cfg, [PowerNode("n1", NodeBase.IDLE, 0, ("batch",))])
    s.advance(600)
    assert s.flags("n1") == {"POWERING_DOWN"}
    s.apply([NodeChange("n1", set_flags=NodeFlag.POWER_UP)])
    assert resumed(s.advance(99)) == []
    r = s.advance(1)
    assert resumed(r) == ["n1"] and s.flags("n1") == {"POWERING_UP"}


# --- PowerDownOnIdle --------------------------------------------------------------------------


def test_power_down_on_idle_after_the_last_job(sim) -> None:
    cfg = conf(
        BASE.replace("SuspendTime=600", "SuspendTime=INFINITE")
        + "SuspendExcNodes=c1\nSuspendExcParts=cloud\nSuspendExcStates=CLOUD\n"
        + "NodeName=c[1-2] State=CLOUD\nPartitionName=cloud Nodes=c[1-2] PowerDownOnIdle=YES\n"
    )
    assert not cfg.auto_enabled  # the request does not need automatic power saving
    s = sim(
        cfg,
        [
            PowerNode("c1", NodeBase.IDLE, NodeFlag.CLOUD | NodeFlag.COMPLETING, ("cloud",)),
            PowerNode("n1", NodeBase.IDLE, NodeFlag.COMPLETING, ("batch",)),
        ],
    )
    # Still COMPLETING: not yet.
    assert on_node_idle(cfg, s.nodes["c1"], ["cloud"]) == (NodeChange("c1", set_flags=NodeFlag.POWER_DOWN),)
    s.apply(on_node_idle(cfg, s.nodes["c1"], ["cloud"]))
    assert s.advance(1).of(SuspendNodes) == []  # COMPLETING -> IDLE not reached
    s.apply(
        [NodeChange("c1", clear_flags=NodeFlag.COMPLETING), NodeChange("n1", clear_flags=NodeFlag.COMPLETING)]
    )
    assert on_node_idle(cfg, s.nodes["n1"], ["batch"]) == ()  # PowerDownOnIdle=NO
    # Excluded by node, partition and state, but an explicit request is not affected.
    assert suspended(s.advance(1)) == ["c1"]
    assert s.flags("c1") == {"CLOUD", "POWERING_DOWN"}


def test_power_down_on_idle_needs_power_saving_configured() -> None:
    cfg = conf("NodeName=c1\nPartitionName=cloud Nodes=c1 PowerDownOnIdle=YES\n")
    assert on_node_idle(cfg, PowerNode("c1", NodeBase.IDLE, 0, ("cloud",)), ["cloud"]) == ()


# --- scheduler order -------------------------------------------------------------------------


def test_power_node_order_up_then_powering_up_then_down_by_weight() -> None:
    def view(i: int, weight: int, flags: int) -> NodeView:
        return NodeView(i, f"n{i}", 4, 1000, weight, "IDLE", flags)

    nodes = [
        view(0, 1, PD),
        view(1, 5, 0),
        view(2, 1, NodeFlag.POWERING_UP),
        view(3, 9, PD | NodeFlag.POWER_UP),
        view(4, 1, 0),
        view(5, 3, PD),
        view(6, 2, NodeFlag.POWERING_UP),
    ]
    assert [n.index for n in sorted(nodes, key=power_node_order_key)] == [4, 1, 2, 6, 3, 0, 5]


@given(st.integers(min_value=0, max_value=(1 << 17) - 1), st.integers(1, 3), st.integers(0, 99))
@settings(max_examples=300)
def test_power_node_order_key_is_the_flag_rule(flags: int, weight: int, index: int) -> None:
    """The key on plain ints is the rule written with NodeFlag (the power_save.html order)."""
    f = NodeFlag(flags)
    if f & NodeFlag.POWERING_UP or (f & NodeFlag.POWERED_DOWN and f & NodeFlag.POWER_UP):
        rank = 1
    elif f & (NodeFlag.POWERED_DOWN | NodeFlag.POWERING_DOWN):
        rank = 2
    else:
        rank = 0
    view = NodeView(index, f"n{index}", 4, 1000, weight, "IDLE", flags)
    assert power_node_order_key(view) == (rank, weight, index)


def test_allocation_on_powered_up_nodes_does_not_wait() -> None:
    waits, changes = on_allocation([PowerNode("n1", NodeBase.IDLE, 0)])
    assert not waits and changes == ()
    waits, changes = on_allocation([PowerNode("n1", NodeBase.IDLE, NodeFlag.POWERING_UP)])
    assert waits and changes == ()


def test_count_sets_parse_into_the_cycle_exclusions(sim, nodes) -> None:
    s = sim(conf(BASE), nodes(names(4)))
    s.now = 600
    r = s.cycle(exclusions=Exclusions(parse_exc_nodes("n[1-4]:3")))
    assert suspended(r) == ["n1"]


def test_without_a_resume_program_a_powered_down_node_that_registers_is_up(sim) -> None:
    """No ResumeProgram: nothing but its administrator can have started a State=CLOUD node, so
    its agent's registration brings it up (fsched's load thresholds' example needs this);
    with one configured, booting on its own is still "Node unexpectedly rebooted"."""
    bare = conf("NodeName=c1 CPUs=16 State=CLOUD\nPartitionName=p Nodes=c1 Default=YES\n")
    cloud = PowerNode("c1", NodeBase.IDLE, NodeFlag.CLOUD | NodeFlag.POWERED_DOWN, partitions=("p",))
    s = sim(bare, [cloud])
    out = s.register("c1")
    assert not any(isinstance(d, MarkDown) for d in out)
    assert s.nodes["c1"].base == NodeBase.IDLE and s.flags("c1") == {"CLOUD"}
    s = sim(conf(BASE + "NodeName=c1 CPUs=16 State=CLOUD\n"), [cloud])
    assert MarkDown("c1", UNEXPECTED_REBOOT_REASON) in s.register("c1")


def test_a_node_whose_reboot_was_issued_is_not_suspended(sim) -> None:
    """scontrol reboot (#13 point 8): DOWN+REBOOT_ISSUED waits for its agent, as Slurm's
    _node_state_suspendable() has it, while a plain DOWN node is suspended."""
    nodes = [
        PowerNode("n1", NodeBase.DOWN, NodeFlag.REBOOT_ISSUED, ("batch",)),
        PowerNode("n2", NodeBase.DOWN, 0, ("batch",)),
    ]
    s = sim(conf(BASE), nodes)
    assert suspended(s.advance(10_000)) == ["n2"]
