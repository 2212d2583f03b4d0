"""slurmdbd.conf's ``PurgeJobAfter``/``PurgeEventAfter`` values: a count of months, or of
hours, days or months when the word follows (``12``, ``12month``, ``30days``, ``720hours``)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

_AGE = re.compile(r"^\s*(\d+)\s*(hours?|days?|months?)?\s*$", re.IGNORECASE)


class RetentionError(ValueError):
    pass


def purge_cutoff(text: str, now: datetime, *, name: str) -> datetime | None:
    """The moment before which records go; None for an empty value (keep for ever)."""
    if not text.strip():
        return None
    m = _AGE.match(text)
    if not m:
        raise RetentionError(
            f"{name}={text}: expected a number of months, or a number followed by hours, days or months"
        )
    count, unit = int(m.group(1)), (m.group(2) or "month").lower()
    if count < 1:
        raise RetentionError(f"{name}={text}: the age must be at least 1")
    if unit.startswith("hour"):
        return now - timedelta(hours=count)
    if unit.startswith("day"):
        return now - timedelta(days=count)
    months = now.year * 12 + now.month - 1 - count
    year, month = divmod(months, 12)
    day = min(now.day, 28)  # a month back from the 31st lands inside the shorter month
    return now.replace(year=year, month=month + 1, day=day)
