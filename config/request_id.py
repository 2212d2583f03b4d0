"""A correlation id for every request: on the response, in the log records and on the
audit entries written while the request runs.

An incoming ``X-Request-ID`` (set by a proxy in front of the server, or by a client that
wants to find its own request in the logs) is kept when it looks like an id: letters,
digits and ``.-_:``, at most 64 characters.  Anything else (empty, too long, spaces,
control characters that could forge a log line) is replaced by a fresh id, so what is
logged and stored is always safe to show.

django-auditlog reads the id through ``AUDITLOG_CID_GETTER`` (its ``LogEntry.cid``), so
an entry saved by a service, by a registered model's signal or by the console's actions
carries the id of the request that caused it.
"""

from __future__ import annotations

import logging
import re
import uuid
from contextvars import ContextVar
from typing import Any

from django.http import HttpRequest, HttpResponse

HEADER = "X-Request-ID"
_SAFE = re.compile(r"[A-Za-z0-9._:-]{1,64}")
_current: ContextVar[str | None] = ContextVar("fsched_request_id", default=None)


def request_id_for(incoming: str | None) -> str:
    """The id a request gets: the incoming one when safe, else a new one."""
    if incoming and _SAFE.fullmatch(incoming):
        return incoming
    return uuid.uuid4().hex


def current_request_id() -> str | None:
    """The id of the request being served (``None`` outside a request: cycles, commands)."""
    return _current.get()


class RequestIdMiddleware:
    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        rid = request_id_for(request.headers.get(HEADER))
        request.request_id = rid  # type: ignore[attr-defined]
        token = _current.set(rid)
        try:
            response = self.get_response(request)
        finally:
            _current.reset(token)
        response[HEADER] = rid
        return response


class RequestIdLogFilter(logging.Filter):
    """Adds ``request_id`` to every record ("-" outside a request) for the formatter."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = _current.get() or "-"
        return True
