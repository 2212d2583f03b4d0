"""The recent errors and the last maintenance run of each resource's hres/lua plugin,
for the console's layer page.

Kept in the cluster's Event table (kind ``config``, ``node`` empty) with the resource in
``detail``: a failed callback is already logged (:func:`hres.lua_callbacks.call`), this
keeps the last :data:`KEEP` per resource where a person can see them without reading the
controller's log; of the maintenance runs only the last one stays.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import DatabaseError
from django.db.models import QuerySet

from cluster import clock
from cluster.models import Event

log = logging.getLogger("fsched.hres.lua")

REASON = "hres/lua error"
MAINTENANCE = "hres/lua maintenance"
KEEP = 10


def _keep(resource: str, reason: str, detail: dict[str, Any], keep: int) -> None:
    try:
        Event.objects.create(
            time=clock.now(),
            kind=Event.Kind.CONFIG,
            reason=reason,
            user="slurm",
            detail={"hres_resource": resource, **detail},
        )
        old = _mine(resource, reason).values_list("pk", flat=True)[keep:]
        Event.objects.filter(pk__in=list(old)).delete()
    except DatabaseError as exc:
        # A busy database must not turn the callback's failure handling into another one.
        log.warning("hres/lua: %s of %s not recorded: %s", reason, resource, exc)


def record(resource: str, function: str, message: str) -> None:
    """One failure of ``function`` of ``resource``'s plugin; older ones beyond KEEP dropped."""
    _keep(resource, REASON, {"function": function, "message": message[:1000]}, KEEP)


def record_maintenance(resource: str, result: str, *, disabled: list[str], down: list[str]) -> None:
    """The resource's last maintenance run: its result and the layers it disabled or set down."""
    _keep(resource, MAINTENANCE, {"result": result[:1000], "disabled": disabled, "down": down}, 1)


def _mine(resource: str, reason: str) -> QuerySet[Event]:
    mine = Event.objects.filter(kind=Event.Kind.CONFIG, reason=reason, detail__hres_resource=resource)
    return mine.order_by("-time", "-id")


def last_maintenance(resource: str) -> dict[str, Any] | None:
    """The resource's last maintenance run (time, result, disabled, down), or None."""
    e = _mine(resource, MAINTENANCE).first()
    if e is None:
        return None
    return {"time": e.time, **{k: e.detail.get(k) for k in ("result", "disabled", "down")}}


def recent(resource: str, count: int = KEEP) -> list[dict[str, Any]]:
    """The last ``count`` errors of the resource's plugin, newest first."""
    return [
        {"time": e.time, "function": e.detail.get("function", ""), "message": e.detail.get("message", "")}
        for e in _mine(resource, REASON)[:count]
    ]
