"""Who may call a view, checked before its body is read: a non-staff user sending a node
change gets 403 whatever the body holds, never a 400 or a 500 from parsing it."""

from __future__ import annotations

from rest_framework import permissions
from rest_framework.request import Request
from rest_framework.views import APIView

DENIED = "Access/permission denied"


def _staff(request: Request) -> bool:
    user = request.user
    return bool(user and user.is_authenticated and user.is_staff)


class StaffOnly(permissions.BasePermission):
    """Every method needs a staff account (node, limits, HRES and power changes)."""

    message = DENIED

    def has_permission(self, request: Request, view: APIView) -> bool:
        return _staff(request)


class StaffWrites(permissions.BasePermission):
    """Any authenticated user reads; changes need a staff account (reservations)."""

    message = DENIED

    def has_permission(self, request: Request, view: APIView) -> bool:
        if request.method in permissions.SAFE_METHODS:
            return bool(request.user and request.user.is_authenticated)
        return _staff(request)
