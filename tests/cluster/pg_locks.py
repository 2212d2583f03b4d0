"""PostgreSQL lock races for tests: work in a thread of its own connection, and how many
backends of the test database are waiting for a lock."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from django.db import connection, connections


def in_thread(work: Callable[[], object], errors: list[BaseException]) -> threading.Thread:
    """``work()`` started in a thread (its own connection, closed after); what it raises
    goes to ``errors``."""

    def run() -> None:
        try:
            work()
        except BaseException as exc:  # reported by the test
            errors.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def waiting_on_locks() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return cursor.fetchone()[0]


def until(predicate: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)
