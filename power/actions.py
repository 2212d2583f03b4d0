"""The node page's power up and power down (``scontrol power up|down NODE Reason=``).

Staff only, as ``POST /api/power/``: refused with 403 before the form is read, and
``power.services.power_request`` checks again.  One audit entry per request, on the node,
besides the node's own (its power flags) and the power request's event.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.urls import reverse

from cluster.action_flow import ActionSpec, run_named_action
from cluster.node_actions import audited
from power import services


def _power(name: str, op: str, words: str) -> ActionSpec:
    def perform(actor: Any, values: dict[str, str], reason: str) -> str:
        answers: list[services.PowerAnswer] = []

        def act() -> None:
            answers.append(services.power_request(actor=actor, nodes=name, op=op, reason=reason or None))

        audited(actor, name, op.lower(), reason, act)
        said = " ".join(answers[0].messages) if answers and answers[0].messages else ""
        return f"Node {name}: {words} requested.{' ' + said if said else ''}"

    return ActionSpec(
        title=f"{words.capitalize()} node {name}",
        question=f"{words.capitalize()} node {name}?",
        perform=perform,
        back=reverse("node", kwargs={"name": name}),
        staff_only=True,
    )


ACTIONS: dict[str, Callable[[str], ActionSpec]] = {
    "power_up": lambda name: _power(name, "POWER_UP", "power up"),
    "power_down": lambda name: _power(name, "POWER_DOWN", "power down"),
}


def power_action(request: HttpRequest, name: str, action: str) -> HttpResponse:
    return run_named_action(request, ACTIONS, action, name)
