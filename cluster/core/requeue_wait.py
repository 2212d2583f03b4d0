"""When a requeued job may start again: slurmctld's batch_requeue_fini gives it a begin
time past the expiry of its last run's credentials, ``AuthInfo=cred_expire=N`` (src/
interfaces/cred.c: 120 s unless set; under 5 refused for the default) plus one second.
A later ``--begin`` stays."""

from __future__ import annotations

from datetime import datetime, timedelta

from slurmwords.option_lists import option_items

DEFAULT_CRED_EXPIRE = 120
MIN_CRED_EXPIRE = 5


def cred_expire(auth_info: object) -> int:
    """AuthInfo's cred_expire=, in seconds."""
    value = option_items(auth_info).get("cred_expire")
    try:
        seconds = int(value or "")
    except ValueError:
        return DEFAULT_CRED_EXPIRE
    return seconds if seconds >= MIN_CRED_EXPIRE else DEFAULT_CRED_EXPIRE


def requeued_begin(now: datetime, begin: datetime | None, auth_info: object) -> datetime:
    """The requeued job's begin time."""
    if begin is not None and begin > now:
        return begin
    return now + timedelta(seconds=cred_expire(auth_info) + 1)
