"""Slurm's time, duration and memory formats, parsed and printed as Slurm does.

Pure module (no Django, no clock: callers pass ``now``).  Used by the
``slurm.conf`` parser (``MaxTime``, ``DefaultTime``, ``RealMemory``), the CLI
(``sbatch -t``, ``--begin``, ``--mem``) and every place that prints a
duration or a timestamp (``squeue``, ``sinfo``, ``scontrol show``).

Decisions, following Slurm's own parsers:

* A time limit accepts ``minutes``, ``minutes:seconds``,
  ``hours:minutes:seconds``, ``days-hours``, ``days-hours:minutes`` and
  ``days-hours:minutes:seconds``; ``UNLIMITED``, ``INFINITE`` and ``-1`` mean
  no limit (``None``).  Seconds round *up* to whole minutes.  Fields are not
  range checked (``1:90`` is 150 seconds), as in Slurm.
* ``parse_time_limit("0")`` is 0 minutes: that is what ``MaxTime=0`` means in
  ``slurm.conf``.  For ``sbatch -t``/``--time`` Slurm documents that "a time
  limit of zero requests that no time limit be imposed"; use
  :func:`parse_job_time_limit` there, which maps 0 to ``None``.
* ``--begin`` forms are those of Slurm's ``parse_time()``; a bare time of day
  means its next occurrence (today if still ahead of ``now``, else tomorrow).
  Slurm compares only hours and minutes there; we compare the full time so a
  ``HH:MM:SS`` later today stays today.
"""

from __future__ import annotations

import math
import re
from datetime import date, datetime, timedelta

UNLIMITED = "UNLIMITED"

_UNLIMITED_WORDS = frozenset({"UNLIMITED", "INFINITE", "-1"})

# One regex per accepted time limit form; [0-9] rather than \d so that
# non-ASCII digits are refused.
_N = r"([0-9]+)"
_LIMIT_FORMS: tuple[tuple[re.Pattern[str], tuple[int, ...]], ...] = (
    # (pattern, seconds per captured group)
    (re.compile(rf"{_N}"), (60,)),
    (re.compile(rf"{_N}:{_N}"), (60, 1)),
    (re.compile(rf"{_N}:{_N}:{_N}"), (3600, 60, 1)),
    (re.compile(rf"{_N}-{_N}"), (86400, 3600)),
    (re.compile(rf"{_N}-{_N}:{_N}"), (86400, 3600, 60)),
    (re.compile(rf"{_N}-{_N}:{_N}:{_N}"), (86400, 3600, 60, 1)),
)


def parse_duration_seconds(text: str) -> int | None:
    """Parse a Slurm time limit string into seconds (``None`` = unlimited).

    Raises ``ValueError("Invalid time limit specification: ...")`` on junk.
    """
    s = text.strip()
    if s.upper() in _UNLIMITED_WORDS:
        return None
    for pattern, weights in _LIMIT_FORMS:
        m = pattern.fullmatch(s)
        if m:
            return sum(int(g) * w for g, w in zip(m.groups(), weights, strict=True))
    raise ValueError(f"Invalid time limit specification: {text!r}")


def parse_time_limit(text: str) -> int | None:
    """Parse a time limit (``MaxTime``, ``DefaultTime``, ``-t``) into minutes.

    ``None`` means unlimited.  Seconds round up to the next minute, as Slurm's
    ``time_str2mins`` does, so ``0:30`` is 1 minute.  ``0`` stays 0 (see the
    module docstring and :func:`parse_job_time_limit`).
    """
    seconds = parse_duration_seconds(text)
    if seconds is None:
        return None
    return math.ceil(seconds / 60)


def parse_job_time_limit(text: str) -> int | None:
    """Parse ``sbatch -t/--time``: like :func:`parse_time_limit`, but a limit of
    zero "requests that no time limit be imposed" (sbatch(1)), so 0 -> ``None``."""
    minutes = parse_time_limit(text)
    return None if minutes == 0 else minutes


def format_duration(seconds: int | None) -> str:
    """Format an elapsed time or limit as ``squeue`` prints ``%M``/``%l``.

    ``0:00``, ``1:05``, ``1:00:00``, ``2-03:04:05``; ``None`` is ``UNLIMITED``,
    a negative value ``INVALID``.
    """
    if seconds is None:
        return UNLIMITED
    if seconds < 0:
        return "INVALID"
    days, rest = divmod(int(seconds), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}-{hours:02d}:{minutes:02d}:{secs:02d}"
    if hours:
        return f"{hours}:{minutes:02d}:{secs:02d}"
    return f"{minutes}:{secs:02d}"


def format_minutes(minutes: int | None) -> str:
    """Format a limit held in minutes (``MaxTime``, a job's ``TimeLimit``) the
    way ``squeue``/``sinfo`` print it: ``30:00``, ``1-00:00:00``, ``UNLIMITED``."""
    return format_duration(None if minutes is None else minutes * 60)


def format_duration_long(seconds: int | None) -> str:
    """Format as ``scontrol show`` prints times: ``00:30:00``, ``1-00:00:00``,
    ``UNLIMITED``, ``INVALID`` (Slurm's ``secs2time_str``)."""
    if seconds is None:
        return UNLIMITED
    if seconds < 0:
        return "INVALID"
    days, rest = divmod(int(seconds), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    hms = f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{days}-{hms}" if days else hms


def format_minutes_long(minutes: int | None) -> str:
    """``scontrol show partition`` style for a limit in minutes (``MaxTime=00:30:00``)."""
    return format_duration_long(None if minutes is None else minutes * 60)


def format_timestamp(dt: datetime | None) -> str:
    """Format a timestamp as ``scontrol`` prints it: ``2026-11-30T10:00:00``.

    Printed in ``dt``'s own time zone (convert first to show local time);
    ``None`` prints ``Unknown``, as Slurm does for an unset time.
    """
    if dt is None:
        return "Unknown"
    return dt.strftime("%Y-%m-%dT%H:%M:%S")


# --- memory ---------------------------------------------------------------

_MEMORY_RE = re.compile(r"([0-9]+)(?:([KkMmGgTt])[Bb]?)?")
_MB_FACTOR = {"K": None, "M": 1, "G": 1024, "T": 1024 * 1024}


def parse_memory_mb(text: str) -> int:
    """Parse ``--mem``/``RealMemory`` style sizes into megabytes.

    Plain numbers are MB; suffixes ``K``, ``M``, ``G``, ``T`` (optionally
    followed by ``B``, any case) are binary units.  Kilobytes round *up* to
    whole megabytes, as Slurm's ``str_to_mbytes`` does.
    """
    m = _MEMORY_RE.fullmatch(text.strip())
    if not m:
        raise ValueError(f"Invalid memory specification: {text!r}")
    value = int(m.group(1))
    unit = (m.group(2) or "M").upper()
    factor = _MB_FACTOR[unit]
    if factor is None:
        return math.ceil(value / 1024)
    return value * factor


def format_memory_mb(mb: int) -> str:
    """Print megabytes with the largest unit that divides evenly: ``2000M``,
    ``4G``, ``1T`` (the inverse of :func:`parse_memory_mb`)."""
    if mb < 0:
        raise ValueError(f"Invalid memory size: {mb}")
    if mb == 0:
        return "0"
    value = mb
    for unit in ("M", "G", "T"):
        if value % 1024 or unit == "T":
            return f"{value}{unit}"
        value //= 1024
    raise AssertionError("unreachable")  # pragma: no cover


# --- --begin ---------------------------------------------------------------

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
