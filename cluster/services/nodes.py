"""Node operations: scontrol update NodeName=..., usage bookkeeping, node failure."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from auditlog.context import set_actor
from ClusterShell.NodeSet import NodeSet
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from cluster import clock, extensions, publish, triggers
from cluster.core.states import NodeBase, NodeFlag
from cluster.models import Node
from cluster.services import inputs
from cluster.services.errors import PermissionDenied, ServiceError
from cluster.services.reboots import node_cancel_reboot
from cluster.services.state import (
    fail_jobs_on,
    refresh_usage,
    set_node_state,
)

log = logging.getLogger(__name__)

NOT_RESPONDING_REASON = "Not responding"


_UPDATE_STATES = {"DRAIN", "UNDRAIN", "RESUME", "DOWN", "IDLE", "FAIL", "CANCEL_REBOOT"}
# State=RESUME ends a pending or issued reboot too (scontrol(1)).
_REBOOT_FLAGS = NodeFlag.REBOOT_REQUESTED | NodeFlag.REBOOT_ISSUED
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


def check_node_fields(fields: Mapping[str, Any]) -> None:
    """The fields of a node update or creation that extensions own (SuspendTime)."""
    for ext in extensions.active():
        ext.check_node_fields(fields)


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
    owned = {
        key: value
        for key, value in (
            ("suspend_time", suspend_time),
            ("features", features),
            ("active_features", active_features),
            # Cloud accounting: the extensions keep the instance history (sacctmgr show instance).
            ("instance_id", instance_id),
            ("instance_type", instance_type),
            ("extra", extra),
        )
        if value is not None
    }
    check_node_fields(owned)
    names = known_names(nodes)
    found = {n.name: n for n in Node.objects.select_for_update().filter(name__in=names).order_by("name")}
    if state is not None and any(
        ext.node_state_request(actor=actor, nodes=nodes, found=found, state=state, reason=reason)
        for ext in extensions.active()
    ):
        # An extension's state (power saving's POWER_UP, POWER_DOWN...) was carried out there.
        state, reason = None, None
        if weight is None and not owned:
            return names
    if state is not None and state not in _UPDATE_STATES:
        raise ServiceError(f"Invalid node state specified: {state}", field="state")
    if state in ("DRAIN", "DOWN", "FAIL") and not reason:
        raise ServiceError("You must specify a reason when DOWNING or DRAINING a node. Request denied")
    now = clock.now()
    who = actor.get_username()
    if state == "CANCEL_REBOOT":
        node_cancel_reboot(actor=actor, nodes=nodes, now=now)
        state = None
    if owned:
        for ext in extensions.active():
            ext.node_fields_update([found[n] for n in names], owned, how="update")
    with set_actor(actor):
        for name in names:
            node = found[name]
            if state in ("DRAIN", "FAIL"):
                # An administrator's drain outlives a pending POWER_DOWN_ASAP (POWER_DRAIN).
                set_node_state(
                    node, add=NodeFlag.DRAIN, remove=NodeFlag.POWER_DRAIN, reason=reason, user=who, now=now
                )
            elif state == "DOWN":
                set_node_state(node, base=NodeBase.DOWN, add=NodeFlag.NONE, reason=reason, user=who, now=now)
                fail_jobs_on(node.name, now=now, why="node set DOWN")
            elif state in ("RESUME", "UNDRAIN", "IDLE"):
                base = None
                if NodeBase(node.base_state) == NodeBase.DOWN and state != "UNDRAIN":
                    base = NodeBase.IDLE if node.last_contact else NodeBase.UNKNOWN
                remove = NodeFlag.DRAIN
                if state == "RESUME" and node.flags & _REBOOT_FLAGS:
                    remove |= _REBOOT_FLAGS
                    node.reboot_next_state, node.reboot_undrain, node.reboot_issued_at = "", False, None
                set_node_state(node, base=base, remove=remove, reason="", user=who, now=now)
            elif reason:
                node.reason, node.reason_user, node.reason_time = reason, who, now
            if weight is not None:
                node.weight = weight
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
