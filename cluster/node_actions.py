"""The node page's drain and resume (``scontrol update NodeName= State=DRAIN|RESUME``).

Staff only, as the API's node update: the view refuses anyone else with 403 before reading
the form, and ``node_update_request`` checks again.  Draining needs a reason, as Slurm's
("You must specify a reason when DOWNING or DRAINING a node"): the service says so.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.urls import reverse

from cluster.action_flow import ActionSpec, run_named_action
from cluster.models import Node
from cluster.services.action_audit import action_audited
from cluster.services.errors import NotFound
from cluster.services.nodes import node_update_request

_WATCHED = ("state", "reason")


def node_row(name: str) -> Node:
    node = Node.objects.filter(name=name).first()
    if node is None:
        raise NotFound(f"Invalid node name specified: {name}")
    return node


def audited(actor: Any, name: str, action: str, reason: str, act: Callable[[], object]) -> None:
    """Run ``act`` and record its entry with the node's state and reason before and after."""
    node = node_row(name)
    action_audited(actor=actor, instance=node, watched=_WATCHED, action=action, reason=reason, act=act)


def _state_change(name: str, state: str, done: str, *, reason_required: bool) -> ActionSpec:
    def perform(actor: Any, values: dict[str, str], reason: str) -> str:
        body = {"nodes": name, "state": state, **({"reason": reason} if reason else {})}
        audited(actor, name, state.lower(), reason, lambda: node_update_request(actor=actor, body=body))
        return f"Node {name} {done}."

    return ActionSpec(
        title=f"{state.capitalize()} node {name}",
        question=f"Set node {name} State={state}?",
        perform=perform,
        back=reverse("node", kwargs={"name": name}),
        reason_required=reason_required,
        reason_label="Reason" if reason_required else "Reason (optional)",
        staff_only=True,
    )


ACTIONS: dict[str, Callable[[str], ActionSpec]] = {
    "drain": lambda name: _state_change(name, "DRAIN", "drained", reason_required=True),
    "resume": lambda name: _state_change(name, "RESUME", "resumed", reason_required=False),
}


def node_action(request: HttpRequest, name: str, action: str) -> HttpResponse:
    return run_named_action(request, ACTIONS, action, name)
