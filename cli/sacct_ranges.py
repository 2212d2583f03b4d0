"""sacct's range filters, read as Slurm reads them (pure).

``-i/--nnodes`` and ``-I/--ncpus`` take ``min[-max]`` through libslurm's
``get_resource_arg_range`` (src/common/proc_args.c): C's ``strtol`` on each number, a
``k``/``m`` suffix multiplying by 1024 or 1048576, ``*`` or nothing meaning 1 to INT_MAX.
``-k/--timelimit-min`` and ``-K/--timelimit-max`` take a time limit (``time_str2mins``).

What slurmdbd then does with them (as_mysql_jobacct_process.c) is kept here too, since a
script relies on its quirks: a minimum of 0 is no filter at all; a minimum alone matches
that count exactly (``-i 2`` is two nodes, not two or more); ``-K`` without ``-k`` is no
filter; a maximum below the minimum matches nothing.
"""

from __future__ import annotations

INT_MAX = 2**31 - 1
_LONG_MAX = 2**63 - 1
_LONG_MIN = -(2**63)
# slurm.h's INFINITE: what time_str2mins returns for UNLIMITED; a job without a limit has it.
INFINITE = 0xFFFFFFFF
_SPACE = " \t\n\v\f\r"


class RangeError(ValueError):
    """The argument does not read: the message is sacct's ``error()`` text."""


def _strtol(text: str, at: int) -> tuple[int, int]:
    """C's ``strtol(text + at, &end, 10)``: (value, end); no digits leaves ``end`` at ``at``."""
    i = at
    while i < len(text) and text[i] in _SPACE:
        i += 1
    sign = 1
    if i < len(text) and text[i] in "+-":
        sign = -1 if text[i] == "-" else 1
        i += 1
    first = i
    while i < len(text) and "0" <= text[i] <= "9":
        i += 1
    if i == first:
        return 0, at
    value = sign * int(text[first:i])
    return max(_LONG_MIN, min(_LONG_MAX, value)), i


def _number(arg: str, at: int, what: str, *, positive: bool) -> tuple[int, int]:
    value, at = _strtol(arg, at)
    suffix = arg[at : at + 1]
    if suffix in ("k", "K"):
        value, at = value * 1024, at + 1
    elif suffix in ("m", "M"):
        value, at = value * 1048576, at + 1
    rest = arg[at : at + 1]
    if (rest not in ("", "-")) or value < 0 or (positive and value == 0):
        raise RangeError(f'Invalid numeric value "{arg}" for {what}.')
    if value > INT_MAX:
        raise RangeError(f"Numeric argument ({min(value, _LONG_MAX)}) too large for {what}.")
    return value, at


def resource_range(arg: str, what: str) -> tuple[int, int | None]:
    """``get_resource_arg_range``: (min, max or None when only a minimum was given)."""
    if arg == "" or arg.startswith("*"):
        return 1, INT_MAX
    low, at = _number(arg, 0, what, positive=False)
    if at == len(arg):
        return low, None
    high, _ = _number(arg, at + 1, what, positive=True)
    return low, high


def folded_range(args: list[str], what: str) -> tuple[int, int | None]:
    """Repeated ``-i``/``-I``: each writes the minimum, and the maximum when it has one."""
    low, high = 0, None
    for arg in args:
        low, given = resource_range(arg, what)
        high = given if given is not None else high
    return low, high


def range_param(low: int, high: int | None) -> str | None:
    """The API's ``min[-max]`` for slurmdbd's filter, or None where it filters nothing."""
    if not low:
        return None
    return str(low) if high is None else f"{low}-{high}"


def time_limit_minutes(text: str) -> int:
    """``-k``/``-K``: minutes (``INFINITE`` for UNLIMITED), refused as sacct does when not a
    time or not above zero."""
    from slurmwords.durations import parse_time_limit  # noqa: PLC0415

    try:
        minutes = parse_time_limit(text)
    except ValueError:
        raise RangeError("Invalid time limit specification") from None
    if minutes is None:
        return INFINITE
    if minutes <= 0:
        raise RangeError("Invalid time limit specification")
    return minutes


def time_limit_param(low_text: str | None, high_text: str | None) -> str | None:
    """``-k``/``-K`` as the API's ``timelimit`` (``min[-max]`` minutes, ``UNLIMITED`` for
    INFINITE), or None where slurmdbd filters nothing (no ``-k``)."""
    low = time_limit_minutes(low_text) if low_text is not None else 0
    high = time_limit_minutes(high_text) if high_text is not None else 0
    if not low:
        return None

    def word(minutes: int) -> str:
        return "UNLIMITED" if minutes == INFINITE else str(minutes)

    return word(low) if not high else f"{word(low)}-{word(high)}"
