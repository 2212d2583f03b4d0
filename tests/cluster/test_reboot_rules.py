"""The pure rules of ``scontrol reboot`` (cluster.core.reboots, #13 point 8): no database."""

from __future__ import annotations

import pytest

from cluster.core import reboots
from cluster.core.reboots import RebootNode
from cluster.core.states import NodeBase, NodeFlag

F = NodeFlag


def node(base: NodeBase = NodeBase.IDLE, flags: int = 0, **kw) -> RebootNode:
    return RebootNode("n1", base, flags, **kw)


def test_reasons_are_appended_once_as_slurm_does():
    assert reboots.append_reason("", "reboot issued") == "reboot issued"
    assert reboots.append_reason("new kernel", "reboot issued") == "new kernel : reboot issued"
    assert reboots.append_reason("x : reboot issued", "reboot issued") == "x : reboot issued"


@pytest.mark.parametrize(
    ("base", "flags", "allowed"),
    [
        (NodeBase.IDLE, 0, True),
        (NodeBase.MIXED, 0, True),
        (NodeBase.DOWN, F.NOT_RESPONDING, True),
        (NodeBase.FUTURE, 0, False),
        (NodeBase.IDLE, F.REBOOT_REQUESTED, False),
        (NodeBase.DOWN, F.REBOOT_ISSUED, False),
        (NodeBase.IDLE, F.POWER_DOWN, False),
        (NodeBase.IDLE, F.CLOUD | F.POWERED_DOWN, False),
        (NodeBase.IDLE, F.POWERING_DOWN, False),
    ],
)
def test_which_nodes_may_be_rebooted(base, flags, allowed):
    assert reboots.may_reboot(node(base, flags)) is allowed


def test_a_request_keeps_a_reason_given_before_and_asap_drains_once():
    assert reboots.request(node(), asap=False, next_state="", reason="").reason == "reboot requested"
    assert reboots.request(node(reason="disk"), asap=False, next_state="", reason="").reason == "disk"
    asap = reboots.request(node(), asap=True, next_state="DOWN", reason="")
    assert (asap.add, asap.reason, asap.undrain, asap.next_state) == (
        F.REBOOT_REQUESTED | F.DRAIN, "Reboot ASAP", True, "DOWN"
    )  # fmt: skip
    drained = reboots.request(node(flags=F.DRAIN, reason="bad"), asap=True, next_state="", reason="")
    assert (drained.undrain, drained.reason) == (False, "bad")  # an administrator's drain stays


@pytest.mark.parametrize(
    ("base", "flags", "due"),
    [
        (NodeBase.IDLE, F.REBOOT_REQUESTED, True),
        (NodeBase.DOWN, F.REBOOT_REQUESTED | F.NOT_RESPONDING, True),
        (NodeBase.IDLE, F.REBOOT_REQUESTED | F.DRAIN, True),
        (NodeBase.MIXED, F.REBOOT_REQUESTED, False),
        (NodeBase.IDLE, F.REBOOT_REQUESTED | F.COMPLETING, False),
        (NodeBase.IDLE, F.REBOOT_REQUESTED | F.NOT_RESPONDING, False),
        (NodeBase.IDLE, F.REBOOT_REQUESTED | F.POWERING_UP, False),
        (NodeBase.UNKNOWN, F.REBOOT_REQUESTED, False),
        (NodeBase.IDLE, 0, False),
    ],
)
def test_a_reboot_is_issued_once_the_node_is_idle_or_down(base, flags, due):
    assert reboots.due(node(base, flags)) is due


def test_issue_time_out_and_return():
    issued = reboots.issue(node(flags=F.REBOOT_REQUESTED, reason="reboot requested"), 100.0)
    assert (issued.base, issued.add, issued.remove, issued.reason, issued.issued_at) == (
        NodeBase.DOWN, F.REBOOT_ISSUED, F.REBOOT_REQUESTED, "reboot requested : reboot issued", 100.0
    )  # fmt: skip
    waiting = node(NodeBase.DOWN, F.REBOOT_ISSUED, reason="r", issued_at=100.0)
    assert not reboots.timed_out(waiting, 160.0, 60) and reboots.timed_out(waiting, 160.5, 60)
    assert reboots.time_out(waiting).reason == "r : reboot timed out"
    assert not reboots.rebooted(waiting, 99.0) and not reboots.rebooted(waiting, None)
    assert reboots.rebooted(waiting, 101.0)
    assert reboots.back(waiting).base is NodeBase.IDLE and reboots.back(waiting).reason == ""
    down = reboots.back(node(NodeBase.DOWN, F.REBOOT_ISSUED | F.DRAIN, reason="r", next_state="DOWN"))
    assert (down.base, down.remove, down.reason) == (
        NodeBase.DOWN, F.REBOOT_ISSUED | F.DRAIN, "r : reboot complete"
    )  # fmt: skip
    kept = reboots.back(node(NodeBase.DOWN, F.REBOOT_ISSUED | F.DRAIN, reason="disk"))
    assert (kept.remove, kept.reason) == (F.REBOOT_ISSUED, "disk")  # drained before: stays drained


def test_cancel_undoes_only_an_asap_drain():
    asap = reboots.cancel(
        node(NodeBase.MIXED, F.REBOOT_REQUESTED | F.DRAIN, undrain=True, reason="Reboot ASAP")
    )
    assert (asap.remove, asap.reason) == (F.REBOOT_REQUESTED | F.DRAIN, "")
    plain = reboots.cancel(node(NodeBase.MIXED, F.REBOOT_REQUESTED | F.DRAIN, reason="disk"))
    assert (plain.remove, plain.reason) == (F.REBOOT_REQUESTED, None)
    with pytest.raises(ValueError, match="Invalid node state transition"):
        reboots.cancel(node(NodeBase.DOWN, F.REBOOT_ISSUED))
