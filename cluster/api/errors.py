"""Errors as ``{"error": message}``: one shape for the CLI to print."""

from __future__ import annotations

from typing import Any

from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_handler

from cluster.services.errors import ServiceError


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ServiceError):
        body = {"error": str(exc)}
        if exc.field:
            body["field"] = exc.field
        return Response(body, status=exc.status)
    response = drf_handler(exc, context)
    if response is not None and isinstance(response.data, dict) and "detail" in response.data:
        response.data = {"error": str(response.data["detail"])}
    elif response is not None and isinstance(response.data, dict):
        field, messages = next(iter(response.data.items()))
        message = messages[0] if isinstance(messages, list) else messages
        response.data = {"error": f"{field}: {message}", "field": field}
    if response is not None and response.status_code == status.HTTP_401_UNAUTHORIZED:
        response.data = {"error": "Authentication required: run 'fsched login' or set FSCHED_TOKEN"}
    return response
