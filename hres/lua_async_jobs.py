"""Which jobs' asynchronous pre-run (hres/lua) is running, by job id and run: what the
launch hook, the scheduler's pass and the controller epilog's ``prep.async_running`` ask.
Kept in the controller's memory, as slurmctld keeps it: a restart loses it (see
``hres.lua_async``)."""

from __future__ import annotations

import threading
from typing import Any

# The keys of the marker of a running asynchronous pre-run in its run's
# ``hres.JobPluginRun.prep`` (hres.lua_async): the controller's, never sent to the nodes.
MARKER_KEYS = ("async_pending", "async_owner")

_guard = threading.Lock()
_running: dict[int, int] = {}  # job id -> the run whose asynchronous pre-run is running


def begin(job_id: int, run: int) -> None:
    with _guard:
        _running[job_id] = run


def end(job_id: int, run: int) -> None:
    with _guard:
        if _running.get(job_id) == run:
            del _running[job_id]


def launch_ready(job: Any) -> bool:
    with _guard:
        return _running.get(job.id) != job.restart_count


def busy(job_id: int) -> bool:
    """The job's asynchronous pre-run has not ended (of any run): it is not scheduled."""
    with _guard:
        return job_id in _running


def running(job_id: int, run: int) -> bool:
    with _guard:
        return _running.get(job_id) == run
