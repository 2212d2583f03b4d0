"""A job's times as Slurm shows them, one rule for the API, the CLI and the console."""

from __future__ import annotations

from datetime import datetime, timedelta


def expected_end(start: datetime | None, end: datetime | None, time_limit: int | None) -> datetime | None:
    """EndTime: when the job ended, or while it runs its start plus its time limit (minutes),
    as slurmctld sets end_time when it starts a job; None without either."""
    if end:
        return end
    if start and time_limit:
        return start + timedelta(minutes=time_limit)
    return None
