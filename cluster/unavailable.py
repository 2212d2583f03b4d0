"""A request that meets an unreachable database answers 503, saying whether anything was stored.

A PostgreSQL restart (or SQLite's write lock held past its timeout) makes the request's
queries raise OperationalError or InterfaceError; Django would answer a bare 500, and
the user cannot tell whether the job was submitted. This middleware answers 503 with
``Retry-After`` instead: JSON (``{"error", "stored", "retry_after"}``) under ``/api/``, a
short plain page elsewhere.

"Nothing was stored" must be true when it is said, so the middleware watches the
request's write statements: one that succeeded outside a transaction, or inside one that
then committed, means something was stored, and the answer says so (still 503, but
"check before retrying"). A write inside a transaction that rolled back stored nothing.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any

from django.core.signals import got_request_exception
from django.db import connection, transaction
from django.http import HttpRequest, HttpResponse, JsonResponse

from cluster.services.errors import DATABASE_UNREACHABLE, is_storing_nothing

log = logging.getLogger(__name__)

RETRY_AFTER = 5  # seconds: a PostgreSQL restart takes about that long
_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")


class _Writes:
    """Counts the request's writes that reached the database for good."""

    def __init__(self) -> None:
        self.stored = False

    def _mark(self) -> None:
        self.stored = True

    def __call__(self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        result = execute(sql, params, many, context)
        # A write the service says stores nothing (taking job ids) does not count.
        if not self.stored and not is_storing_nothing() and sql.lstrip()[:7].upper().startswith(_WRITES):
            if connection.in_atomic_block:
                transaction.on_commit(self._mark)  # dropped if the transaction rolls back
            else:
                self._mark()
        return result


def unavailable(request: HttpRequest, exc: BaseException, *, stored: bool | None) -> HttpResponse:
    """The 503 for ``request``, whose database failed with ``exc`` (``stored`` None: not known,
    the request's writes were not watched)."""
    if stored is None:
        message = (
            "The database became unavailable during this request: whether it was stored is unknown; "
            "check before retrying."
        )
    elif stored:
        message = (
            "The database became unavailable after part of this request was stored: "
            "check what it did (squeue, scontrol show job) before retrying."
        )
    else:
        message = (
            f"The database is unavailable for a moment: nothing was stored. Retry in {RETRY_AFTER} seconds."
        )
    log.warning("%s %s: database unavailable (%s: %s), answered 503", request.method, request.path,
                type(exc).__name__, exc)  # fmt: skip
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse(
            {"error": message, "stored": stored, "retry_after": RETRY_AFTER}, status=503
        )
    else:
        response = HttpResponse(message + "\n", status=503, content_type="text/plain; charset=utf-8")
    response["Retry-After"] = str(RETRY_AFTER)
    return response


class DatabaseUnavailableMiddleware:
    """Place it first in MIDDLEWARE: it sees the writes of every middleware after it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        writes = _Writes()
        request._fsched_writes = writes  # type: ignore[attr-defined]
        with connection.execute_wrapper(writes):
            response = self.get_response(request)
        # A middleware after this one failed (a session saved after the view): Django made
        # it a 500 before it got here, and said why only to got_request_exception.
        failed = getattr(request, "_fsched_unreachable", None)
        if response.status_code == 500 and failed is not None:
            return unavailable(request, failed, stored=writes.stored)
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, DATABASE_UNREACHABLE):
            return None
        return unavailable(request, exception, stored=stored_so_far(request))


def stored_so_far(request: HttpRequest) -> bool | None:
    """Whether ``request`` stored anything yet; None when this middleware does not watch it."""
    writes = getattr(request, "_fsched_writes", None)
    return None if writes is None else writes.stored


def _remember(sender: Any, request: HttpRequest | None = None, **kwargs: Any) -> None:
    exc = sys.exc_info()[1]
    if request is not None and isinstance(exc, DATABASE_UNREACHABLE):
        request._fsched_unreachable = exc  # type: ignore[attr-defined]


got_request_exception.connect(_remember, dispatch_uid="fsched-database-unavailable")
