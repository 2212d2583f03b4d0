"""Node operations: scontrol update NodeName=..., usage bookkeeping, node failure."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from auditlog.context import set_actor
from ClusterShell.NodeSet import NodeSet
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from cluster import publish, triggers
from cluster.models import Event, Job, Node
from cluster.services import inputs, rows
from cluster.services.errors import PermissionDenied, ServiceError
from cluster.services.jobs import end_job, record_transition, requeue_now
from cluster.states import HOLDING_JOB_STATES, JobState, NodeBase, NodeFlag, Reason

log = logging.getLogger(__name__)

NOT_RESPONDING_REASON = "Not responding"


def refresh_usage(names: Iterable[str] | None = None) -> None:
    """Recompute allocated CPUs/memory and IDLE/MIXED/ALLOCATED from the jobs holding nodes.

    Derived from the jobs, never counted up and down, so it cannot drift. The nodes are
    locked (in name order) before the jobs are read: on PostgreSQL two transactions ending
    two jobs that shared a node each read the other's job as still running, and both
    wrote the node MIXED. Holding the node's lock, the later one reads the jobs once the
    earlier has committed.
    """
    fields = ("name", "cpus", "alloc_cpus", "alloc_mem", "base_state", "last_busy")
    where = None if names is None else {"name": sorted(names)}
    nodes = rows.load(Node, fields, where, order_by=("name",), for_update=True)
    usage: dict[str, list[int]] = {}
    for (alloc,) in rows.select(Job, ("alloc",), {"state": [s.value for s in HOLDING_JOB_STATES]}):
        for node, (cpus, mem) in alloc.items():
            entry = usage.setdefault(node, [0, 0])
            entry[0] += cpus
            entry[1] += mem
    changed = []
    for node in nodes:
        cpus, mem = usage.get(node.name, (0, 0))
        base = NodeBase(node.base_state)
        if base in (NodeBase.IDLE, NodeBase.MIXED, NodeBase.ALLOCATED):
            base = (
                NodeBase.IDLE if cpus == 0 else (NodeBase.ALLOCATED if cpus >= node.cpus else NodeBase.MIXED)
            )
        if (node.alloc_cpus, node.alloc_mem, node.base_state) != (cpus, mem, base):
            if cpus and not node.alloc_cpus:
                node.last_busy = timezone.now()
            node.alloc_cpus, node.alloc_mem, node.base_state = cpus, mem, base
            changed.append(node)
    if changed:
        rows.update_rows(changed, ["alloc_cpus", "alloc_mem", "base_state", "last_busy"])
        publish.console_changed("nodes")


def _set_state(
    node: Node,
    *,
    base: NodeBase | None = None,
    add: NodeFlag = NodeFlag.NONE,
    remove: NodeFlag = NodeFlag.NONE,
    reason: str | None = None,
    user: str = "",
    now: datetime,
) -> None:
    old = node.state
    if base is not None:
        node.base_state = base
    node.flags = (node.flags | add) & ~remove
    if reason is not None:
        node.reason = reason
        node.reason_user = user if reason else ""
        node.reason_time = now if reason else None
    record_node_transition(node, old, now=now, user=user)


def record_node_transition(
    node: Node, old: str, *, now: datetime, user: str = "", detail: dict[str, Any] | None = None
) -> None:
    """One row of the node's history when its shown state changed (the console's
    timeline and the power reports read these)."""
    if node.state != old:
        Event.objects.create(
            time=now,
            kind=Event.Kind.NODE,
            node=node.name,
            old_state=old,
            new_state=node.state,
            reason=node.reason,
            user=user,
            detail=detail or {},
        )


_UPDATE_STATES = {"DRAIN", "UNDRAIN", "RESUME", "DOWN", "IDLE", "FAIL"}
# RESUME of a node in a power state is the power service's (it ends POWERING_DOWN).
_POWER_RESUME = NodeFlag.POWERING_DOWN | NodeFlag.POWERED_DOWN | NodeFlag.POWER_DRAIN
# The fields of POST /api/nodes/update/ (node_update's keywords), and their columns' lengths.
UPDATE_FIELDS = (
    "nodes",
    "state",
    "reason",
    "weight",
    "features",
    "active_features",
    "suspend_time",
    "instance_id",
    "instance_type",
    "extra",
)
_TEXT_LENGTHS = {
    "reason": 256,
    "features": 512,
    "active_features": 512,
    "instance_id": 128,
    "instance_type": 128,
    "extra": 4096,
}


def node_update_request(*, actor: AbstractBaseUser, body: object) -> list[str]:
    """``POST /api/nodes/update/``: the body's fields to :func:`node_update`, after the
    permission check (a non-staff caller learns nothing about its body)."""
    if not actor.is_staff:
        raise PermissionDenied("Access/permission denied")
    data = inputs.body_object(body)
    inputs.known_fields(data, UPDATE_FIELDS)
    return node_update(actor=actor, **{"nodes": "", **data})


def known_names(value: object, field: str = "nodes") -> list[str]:
    """The names of a hostlist of existing nodes, refused before expansion when it could
    name more nodes than the cluster has (``node[1-2000000]``)."""
    names = inputs.hostlist(value, field, limit=max(Node.objects.count(), 1))
    found = set(Node.objects.filter(name__in=names).values_list("name", flat=True)) if names else set()
    missing = [n for n in names if n not in found]
    if missing:
        raise ServiceError(f"Invalid node name specified: {NodeSet.fromlist(missing)}", field=field)
    return names


def suspend_time_value(value: object) -> str | int:
    """A SuspendTime the power service can store: seconds within the column, INFINITE, NONE."""
    from power.services import parse_node_suspend_time  # noqa: PLC0415 - power.services imports us

    if isinstance(value, str):
        inputs.text(value, "suspend_time", max_length=32)
    elif not isinstance(value, int) or isinstance(value, bool):
        raise ServiceError(f"Invalid SuspendTime {value!r}", field="suspend_time")
    seconds = parse_node_suspend_time(value)
    if seconds is not None and not -1 <= seconds <= inputs.INT_MAX:
        raise ServiceError(f"Invalid SuspendTime {value!r}: out of range", field="suspend_time")
    return value


@transaction.atomic
def node_update(
    *,
    actor: AbstractBaseUser,
    nodes: str,
    state: str | None = None,
    reason: str | None = None,
    weight: int | str | None = None,
    features: str | None = None,
    active_features: str | None = None,
    suspend_time: str | int | None = None,
    instance_id: str | None = None,
    instance_type: str | None = None,
    extra: str | None = None,
) -> list[str]:
    """scontrol update NodeName=<list> State=... Reason=... (administrators only).

    InstanceId/InstanceType/Extra are the cloud accounting fields; like every field changed
    here they are kept in the node's audit history.
    """
    if not actor.is_staff:
        raise PermissionDenied("Access/permission denied")
    reason, features, active_features, instance_id, instance_type, extra = (
        None if value is None else inputs.text(value, key, max_length=_TEXT_LENGTHS[key])
        for key, value in (
            ("reason", reason),
            ("features", features),
            ("active_features", active_features),
            ("instance_id", instance_id),
            ("instance_type", instance_type),
            ("extra", extra),
        )
    )
    if state is not None:
        state = inputs.text(state, "state", max_length=32).upper() or None
    weight = None if weight is None or weight == "" else inputs.integer(weight, "weight")
    if suspend_time is not None:
        suspend_time = suspend_time_value(suspend_time)
    names = known_names(nodes)
    found = {n.name: n for n in Node.objects.select_for_update().filter(name__in=names).order_by("name")}
    if (state is not None and state.startswith("POWER_")) or (
        state == "RESUME" and any(n.flags & _POWER_RESUME for n in found.values())
    ):
        # Power transitions have one service (power.services.power_request).
        from power.services import power_request  # noqa: PLC0415 - power.services imports us

        power_request(actor=actor, nodes=nodes, op=state, reason=reason)
        state, reason = None, None
        if weight is None and features is None and active_features is None and suspend_time is None:
            return names
    if state is not None and state not in _UPDATE_STATES:
        raise ServiceError(f"Invalid node state specified: {state}", field="state")
    if state in ("DRAIN", "DOWN", "FAIL") and not reason:
        raise ServiceError("You must specify a reason when DOWNING or DRAINING a node. Request denied")
    now = timezone.now()
    who = actor.get_username()
    from power import services as power_services  # noqa: PLC0415 - power.services imports us

    if suspend_time is not None:
        # Per-node SuspendTime takes effect at once (power_save.md "Overview").
        power_services.node_suspend_time_set([found[n] for n in names], suspend_time, how="update")
    with set_actor(actor):
        for name in names:
            node = found[name]
            if state in ("DRAIN", "FAIL"):
                # An administrator's drain outlives a pending POWER_DOWN_ASAP (POWER_DRAIN).
                _set_state(
                    node, add=NodeFlag.DRAIN, remove=NodeFlag.POWER_DRAIN, reason=reason, user=who, now=now
                )
            elif state == "DOWN":
                _set_state(node, base=NodeBase.DOWN, add=NodeFlag.NONE, reason=reason, user=who, now=now)
                fail_jobs_on(node.name, now=now, why="node set DOWN")
            elif state in ("RESUME", "UNDRAIN", "IDLE"):
                base = None
                if NodeBase(node.base_state) == NodeBase.DOWN and state != "UNDRAIN":
                    base = NodeBase.IDLE if node.last_contact else NodeBase.UNKNOWN
                _set_state(node, base=base, remove=NodeFlag.DRAIN, reason="", user=who, now=now)
            elif reason:
                node.reason, node.reason_user, node.reason_time = reason, who, now
            if weight is not None:
                node.weight = weight
            # AvailableFeatures / ActiveFeatures (NodeFeaturesPlugins rules in power).
            power_services.node_features_update(node, available=features, active=active_features)
            for field, value in (
                ("instance_id", instance_id),
                ("instance_type", instance_type),
                ("extra_text", extra),
            ):
                if value is not None:
                    setattr(node, field, value)
            node.save()
    refresh_usage(names)
    publish.console_changed("nodes")
    triggers.schedule_after_commit()
    return names


def fail_jobs_on(node_name: str, *, now: datetime, why: str) -> list[int]:
    """Jobs holding a node that failed: requeued when allowed, else NODE_FAIL."""
    jobs = [
        job
        for job in Job.objects.select_for_update().filter(state__in=[s.value for s in HOLDING_JOB_STATES])
        if node_name in job.alloc
    ]
    for job in jobs:
        fail_job(job, now=now, why=why, node=node_name)
    return [job.id for job in jobs]


def fail_job(job: Job, *, now: datetime, why: str, node: str = "") -> None:
    """One job lost to a node failure: requeued when allowed, else NODE_FAIL.

    A job already being ended (cancelled, timed out) simply takes that end.
    """
    old = job.state
    if job.batch_host and job.batch_host != node:
        # The batch script may still run on a healthy node: stop it there.
        publish.to_agent(job.batch_host, {"type": "cancel", "job_id": job.id, "kill_wait": 0})
    if job.final_state and job.final_state != JobState.REQUEUED:
        end_job(job, JobState(job.final_state), now=now, why=why, node=node)
    elif job.requeue:
        requeue_now(job, now=now)
        record_transition(job, old, now=now, why=why, node=node)
        publish.console_changed("jobs")
    else:
        end_job(job, JobState.NODE_FAIL, now=now, why=why, reason=Reason.NODE_FAIL, node=node)
