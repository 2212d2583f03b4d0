"""Slurm's time limits, durations and timestamps, read and printed as Slurm does (pure).

The ``slurm.conf`` parser (``MaxTime``, ``DefaultTime``), the controller (``sbatch -t``,
``scontrol update TimeLimit=``) and the CLI's printers (``squeue``, ``sinfo``,
``scontrol show``) all use these.  The CLI imports this module on every ``squeue``, so it
imports nothing: no ``re`` (several ms), no ``datetime`` at run time.

Decisions, following Slurm's own parsers:

* A time limit accepts ``minutes``, ``minutes:seconds``, ``hours:minutes:seconds``,
  ``days-hours``, ``days-hours:minutes`` and ``days-hours:minutes:seconds``; ``UNLIMITED``,
  ``INFINITE`` and ``-1`` mean no limit (``None``).  Seconds round *up* to whole minutes.
  Fields are not range checked (``1:90`` is 150 seconds), as in Slurm.
* ``parse_time_limit("0")`` is 0 minutes: that is what ``MaxTime=0`` means in
  ``slurm.conf``.  For ``sbatch -t``/``--time`` Slurm documents that "a time limit of zero
  requests that no time limit be imposed"; use :func:`parse_job_time_limit` there, which
  maps 0 to ``None``.
* Printing has two forms: squeue/sinfo's ``_print_secs`` (``0:05``, ``1:02:03``,
  ``1-02:03:04``) and libslurm's ``secs2time_str`` as scontrol prints (``00:00:05``).
"""

from __future__ import annotations

# typing.TYPE_CHECKING would import typing (several ms of the CLI's start).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import datetime

UNLIMITED = "UNLIMITED"
INVALID = "INVALID"
# scontrol's timestamps: local time, no zone.
TIMESTAMP_FORMAT = "%Y-%m-%dT%H:%M:%S"

_UNLIMITED_WORDS = frozenset({"UNLIMITED", "INFINITE", "-1"})
# Seconds per field of each form, by its number of ``:`` fields: without a day
# (``M``, ``M:S``, ``H:M:S``) and after ``D-`` (``D-H``, ``D-H:M``, ``D-H:M:S``).
_CLOCK_WEIGHTS = ((60,), (60, 1), (3600, 60, 1))
_DAY_WEIGHTS = ((86400, 3600), (86400, 3600, 60), (86400, 3600, 60, 1))


def _is_number(field: str) -> bool:
    # ASCII only: str.isdigit() alone takes "١٢" and "²".
    return field.isascii() and field.isdigit()


def parse_duration_seconds(text: str) -> int | None:
    """Parse a Slurm time limit string into seconds (``None`` = unlimited).

    Raises ``ValueError("Invalid time limit specification: ...")`` on junk.
    """
    s = text.strip()
    if s.upper() in _UNLIMITED_WORDS:
        return None
    days, dash, clock = s.partition("-")
    fields = clock.split(":") if dash else days.split(":")
    numbers = [days, *fields] if dash else fields
    if len(fields) > 3 or not all(_is_number(f) for f in numbers):
        raise ValueError(f"Invalid time limit specification: {text!r}")
    weights = (_DAY_WEIGHTS if dash else _CLOCK_WEIGHTS)[len(fields) - 1]
    return sum(int(n) * w for n, w in zip(numbers, weights, strict=True))


def parse_time_limit(text: str) -> int | None:
    """Parse a time limit (``MaxTime``, ``DefaultTime``, ``-t``) into minutes.

    ``None`` means unlimited.  Seconds round up to the next minute, as Slurm's
    ``time_str2mins`` does, so ``0:30`` is 1 minute.  ``0`` stays 0 (see the
    module docstring and :func:`parse_job_time_limit`).
    """
    seconds = parse_duration_seconds(text)
    if seconds is None:
        return None
    return -(-seconds // 60)  # integer ceiling: exact where seconds / 60 would round


def parse_job_time_limit(text: str) -> int | None:
    """Parse ``sbatch -t/--time``: like :func:`parse_time_limit`, but a limit of
    zero "requests that no time limit be imposed" (sbatch(1)), so 0 -> ``None``."""
    minutes = parse_time_limit(text)
    return None if minutes == 0 else minutes


def _clock(seconds: int, *, padded: bool) -> str:
    days, rest = divmod(int(seconds), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}-{hours:02d}:{minutes:02d}:{secs:02d}"
    if padded:
        return f"{hours:02d}:{minutes:02d}:{secs:02d}"
    if hours:
        return f"{hours}:{minutes:02d}:{secs:02d}"
    return f"{minutes}:{secs:02d}"


def format_duration(seconds: int | None) -> str:
    """An elapsed time or a limit as ``squeue`` prints ``%M``/``%l``.

    ``0:00``, ``1:05``, ``1:00:00``, ``2-03:04:05``; ``None`` is ``UNLIMITED``,
    a negative value ``INVALID``.
    """
    if seconds is None:
        return UNLIMITED
    return INVALID if seconds < 0 else _clock(seconds, padded=False)


def format_duration_long(seconds: int | None) -> str:
    """As ``scontrol show`` prints times: ``00:30:00``, ``1-00:00:00``, ``UNLIMITED``,
    ``INVALID`` (Slurm's ``secs2time_str``)."""
    if seconds is None:
        return UNLIMITED
    return INVALID if seconds < 0 else _clock(seconds, padded=True)


def format_minutes(minutes: int | None, unlimited: str = UNLIMITED) -> str:
    """A limit held in minutes (``MaxTime``, a job's ``TimeLimit``) the way ``squeue``
    prints it: ``30:00``, ``1-00:00:00``; no limit is ``unlimited`` (sinfo says ``infinite``)."""
    return unlimited if minutes is None else format_duration(minutes * 60)


def format_minutes_long(minutes: int | None, unlimited: str = UNLIMITED) -> str:
    """``scontrol show partition`` style for a limit in minutes (``MaxTime=00:30:00``);
    no limit is ``unlimited`` (sacctmgr prints nothing)."""
    return unlimited if minutes is None else format_duration_long(minutes * 60)


def format_timestamp(dt: datetime | None, none: str = "Unknown") -> str:
    """A timestamp as ``scontrol`` prints it: ``2026-11-30T10:00:00``.

    Printed in ``dt``'s own time zone (convert first to show local time); an unset time
    prints ``none``: Slurm says ``Unknown`` for most, ``None`` for a node's ``BootTime``.
    """
    return none if dt is None else dt.strftime(TIMESTAMP_FORMAT)
