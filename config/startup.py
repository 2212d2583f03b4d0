"""The server's start-up work, tried again while the database cannot do it yet.

Every server process loads the configuration when it starts (``config_load``, slurmctld
reading slurm.conf). In distributed mode that transaction meets the Celery passes and the
other server processes starting at the same moment: PostgreSQL may pick it as a deadlock
victim, or be restarting itself. Both pass in a moment, and a server that exited on them
stayed down until someone restarted it (after a crash, nobody had). A transient database
error is therefore logged and the work tried again, on a fresh connection, for up to
FSCHED_STARTUP_DB_WAIT seconds; anything else, or an error that outlasts the wait, fails
the start as before.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from django.db import connection

from cluster.services.errors import DATABASE_UNREACHABLE

log = logging.getLogger("fsched.server")

T = TypeVar("T")

FIRST_PAUSE = 0.5  # seconds; doubled after each failure, up to MAX_PAUSE
MAX_PAUSE = 5.0


def _fresh_connection() -> None:
    connection.close()  # a connection that failed mid-transaction is not reused


def with_database_retries(
    work: Callable[[], T],
    *,
    wait_for: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    reset: Callable[[], None] = _fresh_connection,
) -> T:
    """``work()``, run again after each transient database error until ``wait_for``
    seconds have passed since the first try; the last error is raised after that."""
    deadline = clock() + wait_for
    pause = FIRST_PAUSE
    while True:
        try:
            return work()
        except DATABASE_UNREACHABLE as exc:
            reset()
            left = deadline - clock()
            if left <= 0:
                raise
            why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            log.warning("start-up: the database failed (%s); trying again in %.1f s", why, min(pause, left))
            sleep(min(pause, left))
            pause = min(pause * 2, MAX_PAUSE)
