"""How every console action runs: a POST with CSRF, a confirmation, a message, a new page.

A page's action is a ``<form method="post">`` with ``hx-post``, ``hx-confirm`` and
``hx-vals='{"confirmed": "1"}'``:

- with JavaScript, htmx asks the question in the browser's dialog and posts confirmed;
- without it, the first POST (not confirmed) answers a confirmation page that repeats the
  form's fields, with a Confirm button that posts them again, confirmed.

A confirmed POST calls the one service for the operation (which checks who may do it) and
records an audit entry in the same transaction.  Success goes back to the page with a
message (303, or ``HX-Redirect`` for htmx); a refusal is answered with the service's status
(400 bad input, 403 not allowed, 404 unknown) and Slurm's error text: the confirmation page
again, or for htmx the page with the message (``HX-Redirect`` is followed whatever the
status).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.contrib import messages
from django.db import transaction
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django_htmx.http import HttpResponseClientRedirect
from rest_framework import status

from cluster.api.permissions import DENIED, StaffOnly
from cluster.services.errors import ServiceError

# The reason a person gives is stored with the audit entry (and as a node's Reason=):
# slurmctld keeps a node's reason to the same length.
MAX_REASON = 256


@dataclass(frozen=True)
class Field:
    """An input the action needs besides the reason (a time limit, a count)."""

    name: str
    label: str
    placeholder: str = ""
    required: bool = False
    # (value, label) pairs: a select instead of a text input.
    choices: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class ActionSpec:
    """What the confirmation shows and how the action is done.

    ``perform(actor, values, reason)`` calls the services and returns the success message;
    it raises ServiceError (with Slurm's text) to refuse.
    """

    title: str
    question: str
    perform: Callable[[Any, dict[str, str], str], str]
    back: str
    fields: Sequence[Field] = field(default_factory=tuple)
    # Shown as a required input; the service refuses a missing one in Slurm's words.
    reason_required: bool = False
    reason_label: str = "Reason (optional)"
    staff_only: bool = False


def staff(request: HttpRequest) -> bool:
    """The API's rule for configuration and node changes (cluster.api.permissions.StaffOnly)."""
    return StaffOnly().has_permission(request, None)  # type: ignore[arg-type]


def _values(request: HttpRequest, spec: ActionSpec) -> tuple[dict[str, str], str]:
    values = {f.name: request.POST.get(f.name, "").strip() for f in spec.fields}
    reason = request.POST.get("reason", "").strip()
    if len(reason) > MAX_REASON:
        raise ServiceError(f"Invalid reason: longer than {MAX_REASON} characters", field="reason")
    if any(ch in reason for ch in "\r\n\x00"):
        raise ServiceError("Invalid reason: one line of text", field="reason")
    for f in spec.fields:
        if f.required and not values[f.name]:
            raise ServiceError(f"{f.label} is required", field=f.name)
    return values, reason


def _answer(
    request: HttpRequest, spec: ActionSpec, *, error: str = "", status_code: int = 200
) -> HttpResponse:
    if request.headers.get("HX-Request") and error:
        messages.error(request, error)
        response = HttpResponseClientRedirect(spec.back)
        response.status_code = status_code
        return response
    context = {
        "spec": spec,
        "form": request.POST,
        "fields": [(f, request.POST.get(f.name, "")) for f in spec.fields],
        "error": error,
        "max_reason": MAX_REASON,
    }
    return render(request, "console/action_confirm.html", context, status=status_code)


def run_action(request: HttpRequest, spec: ActionSpec) -> HttpResponse:
    """One action request (POST only): see the module's docstring."""
    if request.method != "POST":
        return HttpResponse(status=status.HTTP_405_METHOD_NOT_ALLOWED, headers={"Allow": "POST"})
    if not request.user.is_authenticated:
        return HttpResponse(DENIED, status=status.HTTP_403_FORBIDDEN, content_type="text/plain")
    if spec.staff_only and not staff(request):
        # Refused before the body is read, as the API refuses a non-staff node change.
        return HttpResponse(DENIED, status=status.HTTP_403_FORBIDDEN, content_type="text/plain")
    try:
        values, reason = _values(request, spec)
    except ServiceError as exc:
        return _answer(request, spec, error=str(exc), status_code=exc.status)
    if request.POST.get("confirmed") != "1":
        return _answer(request, spec)
    try:
        with transaction.atomic():
            message = spec.perform(request.user, values, reason)
    except ServiceError as exc:
        return _answer(request, spec, error=str(exc), status_code=exc.status)
    messages.success(request, message)
    if request.headers.get("HX-Request"):
        return HttpResponseClientRedirect(spec.back)
    return HttpResponseRedirect(spec.back, status=status.HTTP_303_SEE_OTHER)


def run_named_action(
    request: HttpRequest, actions: Mapping[str, Callable[[Any], ActionSpec]], action: str, subject: Any
) -> HttpResponse:
    """``run_action`` of the action named in the URL, on ``subject`` (a job id, a node
    name); an unknown name is a 404."""
    make = actions.get(action)
    if make is None:
        return HttpResponse(f"Unknown action: {action}", status=404, content_type="text/plain")
    return run_action(request, make(subject))
