"""Dynamic nodes: nodes not in slurm.conf (Slurm's hres.html, "Dynamic Nodes").

* ``scontrol create NodeName=node33 State=cloud CPUs=4 RealMemory=2000 Feature=a,b
  HRES='[{"hres_name":"power","layer_name":"rack2"}]'`` (:func:`node_create`);
* an agent registering a node slurm.conf does not list, with a dynamic configuration
  (``--conf 'HRES=[...]'``, Slurm's ``slurmd -Z``; :func:`register_dynamic`);
* ``scontrol delete NodeName=node33`` (:func:`node_delete`).

A ``SuspendTime=`` given at creation or in the dynamic configuration goes through
``power.services.node_suspend_time_set`` (Slurm's power_save.html, "Overview": refused
at creation when finite and power save is not configured, accepted with a warning at
registration).

The node's ``HRES=`` layers are its configured layers (``Node.extra["hres"]``); joining
them is ``hres.services.node_join``.  The parameter means nothing for nodes in slurm.conf.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from cluster import clock, extensions, publish
from cluster.core import hostlists
from cluster.core.states import HOLDING_JOB_STATES
from cluster.models import Event, Job, Node
from cluster.services import inputs
from cluster.services.errors import NotFound, PermissionDenied, ServiceError
from cluster.services.nodes import check_node_fields
from cluster.services.state import configured_state

log = logging.getLogger(__name__)

# Key (lower case) -> what it sets; Slurm's spellings and their usual aliases.
KEYS = {
    "nodename": "name",
    "state": "state",
    "cpus": "cpus",
    "procs": "cpus",
    "realmemory": "real_memory",
    "tmpdisk": "tmp_disk",
    "feature": "features",
    "features": "features",
    "weight": "weight",
    "hres": "hres",
    "suspendtime": "suspend_time",
}
STATES = {"CLOUD", "FUTURE"}


def split_conf(text: str) -> list[tuple[str, str]]:
    """``HRES=[{"a": "b c"}] CPUs=4`` -> pairs: split on blanks outside brackets and
    quotes, so a JSON value stays whole (shlex would eat its double quotes)."""
    words, cur, depth, quote = [], [], 0, ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch.isspace() and depth == 0:
            if cur:
                words.append("".join(cur))
                cur = []
            continue
        cur.append(ch)
    if cur:
        words.append("".join(cur))
    pairs = []
    for word in words:
        key, eq, value = word.partition("=")
        if not eq or not key:
            raise ValueError(f"Invalid input: {word}")
        if len(value) >= 2 and value[0] == value[-1] == "'":
            value = value[1:-1]
        pairs.append((key, value))
    return pairs


# The longest value each key takes (its column's length; HRES= is a short JSON list).
_LENGTHS = {"name": inputs.NAME_MAX, "state": 16, "features": 512, "hres": 4096, "suspend_time": 32}


def _value(key: str, field: str, value: object) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    return inputs.text(value, key, max_length=_LENGTHS.get(field, 32))


def _fields(params: object) -> dict[str, Any]:
    out: dict[str, Any] = {}
    given: dict[str, str] = {}  # field -> the key as typed, for the messages
    for key, value in inputs.body_object(params).items():
        field = KEYS.get(str(key).lower())
        if field is None:
            raise ServiceError(f"Invalid node parameter: {inputs.text(str(key), 'parameter', max_length=64)}")
        given[field] = str(key)
        out[field] = _value(given[field], field, value)
    if "name" in out:
        out["name"] = inputs.name(out["name"].strip(), given["name"])
    for key in ("cpus", "real_memory", "weight"):
        if key in out:
            out[key] = inputs.integer(out[key], given[key], low=1)
    if "tmp_disk" in out:
        out["tmp_disk"] = inputs.integer(out["tmp_disk"], given["tmp_disk"], low=0)
    # Checked here so a bad value refuses the creation / registration outright.
    check_node_fields(out)
    return out


def _make(fields: Mapping[str, Any], *, state: str, how: str, actor: str, now: datetime) -> Node:
    name = fields["name"]
    node = Node(
        name=name,
        in_conf=False,
        cpus=fields.get("cpus", 1),
        real_memory=fields.get("real_memory", 1),
        tmp_disk=fields.get("tmp_disk", 0),
        weight=fields.get("weight", 1),
        features=fields.get("features", ""),
        active_features=fields.get("features", ""),
        conf_state=state or "UNKNOWN",
        extra={"dynamic": True},
        # Its idle time (SuspendTime) counts from its creation, not from the last reconfigure.
        last_busy=now,
    )
    configured_state(node, state, now=now)
    for ext in extensions.active():
        # Before the save: a refused value (ServiceError) creates nothing.
        ext.node_fields_update([node], fields, how=how)
    node.save()
    Event.objects.create(
        time=now, kind=Event.Kind.NODE, node=name, new_state=node.state, reason="created", user=actor
    )
    for ext in extensions.active():
        ext.node_created(node, fields, actor=actor, now=now)
    publish.console_changed("nodes")
    return node


@transaction.atomic
def node_create(*, actor: AbstractBaseUser, params: Mapping[str, Any], now: datetime | None = None) -> Node:
    """``scontrol create NodeName=...``: staff only; ``State`` is CLOUD or FUTURE."""
    if not actor.is_staff:
        raise PermissionDenied("Access/permission denied")
    fields = _fields(params)
    name = fields.get("name")
    if not name:
        raise ServiceError("NodeName is required", field="NodeName")
    try:
        if hostlists.count(name) != 1:
            raise ServiceError("Create one node at a time", field="NodeName")
        # node[33] is node33: the row holds the name the agent registers.
        name = hostlists.expand(name, limit=1)[0]
    except ValueError:
        raise ServiceError(f"Invalid node name specified: {name}", field="NodeName") from None
    if Node.objects.filter(name=name).exists():
        raise ServiceError(f"Duplicate node name: {name}")
    state = str(fields.get("state") or "").upper()
    if state and state not in STATES:
        raise ServiceError(f"Invalid node state specified: {fields['state']} (CLOUD or FUTURE)")
    return _make(
        {**fields, "name": name},
        state=state,
        how="create",
        actor=actor.get_username(),
        now=now or clock.now(),
    )


def register_dynamic(name: str, conf: str, *, agent_id: str, now: datetime) -> Node | None:
    """An agent registers ``name``, unknown to slurm.conf, with a dynamic configuration
    (``slurmd -Z --conf``): create it (inside the caller's transaction).  None: refused."""
    try:
        inputs.name(name, "NodeName")
        fields = _fields(dict(split_conf(conf)))
    except (ValueError, ServiceError) as exc:
        log.error("agent %s: node %s: bad dynamic configuration %r: %s", agent_id, name, conf, exc)
        return None
    fields.pop("state", None)
    return _make({**fields, "name": name}, state="", how="register", actor=f"agent {agent_id}", now=now)


@transaction.atomic
def node_delete(*, actor: AbstractBaseUser, names: object, now: datetime | None = None) -> list[str]:
    """``scontrol delete NodeName=<nodes>``: dynamic nodes with no job only."""
    if not actor.is_staff:
        raise PermissionDenied("Access/permission denied")
    now = now or clock.now()
    # No list of more names than the cluster has nodes can name only dynamic nodes.
    wanted = inputs.hostlist(names, "nodes", limit=max(Node.objects.count(), 1))
    nodes = list(Node.objects.select_for_update().filter(name__in=wanted).order_by("name"))
    missing = sorted(set(wanted) - {n.name for n in nodes})
    if missing:
        raise NotFound(f"Invalid node name specified: {','.join(missing)}")
    for node in nodes:
        if node.in_conf:
            raise ServiceError(f"Node {node.name} is in slurm.conf: only dynamic nodes can be deleted")
    busy = Job.objects.filter(state__in=[s.value for s in HOLDING_JOB_STATES])
    for node in nodes:
        if any(node.name in (job.alloc or {}) for job in busy):
            raise ServiceError(f"Node {node.name} has jobs running: it cannot be deleted")
    for node in nodes:
        for ext in extensions.active():
            ext.node_deleted(node)
        node.delete()
        Event.objects.create(
            time=now, kind=Event.Kind.NODE, node=node.name, old_state=node.state, reason="deleted",
            user=actor.get_username(),
        )  # fmt: skip
    publish.console_changed("nodes")
    return [n.name for n in nodes]
