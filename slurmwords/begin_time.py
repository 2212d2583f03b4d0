"""``sbatch --begin`` and ``scontrol update StartTime=``: Slurm's ``parse_time()`` (pure).

No clock: callers pass ``now``.  A bare time of day means its next occurrence (today if
still ahead of ``now``, else tomorrow).  Slurm compares only hours and minutes there; we
compare the full time so a ``HH:MM:SS`` later today stays today.  Kept out of
:mod:`slurmwords.durations`, which the CLI imports: it never parses these, and their
``re`` would cost every ``squeue`` several ms.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

_UNIT_SECONDS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 7 * 86400}
_NAMED_TIMES = {"midnight": 0, "noon": 12, "elevenses": 11, "fika": 15, "teatime": 16}

_NOW_RE = re.compile(
    r"now(?:\s*([+-])\s*([0-9]+)\s*(seconds?|minutes?|hours?|days?|weeks?)?)?", re.IGNORECASE
)
_CLOCK_RE = re.compile(r"([0-9]{1,2}):([0-9]{2})(?::([0-9]{2}))?(?:\s*([ap]m))?", re.IGNORECASE)
_ISO_DATE_RE = re.compile(r"([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})")
_SEP_DATE_RE = re.compile(r"([0-9]{1,2})([./])([0-9]{1,2})(?:\2([0-9]{2}))?")
_COMPACT_DATE_RE = re.compile(r"([0-9]{2})([0-9]{2})([0-9]{2})?")
_KEYWORDS = ("now", "today", "tomorrow", *_NAMED_TIMES)


def parse_begin_time(text: str, now: datetime) -> datetime:
    """Parse ``sbatch --begin`` (and ``scontrol update StartTime=``) values.

    Accepted, combinable where it makes sense (``tomorrow 16:00``,
    ``2026-12-01T08:00``): ``now[+-count[seconds|minutes|hours|days|weeks]]``
    (seconds by default), ``today``, ``tomorrow``, ``midnight``, ``noon``,
    ``elevenses``, ``fika``, ``teatime``, ``HH:MM[:SS] [AM|PM]``,
    ``YYYY-MM-DD[THH:MM[:SS]]``, ``MMDD[YY]``, ``MM/DD[/YY]``, ``MM.DD[.YY]``,
    ``uts<epoch>``.  The result is in ``now``'s time zone, to whole seconds.
    """
    try:
        return _parse_begin_time(text, now)
    except (OverflowError, OSError):
        # now+99999999999weeks, uts99999999999999: past what datetime or the C library holds.
        raise ValueError(f"Invalid time specification: {text!r}") from None


def _parse_begin_time(text: str, now: datetime) -> datetime:
    s = text.strip()
    bad = ValueError(f"Invalid time specification: {text!r}")
    if s[:3].lower() == "uts":
        digits = s[3:]
        if not digits.isascii() or not digits.isdigit() or int(digits) < 1_000_000:
            raise bad
        return datetime.fromtimestamp(int(digits), tz=now.tzinfo)

    now = now.replace(microsecond=0)
    day: date | None = None
    year_given = True
    clock: tuple[int, int, int] | None = None
    exact: datetime | None = None
    pos = 0
    while pos < len(s):
        ch = s[pos]
        if ch.isspace() or ch == "-":
            pos += 1
            continue
        low = s[pos:].lower()
        keyword = next((k for k in _KEYWORDS if low.startswith(k)), None)
        if keyword == "now":
            m = _NOW_RE.match(s, pos)
            assert m is not None  # "now" always matches
            sign, count, unit = m.groups()
            delta = 0
            if sign:
                delta = int(count) * _UNIT_SECONDS[(unit or "seconds").lower().rstrip("s")]
                delta = -delta if sign == "-" else delta
            exact = now + timedelta(seconds=delta)
            pos = m.end()
            continue
        if keyword is not None:
            if keyword == "today":
                day = now.date()
            elif keyword == "tomorrow":
                day = now.date() + timedelta(days=1)
            else:
                clock = (_NAMED_TIMES[keyword], 0, 0)
            pos += len(keyword)
            continue
        if ch in "Tt":  # the ISO 8601 date/time separator
            pos += 1
            continue
        if not ch.isdigit():
            raise bad
        if (m := _CLOCK_RE.match(s, pos)) is not None:
            hour, minute = int(m.group(1)), int(m.group(2))
            second = int(m.group(3) or 0)
            ampm = (m.group(4) or "").lower()
            if ampm and not 1 <= hour <= 12:
                raise bad
            if ampm == "pm" and hour != 12:
                hour += 12
            elif ampm == "am" and hour == 12:
                hour = 0
            if hour > 23 or minute > 59 or second > 59:
                raise bad
            clock = (hour, minute, second)
            pos = m.end()
            continue
        m = _ISO_DATE_RE.match(s, pos) or _SEP_DATE_RE.match(s, pos) or _COMPACT_DATE_RE.match(s, pos)
        if m is None:
            raise bad
        try:
            if m.re is _ISO_DATE_RE:
                day = date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
            else:
                month = int(m.group(1))
                mday = int(m.group(3) if m.re is _SEP_DATE_RE else m.group(2))
                yy = m.group(4) if m.re is _SEP_DATE_RE else m.group(3)
                year_given = yy is not None
                day = date(2000 + int(yy) if yy else now.year, month, mday)
        except ValueError:
            raise bad from None
        pos = m.end()

    if exact is not None:
        if day is not None or clock is not None:
            raise bad
        return exact
    if day is None and clock is None:
        raise bad
    if clock is None:
        clock = (0, 0, 0)  # a date alone means its midnight
    if day is None:
        # A time of day alone: its next occurrence.
        today = now.replace(hour=clock[0], minute=clock[1], second=clock[2])
        return today if today > now else _at(now.date() + timedelta(days=1), clock, now)
    result = _at(day, clock, now)
    if not year_given and result <= now:
        # MMDD without a year: the next such date, as Slurm does.
        try:
            result = result.replace(year=result.year + 1)
        except ValueError:
            raise bad from None
    return result


def _at(day: date, clock: tuple[int, int, int], now: datetime) -> datetime:
    return datetime(day.year, day.month, day.day, *clock, tzinfo=now.tzinfo)
