"""``scontrol reboot`` and ``scontrol cancel_reboot``, and each reboot's course: issued to the
node's agent once the node is idle, done when the agent registers again with a new boot
time, DOWN if that takes longer than ResumeTimeout. The rules are cluster.core.reboots;
the states are written through cluster.services.state.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from cluster import clock, publish, triggers
from cluster.core import hostlists, reboots
from cluster.core.hostlists import fold
from cluster.core.states import NodeBase, NodeFlag
from cluster.models import ClusterConfig, Node
from cluster.services import inputs, rows
from cluster.services.errors import PermissionDenied, ServiceError
from cluster.services.state import refresh_usage, set_node_state
from slurmwords.agent_messages import Reboot

log = logging.getLogger(__name__)

# Slurm's scontrol refuses a reboot when slurm.conf has no RebootProgram.
NO_REBOOT_PROGRAM = "RebootProgram isn't defined"
FIELDS = ("nodes", "asap", "next_state", "reason")
_REBOOT_FIELDS = ("base_state", "flags", "reason", "reason_user", "reason_time")
_REBOOT_FIELDS += ("reboot_next_state", "reboot_undrain", "reboot_issued_at")


@dataclass
class RebootAnswer:
    queued: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def message(self) -> str:
        """Slurm's word for the nodes left alone (their state forbids a reboot)."""
        if not self.skipped:
            return ""
        return f"Skipping reboot of nodes {fold(self.skipped)} due to current node state."


def _epoch(dt: datetime | None) -> float | None:
    return dt.timestamp() if dt is not None else None


def _view(node: Node) -> reboots.RebootNode:
    return reboots.RebootNode(
        name=node.name,
        base=NodeBase(node.base_state),
        flags=node.flags,
        reason=node.reason,
        next_state=node.reboot_next_state,
        undrain=node.reboot_undrain,
        issued_at=_epoch(node.reboot_issued_at),
    )


def _apply(node: Node, change: reboots.Change, *, now: datetime, user: str = "slurm") -> None:
    """Write ``change`` on the locked ``node`` (saved here)."""
    if change.next_state is not None:
        node.reboot_next_state = change.next_state
    if change.undrain is not None:
        node.reboot_undrain = change.undrain
    if change.issued_at is not None:
        node.reboot_issued_at = datetime.fromtimestamp(change.issued_at, UTC)
    if change.clear_issued_at:
        node.reboot_issued_at = None
    set_node_state(
        node, base=change.base, add=change.add, remove=change.remove, reason=change.reason, user=user, now=now
    )
    node.save(update_fields=list(_REBOOT_FIELDS))


def reboot_program_defined(cfg: ClusterConfig | None = None) -> bool:
    cfg = cfg or ClusterConfig.current()
    return any(k.lower() == "rebootprogram" and str(v).strip() for k, v in cfg.options.items())


def _names(nodes: object) -> list[str]:
    """``ALL`` or a hostlist of existing nodes (as scontrol update NodeName= checks it)."""
    text = inputs.text(nodes, "nodes", max_length=hostlists.MAX_TEXT, blank_ok=False).strip()
    if text.upper() == "ALL":
        return list(Node.objects.order_by("name").values_list("name", flat=True))
    names = inputs.hostlist(text, "nodes", limit=max(Node.objects.count(), 1))
    found = set(Node.objects.filter(name__in=names).values_list("name", flat=True))
    missing = [n for n in names if n not in found]
    if missing:
        raise ServiceError(f"Invalid node name specified: {fold(missing)}", field="nodes")
    return names


@transaction.atomic
def node_reboot(
    *,
    actor: AbstractBaseUser,
    nodes: object,
    asap: object = False,
    next_state: object = "",
    reason: object = None,
    now: datetime | None = None,
) -> RebootAnswer:
    """``scontrol reboot [ASAP] [nextstate={RESUME|DOWN}] [reason=] {ALL|<NodeList>}``."""
    if not actor.is_staff:
        raise PermissionDenied("Access/permission denied")
    if not reboot_program_defined():
        raise ServiceError(NO_REBOOT_PROGRAM)
    asap = inputs.flag(asap, "asap")
    state = inputs.text(next_state or "", "next_state", max_length=16).strip().upper()
    if state and state not in reboots.NEXT_STATES:
        raise ServiceError(f"Invalid state: {state}\n Valid states: DOWN, RESUME", field="next_state")
    why = "" if reason is None else inputs.text(reason, "reason", max_length=256).strip()
    names = _names(nodes)
    now = now or clock.now()
    who = actor.get_username()
    answer = RebootAnswer()
    for node in Node.objects.select_for_update().filter(name__in=names).order_by("name"):
        view = _view(node)
        if not reboots.may_reboot(view):
            answer.skipped.append(node.name)
            continue
        _apply(node, reboots.request(view, asap=asap, next_state=state, reason=why), now=now, user=who)
        answer.queued.append(node.name)
    if answer.queued:
        log.info("reboot request queued for nodes %s", ",".join(answer.queued))
        reboot_pass(now=now, names=answer.queued)
        publish.console_changed("nodes")
        triggers.schedule_after_commit()
    return answer


@transaction.atomic
def node_cancel_reboot(*, actor: AbstractBaseUser, nodes: object, now: datetime | None = None) -> list[str]:
    """``scontrol cancel_reboot <NodeList>`` (and ``update State=CANCEL_REBOOT``)."""
    if not actor.is_staff:
        raise PermissionDenied("Access/permission denied")
    names = _names(nodes)
    now = now or clock.now()
    locked = list(Node.objects.select_for_update().filter(name__in=names).order_by("name"))
    changes = []
    for node in locked:
        try:
            changes.append((node, reboots.cancel(_view(node))))
        except ValueError as exc:
            if node.flags & NodeFlag.REBOOT_ISSUED:
                raise ServiceError("Reboot already in progress") from None
            raise ServiceError(str(exc)) from None
    for node, change in changes:
        _apply(node, change, now=now, user=actor.get_username())
    refresh_usage(names)
    publish.console_changed("nodes")
    triggers.schedule_after_commit()
    return names


def reboot_pass(*, now: datetime | None = None, names: Iterable[str] | None = None) -> list[str]:
    """Issue the reboots whose nodes are idle now, and put DOWN the nodes that have not
    come back within ResumeTimeout. The caller holds a transaction. The nodes issued."""
    now = now or clock.now()
    t = now.timestamp()
    wanted = NodeFlag.REBOOT_REQUESTED | NodeFlag.REBOOT_ISSUED
    where = None if names is None else {"name": sorted(names)}
    candidates = [n for n, flags in rows.select(Node, ("name", "flags"), where) if flags & wanted]
    if not candidates:
        return []
    resume_timeout = ClusterConfig.current().option_int("ResumeTimeout", 60)
    issued, commands = [], []
    for node in Node.objects.select_for_update().filter(name__in=candidates).order_by("name"):
        view = _view(node)
        if reboots.due(view):
            _apply(node, reboots.issue(view, t), now=now)
            issued.append(node.name)
            commands.append((node.name, Reboot(node=node.name).to_wire()))
        elif reboots.timed_out(view, t, resume_timeout):
            log.error("node %s did not reboot within ResumeTimeout (%ds)", node.name, resume_timeout)
            _apply(node, reboots.time_out(view), now=now)
    if issued:
        log.info("reboot issued to nodes %s", ",".join(issued))
        publish.to_agents(commands)
        publish.console_changed("nodes")
    return issued


def reboot_registration(node: Node, *, boot_time: float | None, now: datetime) -> bool:
    """An agent registers ``node`` (a locked row, saved here when it changes): after an
    issued reboot, with a later boot time, the node takes its next state. True then."""
    view = _view(node)
    if not reboots.rebooted(view, boot_time):
        return False
    log.info("node %s returned to service after its reboot", node.name)
    _apply(node, reboots.back(view), now=now)
    return True


def agent_reboot_done(*, node: str, exit_code: int, error: str = "") -> None:
    """The node's RebootProgram ended and its agent lives on: a failure is logged (the
    node waits, as in Slurm, and is DOWN after ResumeTimeout unless it comes back)."""
    if exit_code == 0:
        log.info("node %s: RebootProgram exited 0; waiting for the node to register again", node)
    else:
        log.error("node %s: RebootProgram failed (exit %d)%s", node, exit_code, f": {error}" if error else "")
