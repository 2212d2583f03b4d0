"""The controller's "now": the leaf every service, extension and cycle asks for the time.

Live, it is the wall clock (``django.utils.timezone.now``). The simulator installs a
virtual clock that jumps from event to event, so the very services that run the cluster
run a workload without sleeping. Like ``cluster.triggers``, one backend per process,
installed at start-up; this module imports no service.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from django.utils import timezone

Backend = Callable[[], datetime]

_backend: Backend = timezone.now


def now() -> datetime:
    """The current time (aware, UTC) for whatever the controller decides."""
    return _backend()


def install(backend: Backend) -> None:
    """This process's clock from now on (the simulator's virtual one)."""
    global _backend  # noqa: PLW0603 - one clock per process
    _backend = backend


def uninstall() -> None:
    """Back to the wall clock."""
    global _backend  # noqa: PLW0603
    _backend = timezone.now


def timestamp() -> float:
    """``now()`` as seconds since the epoch, for the places that keep floats."""
    return now().timestamp()
