"""A starting server tries its start-up again while the database fails for a moment (a
deadlock victim, PostgreSQL restarting), and fails as before on anything else or once
the wait is over (config/startup.py)."""

from __future__ import annotations

import pytest
from django.db import OperationalError

from config.startup import with_database_retries


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.pauses: list[float] = []
        self.resets = 0  # fresh connections asked for

    def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)
        self.now += seconds

    def reset(self) -> None:
        self.resets += 1


def retried(work, clock: Clock, *, wait_for: float):
    return with_database_retries(
        work, wait_for=wait_for, clock=lambda: clock.now, sleep=clock.sleep, reset=clock.reset
    )


def failing(times: int, error: Exception):
    calls = []

    def work() -> str:
        calls.append(1)
        if len(calls) <= times:
            raise error
        return "loaded"

    return work, calls


def test_a_deadlock_at_start_up_is_tried_again_until_it_passes(caplog):
    clock = Clock()
    work, calls = failing(3, OperationalError("deadlock detected\nDETAIL: Process 1 waits"))
    assert retried(work, clock, wait_for=60) == "loaded"
    assert len(calls) == 4
    assert clock.pauses == [0.5, 1.0, 2.0] and clock.resets == 3
    assert "start-up: the database failed (deadlock detected); trying again in 0.5 s" in caplog.text


def test_the_last_error_is_raised_once_the_wait_is_over():
    clock = Clock()
    work, calls = failing(100, OperationalError("connection refused"))
    with pytest.raises(OperationalError, match="connection refused"):
        retried(work, clock, wait_for=10)
    assert clock.now == 10  # the last pause is cut to the deadline
    assert sum(clock.pauses) == 10 and len(calls) == len(clock.pauses) + 1


def test_other_errors_fail_the_start_at_once():
    clock = Clock()
    work, calls = failing(1, ValueError("slurm.conf:3: bad line"))
    with pytest.raises(ValueError):
        retried(work, clock, wait_for=60)
    assert len(calls) == 1 and not clock.pauses
