from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

from django.db import InterfaceError, OperationalError

# The database cannot be reached for the moment (PostgreSQL restarting, a failover,
# SQLite's write lock held past its timeout): Django wraps the driver's errors into these
# two. What meets one stored nothing that was not committed, and may be tried again;
# anything else (IntegrityError, DataError, a malformed message) retrying cannot help.
DATABASE_UNREACHABLE = (OperationalError, InterfaceError)

_storing_nothing: contextvars.ContextVar[bool] = contextvars.ContextVar("storing_nothing", default=False)


@contextlib.contextmanager
def storing_nothing() -> Iterator[None]:
    """Writes that store nothing a user would look for, such as taking job ids (a failure
    after it leaves a gap): a request that meets an unreachable database after them may
    still answer that nothing was stored (cluster/unavailable.py)."""
    token = _storing_nothing.set(True)
    try:
        yield
    finally:
        _storing_nothing.reset(token)


def is_storing_nothing() -> bool:
    return _storing_nothing.get()


class ServiceError(Exception):
    """Refused input or a forbidden operation; ``str()`` is the message for the user.

    ``explanation``: fsched's figures behind the refusal, a field of the API's answer of
    its own; ``err_msg``: the line slurmctld sends with some refusals, which sbatch prints
    before the message ("Memory specification can not be satisfied", then "Batch job
    submission failed: Requested node configuration is not available")."""

    status = 400

    def __init__(
        self, message: str, *, field: str | None = None, explanation: str = "", err_msg: str = ""
    ) -> None:
        super().__init__(message)
        self.field = field
        self.explanation = explanation
        self.err_msg = err_msg


class PermissionDenied(ServiceError):
    status = 403


class NotFound(ServiceError):
    status = 404
