"""Asking for a scheduler pass or a power-save cycle: the leaf every service calls.

A submission, a completion or a node coming back asks for a pass, and a change of node
state asks for a power cycle. Who runs them depends on the process: the embedded cycles'
thread (cluster.cycles), a Celery worker woken through Redis (cluster.tasks), or, in an
HTTP helper, the server the helper hands its effects to (cluster.publish). That process
installs its backend at start-up. The services only call this module, which imports no
service, so none of them imports the cycles.

A request runs after the commit: what asked for it is stored whatever happens here. A
failing backend (Redis down) is logged, and the periodic pass catches up.
"""

from __future__ import annotations

import logging
from typing import Protocol

from django.db import transaction

log = logging.getLogger(__name__)


class Backend(Protocol):
    def schedule(self) -> None:
        """Wake a scheduler pass soon."""

    def power(self) -> None:
        """Wake a power-save cycle soon (it acts when power_save_min_interval allows)."""


_backend: Backend | None = None


def install(backend: Backend) -> None:
    """This process's way of running the passes, from now on."""
    global _backend  # noqa: PLW0603 - one backend per process
    _backend = backend


def uninstall(backend: Backend) -> None:
    """Stop using ``backend`` (if it is still the one installed)."""
    global _backend  # noqa: PLW0603
    if _backend is backend:
        _backend = None


def installed() -> Backend | None:
    return _backend


def _ask(what: str, method: str) -> None:
    backend = _backend
    if backend is None:
        return
    try:
        getattr(backend, method)()
    except Exception:
        log.warning("%s not requested (%s failed)", what, type(backend).__name__, exc_info=True)


def request_schedule() -> None:
    """Ask for a scheduler pass now; with no backend (a test, a manage command), nothing."""
    _ask("scheduler pass", "schedule")


def request_power() -> None:
    """Ask for a power-save cycle now."""
    _ask("power-save cycle", "power")


def schedule_after_commit() -> None:
    """A pass once the current transaction commits (at once outside one)."""
    # Looked up when it runs, not bound now: a test may put its own in its place.
    transaction.on_commit(lambda: request_schedule())  # noqa: PLW0108


def power_after_commit() -> None:
    """A power-save cycle once the current transaction commits."""
    transaction.on_commit(lambda: request_power())  # noqa: PLW0108
