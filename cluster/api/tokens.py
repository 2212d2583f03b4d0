"""``/api/auth/token/``: log in for a new API token, revoke the one in use.

Logins go through ``authenticate`` with the request, so django-axes counts the failures
and refuses a locked-out user name before its password is even tried.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import authenticate
from django.contrib.auth.signals import user_logged_in
from django.http import HttpRequest, HttpResponse, JsonResponse
from drf_spectacular.utils import extend_schema
from rest_framework import permissions, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster.api.auth import TokenAuthentication
from cluster.services.api_tokens import expiry_days, token_issue, token_revoke
from cluster.services.errors import ServiceError


def lockout_message() -> str:
    minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
    return f"Account locked: too many failed logins. Try again in {minutes} minutes."


def lockout_response(
    request: HttpRequest, original_response: Any = None, credentials: Any = None
) -> HttpResponse:
    """django-axes's answer to a locked-out login (``AXES_LOCKOUT_CALLABLE``): JSON in the
    API's error shape for the API, the plain message for the console's login form."""
    if request.path.startswith("/api/"):
        return JsonResponse({"error": lockout_message()}, status=status.HTTP_429_TOO_MANY_REQUESTS)
    return HttpResponse(
        lockout_message(), status=status.HTTP_429_TOO_MANY_REQUESTS, content_type="text/plain"
    )


def _text(data: Any, field: str) -> str:
    value = data.get(field) if isinstance(data, dict) else None
    if not isinstance(value, str) or not value:
        raise ServiceError(f"{field}: required, a string", field=field)
    return value


class TokenView(APIView):
    permission_classes = [permissions.AllowAny]
    authentication_classes = [TokenAuthentication]

    @extend_schema(request=dict, responses=dict)
    def post(self, request: Request) -> Response:
        """Log in with ``username`` and ``password``; answers a new token, shown this once.
        ``days`` (optional) asks for another lifetime than FSCHED_TOKEN_TTL_DAYS (0: never)."""
        username, password = _text(request.data, "username"), _text(request.data, "password")
        days = expiry_days(request.data.get("days") if isinstance(request.data, dict) else None)
        # The Django request, not DRF's wrapper: axes flags a lockout on the object its
        # middleware sees.
        user = authenticate(request._request, username=username, password=password)
        if user is None:
            if getattr(request._request, "axes_locked_out", False):
                return Response({"error": lockout_message()}, status=status.HTTP_429_TOO_MANY_REQUESTS)
            return Response({"error": "Invalid user name or password"}, status=status.HTTP_401_UNAUTHORIZED)
        # What login() signals, without a session: axes clears the user's failures, Django
        # records last_login.
        user_logged_in.send(sender=type(user), request=request._request, user=user)
        token, text = token_issue(user, days=days, name="login")
        return Response(
            {"token": text, "username": user.get_username(), "expires": token.expires},
            status=status.HTTP_201_CREATED,
        )

    @extend_schema(request=None, responses=dict)
    def delete(self, request: Request) -> Response:
        """Revoke the token this request is authenticated with."""
        if request.auth is None:
            return Response(
                {"error": "Authentication required: send the token to revoke"},
                status=status.HTTP_401_UNAUTHORIZED,
            )
        token = token_revoke(request.auth.prefix, user=request.user)
        return Response({"revoked": token.prefix, "username": request.user.get_username()})
