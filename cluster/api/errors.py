"""Errors as ``{"error": message}``: one shape for the CLI to print.

A database that cannot be reached answers 503 (cluster/unavailable.py). Input a view did
not foresee still gets a 4xx, never a 500: a number too large for the
database (OverflowError, DataError), a document too deep (RecursionError), text that is
not Unicode (UnicodeError), a body over DATA_UPLOAD_MAX_MEMORY_SIZE, and a parser's
ValueError that no service turned into a ServiceError (logged with its traceback).
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import DataError
from rest_framework import status
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_handler

from cluster import unavailable
from cluster.services.errors import DATABASE_UNREACHABLE, ServiceError

log = logging.getLogger(__name__)

# What each unforeseen failure of bad input says (the field is named when the exception knows it).
_INPUT_ERRORS: tuple[tuple[type[BaseException], str], ...] = (
    (OverflowError, "Invalid value: a number out of range"),
    (DataError, "Invalid value: out of range for its field"),
    (RecursionError, "Invalid request: nested too deep"),
    (UnicodeError, "Invalid text: not valid Unicode"),
)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | Any | None:
    if isinstance(exc, DATABASE_UNREACHABLE) and (request := context.get("request")) is not None:
        # A database restarting: 503 and whether anything was stored, never a bare 500.
        django_request = getattr(request, "_request", request)
        return unavailable.unavailable(django_request, exc, stored=unavailable.stored_so_far(django_request))
    if isinstance(exc, ServiceError):
        body = {"error": str(exc)}
        if exc.field:
            body["field"] = exc.field
        if exc.explanation:
            body["explanation"] = exc.explanation
        if exc.err_msg:
            body["err_msg"] = exc.err_msg
        return Response(body, status=exc.status)
    if isinstance(exc, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return Response(
            {"error": f"Request body larger than {limit} bytes (DATA_UPLOAD_MAX_MEMORY_SIZE)"},
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
    for kind, message in _INPUT_ERRORS:
        if isinstance(exc, kind):
            view = context.get("view")
            log.warning("%s refused as bad input: %r", type(view).__name__, exc)
            body = {"error": message}
            if field := getattr(exc, "field", None):
                body["field"] = field
            return Response(body, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, ValueError):
        # A parser deep in a service refused the input with its own words, and no layer
        # above turned it into a ServiceError: still the client's input, so a 4xx.
        view = context.get("view")
        log.warning("%s: a ValueError reached the API, answered 400", type(view).__name__, exc_info=exc)
        text = str(exc) or "Invalid request"
        text = text if text.startswith("Invalid") else f"Invalid request: {text}"
        return Response({"error": text}, status=status.HTTP_400_BAD_REQUEST)
    response = drf_handler(exc, context)
    if response is not None and isinstance(response.data, dict) and "detail" in response.data:
        response.data = {"error": str(response.data["detail"])}
    elif response is not None and isinstance(response.data, dict):
        field, messages = next(iter(response.data.items()))
        message = messages[0] if isinstance(messages, list) else messages
        response.data = {"error": f"{field}: {message}", "field": field}
    if response is not None and response.status_code == status.HTTP_401_UNAUTHORIZED:
        hint = "run 'fsched login' or set FSCHED_TOKEN"
        if isinstance(exc, AuthenticationFailed):  # a token that was sent and refused: say why
            response.data = {"error": f"{exc.detail} Authentication required: {hint}"}
        else:
            response.data = {"error": f"Authentication required: {hint}"}
    return response
