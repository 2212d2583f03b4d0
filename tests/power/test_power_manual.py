"""Manual power saving (Slurm's power_save.html, "Manual Power Saving"): scontrol power /
State=... as pure transitions, carried out by the cycle with a moving clock."""

from __future__ import annotations

import pytest

from cluster.core.states import JobState, NodeBase, NodeFlag, is_usable
from power.core.policy import (
    POWER_DRAIN,
    CancelJobs,
    NodeChange,
    PowerCommand,
    PowerJob,
    PowerNode,
    PowerRequestError,
    RequeueJobs,
    ResumeNodes,
    SuspendNodes,
    drain_change,
    parse_power_command,
    power_request,
)

from .conftest import BASE, conf  # type: ignore[import-not-found]

PD = NodeFlag.POWERED_DOWN
NO_AUTO = BASE.replace("SuspendTime=600", "SuspendTime=INFINITE")


def request(s, name: str, op: str, **kw):
    out = power_request(s.cfg, s.nodes[name], list(s.jobs.values()), op=op, now=s.now, **kw)
    s.apply(out.decisions)
    return out


# --- the command ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (["down", "n[1-4]"], PowerCommand("POWER_DOWN", "n[1-4]")),
        (["down", "asap", "ALL", "Reason=maint"], PowerCommand("POWER_DOWN_ASAP", "ALL", None, "maint")),
        (["DOWN", "force", "n1", "Action=off"], PowerCommand("POWER_DOWN_FORCE", "n1", "off")),
        (["up", "n[1-2],c3"], PowerCommand("POWER_UP", "n[1-2],c3")),
        (["up", "force", "n1", "action=wake"], PowerCommand("POWER_UP_FORCE", "n1", "wake")),
    ],
)
def test_parse_power_command(words: list[str], expected: PowerCommand) -> None:
    assert parse_power_command(words) == expected
    assert expected.all_nodes == (expected.nodes == "ALL")


@pytest.mark.parametrize(
    ("words", "message"),
    [
        ([], "usage"),
        (["sideways", "n1"], "usage"),
        (["up", "n1", "Reason=x"], "Reason= is only accepted for power down"),
        (["up", "asap", "n1"], "asap is only valid for power down"),
        (["down"], "a node list (or ALL) is required"),
        (["down", "Action=x"], "a node list (or ALL) is required"),
        (["down", "n1", "Action="], "Action= needs a PowerAction name"),
        (["down", "n1", "Colour=red"], "unknown option Colour="),
        (["down", "n1", "extra"], "unexpected argument"),
    ],
)
def test_parse_power_command_errors(words: list[str], message: str) -> None:
    with pytest.raises(PowerRequestError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_power_command(words)


def test_request_validation() -> None:
    cfg = conf(BASE)
    node = PowerNode("n1", NodeBase.IDLE, PD)
    with pytest.raises(PowerRequestError, match="no such PowerAction"):
        power_request(cfg, node, op="POWER_UP", now=0, action="nope")
    with pytest.raises(PowerRequestError, match="power up actions must use Location=slurmctld"):
        power_request(cfg, node, op="POWER_UP", now=0, action="node_suspend")
    with pytest.raises(PowerRequestError, match="Reason= is only accepted for power down"):
        power_request(cfg, node, op="POWER_UP", now=0, reason="x")
    with pytest.raises(PowerRequestError, match="invalid node state"):
        power_request(cfg, node, op="POWER_SIDEWAYS", now=0)


# --- power down -----------------------------------------------------------------------------


def test_power_down_runs_the_requested_action_and_ignores_exclusions(sim, nodes) -> None:
    cfg = conf(NO_AUTO + "SuspendExcNodes=n[1-2]\nSuspendExcParts=batch\n")
    s = sim(cfg, nodes(["n1", "n2"]))
    request(s, "n1", "POWER_DOWN", action="node_suspend", reason="saving power")
    request(s, "n2", "POWER_DOWN")
    assert s.flags("n1") == {"POWER_DOWN"} and s.nodes["n1"].reason == "saving power"
    r = s.advance(1)
    by_node = {n: d.program for d in r.of(SuspendNodes) for n in d.nodes}
    assert by_node["n1"] is cfg.actions["node_suspend"] and by_node["n2"] is cfg.suspend_program
    assert [i.host for i in by_node["n1"].invocations(["n1"])] == ["n1"]  # slurmd: on the node
    assert s.nodes["n1"].power_action is None  # used once
    assert s.with_flags(NodeFlag.POWERING_DOWN) == ["n1", "n2"]


def test_power_down_waits_for_running_jobs(sim) -> None:
    s = sim(
        conf(NO_AUTO),
        [PowerNode("n1", NodeBase.ALLOCATED, 0, ("batch",))],
        [PowerJob(5, ("n1",), state="RUNNING")],
    )
    request(s, "n1", "POWER_DOWN")
    assert not is_usable(s.nodes["n1"].base, s.nodes["n1"].flags)  # no new jobs meanwhile
    assert s.advance(100).of(SuspendNodes) == []
    del s.jobs[5]
    s.nodes["n1"] = NodeChange("n1", base=NodeBase.IDLE).apply(s.nodes["n1"])
    assert s.advance(1).of(SuspendNodes) == [SuspendNodes(("n1",), s.cfg.suspend_program)]


def test_power_down_keeps_an_existing_drain_unless_idle_on_node_suspend(sim) -> None:
    for extra, drained in (("", True), ("SlurmctldParameters=idle_on_node_suspend\n", False)):
        s = sim(conf(NO_AUTO + extra), [PowerNode("n1", NodeBase.DOWN, NodeFlag.DRAIN, ("batch",))])
        request(s, "n1", "POWER_DOWN")
        s.advance(1)
        assert bool(s.nodes["n1"].flags & NodeFlag.DRAIN) is drained
        assert s.nodes["n1"].base == (NodeBase.DOWN if drained else NodeBase.IDLE)


def test_power_down_of_a_powering_down_node_only_changes_its_state(sim, nodes) -> None:
    s = sim(conf(BASE), nodes(["n1"]))
    s.advance(600)
    out = request(s, "n1", "POWER_DOWN")
    assert "after SuspendTimeout" in out.message and s.flags("n1") == {"POWERING_DOWN", "POWER_DOWN"}
    assert s.advance(10).of(SuspendNodes) == []  # no second suspend
    s.advance(20)
    assert s.flags("n1") == {"POWERED_DOWN"}


def test_power_down_of_a_powered_down_node(sim) -> None:
    s = sim(conf(BASE), [PowerNode("n1", NodeBase.IDLE, PD, ("batch",))])
    out = request(s, "n1", "POWER_DOWN")
    assert out.decisions == () and "already powered down" in out.message


def test_power_down_asap_drains_then_undrains_when_powering_down(sim) -> None:
    s = sim(
        conf(NO_AUTO),
        [PowerNode("n1", NodeBase.ALLOCATED, 0, ("batch",))],
        [PowerJob(1, ("n1",), state="RUNNING")],
    )
    request(s, "n1", "POWER_DOWN_ASAP")
    assert s.flags("n1") == {"DRAIN", "POWER_DOWN"} and s.nodes["n1"].flags & POWER_DRAIN
    assert s.advance(60).of(SuspendNodes) == []  # running job completes first
    del s.jobs[1]
    s.nodes["n1"] = NodeChange("n1", base=NodeBase.IDLE).apply(s.nodes["n1"])
    s.advance(1)
    assert s.flags("n1") == {"POWERING_DOWN"}  # the ASAP drain ended with powering down


def test_power_down_asap_keeps_an_administrator_drain(sim, nodes) -> None:
    # Drained before the request.
    s = sim(conf(NO_AUTO), [PowerNode("n1", NodeBase.IDLE, NodeFlag.DRAIN, ("batch",))])
    request(s, "n1", "POWER_DOWN_ASAP")
    assert not s.nodes["n1"].flags & POWER_DRAIN
    s.advance(1)
    assert s.flags("n1") == {"DRAIN", "POWERING_DOWN"}
    # Drained by an administrator while the power down is pending.
    s = sim(conf(NO_AUTO), [PowerNode("n2", NodeBase.ALLOCATED, 0, ("batch",))], [PowerJob(2, ("n2",))])
    request(s, "n2", "POWER_DOWN_ASAP")
    s.apply([drain_change(s.nodes["n2"], "bad disk")])
    del s.jobs[2]
    s.nodes["n2"] = NodeChange("n2", base=NodeBase.IDLE).apply(s.nodes["n2"])
    s.advance(1)
    assert s.flags("n2") == {"DRAIN", "POWERING_DOWN"} and s.nodes["n2"].reason == "bad disk"


def test_power_down_force_requeues_or_cancels_and_resets_to_idle(sim) -> None:
    s = sim(
        conf(NO_AUTO),
        [PowerNode("n1", NodeBase.ALLOCATED, NodeFlag.COMPLETING, ("batch",))],
        [PowerJob(1, ("n1",), state="RUNNING"), PowerJob(2, ("n1",), state="RUNNING", requeue=False)],
    )
    out = request(s, "n1", "POWER_DOWN_FORCE")
    assert RequeueJobs((1,), "Node power down forced") in out.decisions
    assert CancelJobs((2,), "Node power down forced") in out.decisions
    assert s.nodes["n1"].base == NodeBase.IDLE and s.flags("n1") == {"POWER_DOWN"}
    assert s.advance(1).of(SuspendNodes) == [SuspendNodes(("n1",), s.cfg.suspend_program)]


def test_power_down_requests_go_first_within_suspend_rate(sim, nodes) -> None:
    s = sim(conf(BASE + "SuspendRate=2\n"), nodes(["n1", "n2", "n3", "n4"]))
    s.now = 700
    request(s, "n4", "POWER_DOWN")
    r = s.cycle()
    assert [n for d in r.of(SuspendNodes) for n in d.nodes] == ["n4", "n1"]
    assert r.deferred_suspends == ("n2", "n3")


# --- power up -------------------------------------------------------------------------------


def test_power_up_resumes_with_the_requested_action(sim) -> None:
    cfg = conf(BASE)
    s = sim(cfg, [PowerNode(n, NodeBase.IDLE, PD, ("batch",)) for n in ("n1", "n2")])
    request(s, "n1", "POWER_UP", action="cloud_resume")
    request(s, "n2", "POWER_UP")
    r = s.advance(1)
    assert sorted((d.nodes, d.program.action if d.program else None) for d in r.of(ResumeNodes)) == [
        (("n1",), "cloud_resume"),
        (("n2",), None),
    ]
    assert s.with_flags(NodeFlag.POWERING_UP) == ["n1", "n2"]


def test_power_up_of_a_powering_up_node_waits_for_resume_timeout(sim) -> None:
    s = sim(conf(BASE), [PowerNode("n1", NodeBase.IDLE, PD | NodeFlag.POWER_UP, ("batch",))])
    s.advance(1)
    out = request(s, "n1", "POWER_UP")
    assert "ResumeTimeout" in out.message and s.flags("n1") == {"POWERING_UP", "POWER_UP"}
    assert s.advance(59).of(ResumeNodes) == []
    r = s.advance(1)  # ResumeTimeout: DOWN, and the pending request resumes it again
    assert [d.nodes for d in r.of(ResumeNodes)] == [("n1",)]
    assert s.nodes["n1"].base == NodeBase.DOWN and s.flags("n1") == {"POWERING_UP"}


def test_power_up_cancels_a_pending_power_down(sim, nodes) -> None:
    s = sim(conf(NO_AUTO), [PowerNode("n1", NodeBase.ALLOCATED, 0, ("batch",))], [PowerJob(1, ("n1",))])
    request(s, "n1", "POWER_DOWN_ASAP")
    out = request(s, "n1", "POWER_UP")
    assert "cancelled" in out.message and s.flags("n1") == set()


def test_power_up_of_a_powered_up_node_is_a_no_op(sim, nodes) -> None:
    s = sim(conf(BASE), nodes(["n1"]))
    out = request(s, "n1", "POWER_UP")
    assert out.decisions == () and "already powered up" in out.message


def test_power_up_force_on_a_running_node(sim) -> None:
    s = sim(
        conf(NO_AUTO),
        [
            PowerNode("n1", NodeBase.ALLOCATED, 0, ("batch",)),
            PowerNode("n2", NodeBase.ALLOCATED, NodeFlag.DRAIN, ("batch",)),
        ],
        [PowerJob(1, ("n1", "n2"), state=JobState.RUNNING)],
    )
    request(s, "n1", "POWER_DOWN_ASAP")  # drain set by the request: removed by up force
    s.now = 10
    out = request(s, "n1", "POWER_UP_FORCE")
    assert RequeueJobs((1,), "Node power up forced") in out.decisions
    assert s.flags("n1") == {"POWERED_DOWN", "POWER_UP"} and s.nodes["n1"].base == NodeBase.IDLE
    request(s, "n2", "POWER_UP_FORCE")
    assert s.flags("n2") == {"DRAIN", "POWERED_DOWN", "POWER_UP"}  # an admin drain is kept
    assert sorted(n for d in s.advance(1).of(ResumeNodes) for n in d.nodes) == ["n1", "n2"]


# --- RESUME ---------------------------------------------------------------------------------


def test_resume_of_a_down_node_sets_no_respond(sim) -> None:
    s = sim(conf(BASE), [PowerNode("n1", NodeBase.DOWN, NodeFlag.DRAIN, ("batch",), reason="broken")])
    request(s, "n1", "RESUME")
    assert s.nodes["n1"].base == NodeBase.IDLE and s.flags("n1") == {"NOT_RESPONDING"}
    assert s.nodes["n1"].reason == ""


def test_resume_of_a_powered_down_node_does_not_set_no_respond(sim) -> None:
    s = sim(conf(BASE), [PowerNode("n1", NodeBase.DOWN, PD, ("batch",))])
    request(s, "n1", "RESUME")
    assert s.nodes["n1"].base == NodeBase.IDLE and s.flags("n1") == {"POWERED_DOWN"}
    assert is_usable(s.nodes["n1"].base, s.nodes["n1"].flags)


def test_resume_clears_powering_down_and_makes_the_node_allocatable(sim, nodes) -> None:
    s = sim(conf(BASE + "SuspendTimeout=300\n"), nodes(["n1"]))
    s.advance(600)
    assert not is_usable(s.nodes["n1"].base, s.nodes["n1"].flags)
    request(s, "n1", "RESUME")
    assert s.flags("n1") == {"POWERED_DOWN"}  # no NoResp, no wait for SuspendTimeout
    assert is_usable(s.nodes["n1"].base, s.nodes["n1"].flags)


def test_resume_of_an_idle_node_is_refused(sim, nodes) -> None:
    s = sim(conf(BASE), nodes(["n1"]))
    with pytest.raises(PowerRequestError, match="Invalid node state specified"):
        request(s, "n1", "RESUME")
