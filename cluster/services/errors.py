from __future__ import annotations


class ServiceError(Exception):
    """Refused input or a forbidden operation; ``str()`` is the message for the user."""

    status = 400

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class PermissionDenied(ServiceError):
    status = 403


class NotFound(ServiceError):
    status = 404
