from __future__ import annotations

from django.db import InterfaceError, OperationalError

# The database cannot be reached for the moment (PostgreSQL restarting, a failover,
# SQLite's write lock held past its timeout): Django wraps the driver's errors into these
# two. What meets one stored nothing that was not committed, and may be tried again;
# anything else (IntegrityError, DataError, a malformed message) retrying cannot help.
DATABASE_UNREACHABLE = (OperationalError, InterfaceError)


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
