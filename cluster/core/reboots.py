"""``scontrol reboot``'s rules, as Slurm's scontrol(1) describes them. Pure: no Django, the
caller passes the clock.

* A request flags the node REBOOT_REQUESTED (sinfo ``boot``, ``mix@``) with a reason
  (``reboot requested`` unless one is given or set). ``ASAP`` also drains it (reason
  ``Reboot ASAP``) and the drain is undone after the reboot. Without ASAP new jobs may
  still start there. Nodes FUTURE, powered down (or going to be), or already rebooting
  are skipped.
* The reboot is issued once the node is idle (or DOWN): it becomes DOWN+REBOOT_ISSUED
  (``boot^``), the reason gets `` : reboot issued``, and its agent runs RebootProgram.
* The node comes back when its agent registers with a boot time later than the issue:
  REBOOT_ISSUED goes, the node takes ``nextstate`` (DOWN with `` : reboot complete``, or
  back to service), and a drain is lifted when nextstate was given or ASAP set it.
* A node that has not come back within ResumeTimeout is DOWN, `` : reboot timed out``.
"""

from __future__ import annotations

from dataclasses import dataclass

from cluster.core.states import NodeBase, NodeFlag

REBOOT_REQUESTED_REASON = "reboot requested"
REBOOT_ASAP_REASON = "Reboot ASAP"
REBOOT_ISSUED_REASON = "reboot issued"
REBOOT_COMPLETE_REASON = "reboot complete"
REBOOT_TIMED_OUT_REASON = "reboot timed out"
NEXT_STATES = ("RESUME", "DOWN")

# A node in one of these is not rebooted (scontrol(1): "The reboot request will be ignored
# for hosts in the following states").
_SKIP_FLAGS = (
    NodeFlag.REBOOT_REQUESTED
    | NodeFlag.REBOOT_ISSUED
    | NodeFlag.POWER_DOWN
    | NodeFlag.POWERED_DOWN
    | NodeFlag.POWERING_DOWN
)


@dataclass(frozen=True)
class RebootNode:
    """What the rules read of a node."""

    name: str
    base: NodeBase
    flags: int
    reason: str = ""
    next_state: str = ""  # "", RESUME or DOWN
    undrain: bool = False  # ASAP drained it
    issued_at: float | None = None  # epoch seconds


@dataclass(frozen=True)
class Change:
    """A node's move: the base state (None: unchanged), flags, reason, and the reboot
    fields to store."""

    name: str
    base: NodeBase | None = None
    add: NodeFlag = NodeFlag.NONE
    remove: NodeFlag = NodeFlag.NONE
    reason: str | None = None
    next_state: str | None = None
    undrain: bool | None = None
    issued_at: float | None = None
    clear_issued_at: bool = False


def append_reason(reason: str, message: str) -> str:
    """Slurm's way of adding to a node's reason: ``old : message``, once."""
    if not reason:
        return message
    if f" : {message}" in reason:
        return reason
    return f"{reason} : {message}"


def may_reboot(node: RebootNode) -> bool:
    return node.base is not NodeBase.FUTURE and not node.flags & _SKIP_FLAGS


def request(node: RebootNode, *, asap: bool, next_state: str, reason: str) -> Change:
    """``scontrol reboot [ASAP] [nextstate=] [reason=]`` for a node that :func:`may_reboot`."""
    add = NodeFlag.REBOOT_REQUESTED
    undrain = False
    new_reason = reason or node.reason
    if asap:
        # ASAP drains so that no new job starts; the drain is its own, undone later,
        # unless the node was drained already.
        undrain = not node.flags & NodeFlag.DRAIN
        add |= NodeFlag.DRAIN
        new_reason = new_reason or REBOOT_ASAP_REASON
    return Change(
        node.name,
        add=add,
        reason=new_reason or REBOOT_REQUESTED_REASON,
        next_state=next_state,
        undrain=undrain,
    )


def due(node: RebootNode) -> bool:
    """Whether a requested reboot is issued now: the node is idle (nothing running or
    completing, responding, not powering up) or DOWN."""
    if not node.flags & NodeFlag.REBOOT_REQUESTED or node.flags & NodeFlag.REBOOT_ISSUED:
        return False
    if node.flags & NodeFlag.COMPLETING:
        return False
    if node.base is NodeBase.DOWN:
        return True
    return node.base is NodeBase.IDLE and not node.flags & (NodeFlag.NOT_RESPONDING | NodeFlag.POWERING_UP)


def issue(node: RebootNode, now: float) -> Change:
    return Change(
        node.name,
        base=NodeBase.DOWN,
        add=NodeFlag.REBOOT_ISSUED,
        remove=NodeFlag.REBOOT_REQUESTED,
        reason=append_reason(node.reason, REBOOT_ISSUED_REASON),
        issued_at=now,
    )


def timed_out(node: RebootNode, now: float, resume_timeout: int) -> bool:
    return bool(
        node.flags & NodeFlag.REBOOT_ISSUED
        and node.issued_at is not None
        and now > node.issued_at + resume_timeout
    )


def time_out(node: RebootNode) -> Change:
    # The drain an administrator set stays (Slurm does not remove it either).
    return Change(
        node.name,
        base=NodeBase.DOWN,
        remove=NodeFlag.REBOOT_ISSUED | NodeFlag.POWERING_UP,
        reason=append_reason(node.reason, REBOOT_TIMED_OUT_REASON),
        next_state="",
        undrain=False,
        clear_issued_at=True,
    )


def rebooted(node: RebootNode, boot_time: float | None) -> bool:
    """Whether a registration shows the reboot happened: a boot time after the issue.
    One from before (an agent that reconnected without restarting) is still waiting."""
    if not node.flags & NodeFlag.REBOOT_ISSUED:
        return False
    if node.issued_at is None:
        return True
    return boot_time is not None and boot_time > node.issued_at


def back(node: RebootNode) -> Change:
    """The node registered after its reboot: it takes its next state."""
    remove = NodeFlag.REBOOT_ISSUED
    if node.next_state or node.undrain:
        remove |= NodeFlag.DRAIN
    if node.next_state == "DOWN":
        base, reason = NodeBase.DOWN, append_reason(node.reason, REBOOT_COMPLETE_REASON)
    else:
        # Back to service (jobs recount it IDLE/MIXED). Slurm keeps the reboot's reason
        # until a job is allocated there; a node that stays drained keeps it, the others
        # lose it now (fsched does not clear reasons at allocation).
        still_drained = node.flags & NodeFlag.DRAIN and not remove & NodeFlag.DRAIN
        base, reason = NodeBase.IDLE, (node.reason if still_drained else "")
    return Change(
        node.name,
        base=base,
        remove=remove,
        reason=reason,
        next_state="",
        undrain=False,
        clear_issued_at=True,
    )


def cancel(node: RebootNode) -> Change:
    """``scontrol cancel_reboot``: only a reboot not issued yet; an ASAP drain is undone
    and its reason cleared."""
    if not node.flags & NodeFlag.REBOOT_REQUESTED:
        raise ValueError("Invalid node state transition")
    remove = NodeFlag.REBOOT_REQUESTED
    reason = None
    if node.undrain:
        remove |= NodeFlag.DRAIN
        reason = ""
    return Change(node.name, remove=remove, reason=reason, next_state="", undrain=False)


__all__ = [
    "NEXT_STATES",
    "REBOOT_ASAP_REASON",
    "REBOOT_COMPLETE_REASON",
    "REBOOT_ISSUED_REASON",
    "REBOOT_REQUESTED_REASON",
    "REBOOT_TIMED_OUT_REASON",
    "Change",
    "RebootNode",
    "append_reason",
    "back",
    "cancel",
    "due",
    "issue",
    "may_reboot",
    "rebooted",
    "request",
    "time_out",
    "timed_out",
]
