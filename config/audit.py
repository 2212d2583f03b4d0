"""Who made a change, for django-auditlog, without a signal connection per request.

auditlog's own middleware connects a ``pre_save`` receiver for LogEntry when every request
starts and disconnects it when it ends.  Each connection empties the signal's receiver
cache and takes its lock, on every request, though only the rare request that changes an
audited row saves a LogEntry: 4 to 5% of the server's CPU for an API call (py-spy,
``GET /api/whoami/`` and ``POST /api/jobs/``).  Here the request is kept in a context
variable, and one receiver, connected once, stamps the LogEntries saved while it runs.

The actor is the request's user when the entry is saved, so an API call authenticated
by token (DRF authenticates inside the view and sets the request's user then) is
recorded with its user; auditlog's middleware reads the user before the view runs,
when a token client is still anonymous.  Services that name an actor themselves
(``auditlog.context.set_actor``) still do: an actor already set is kept.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from auditlog import get_logentry_model
from auditlog.cid import set_cid
from auditlog.middleware import AuditlogMiddleware
from django.db.models.signals import pre_save
from django.http import HttpRequest, HttpResponse

_current: ContextVar[HttpRequest | None] = ContextVar("fsched_audit_request", default=None)


def _stamp(sender: Any, instance: Any, **kwargs: Any) -> None:
    request = _current.get()
    if request is None:
        return
    user = getattr(request, "user", None)
    if instance.actor_id is None and user is not None and user.is_authenticated:
        instance.actor = user
        instance.actor_email = getattr(user, "email", None)
    if instance.remote_addr is None:
        instance.remote_addr = AuditlogMiddleware._get_remote_addr(request)
    if instance.remote_port is None:
        instance.remote_port = AuditlogMiddleware._get_remote_port(request)


class AuditMiddleware:
    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response
        pre_save.connect(_stamp, sender=get_logentry_model(), dispatch_uid="fsched-audit-stamp", weak=False)

    def __call__(self, request: HttpRequest) -> HttpResponse:
        set_cid(request)
        token = _current.set(request)
        try:
            return self.get_response(request)
        finally:
            _current.reset(token)
