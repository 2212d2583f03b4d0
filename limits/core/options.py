"""sacctmgr's option names and values (pure, no Django): ``GrpTRESMins=cpu=100000``,
``MaxWall=2-00:00:00``, ``QOS+=high``, ``Flags-=NoDecay``, ``GrpTRES=cpu=-1``.

:func:`apply_option` turns one ``name[+|-]=value`` into the new value of a model column,
given its current value: TRES limits merge (``-1`` removes one TRES), counts and times
take ``-1`` as "unset", lists take ``+=``/``-=``.  Bad input raises :class:`OptionError`
with Slurm-like wording; nothing is written by this module.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable

from limits.core.policy import QOS_FLAGS, AssocLimits, QOSLimits
from slurmwords.durations import parse_time_limit
from slurmwords.tres import apply_tres_update, format_tres, parse_tres

# The integer columns are 32-bit on PostgreSQL; TRES counts are Slurm's uint64 (less the
# values it keeps for INFINITE and NO_VAL).
COUNT_MAX = 2**31 - 1
TRES_MAX = 2**63 - 1


class OptionError(ValueError):
    """An option or value sacctmgr would refuse."""


def _fields(cls: type) -> dict[str, str]:
    return {f.name.replace("_", ""): f.name for f in dataclasses.fields(cls)}


_TRES_FIELDS = frozenset(
    f.name
    for cls in (AssocLimits, QOSLimits)
    for f in dataclasses.fields(cls)
    if f.default_factory is not dataclasses.MISSING
)
_ALIASES = {
    "maxwall": "max_wall_duration_per_job",
    "maxtres": "max_tres_per_job",
    "maxtresmins": "max_tres_mins_per_job",
    "maxsubmit": "max_submit_jobs",
    "grpsubmit": "grp_submit_jobs",
    "maxtrespu": "max_tres_per_user",
    "maxtrespa": "max_tres_per_account",
    "maxjobspu": "max_jobs_per_user",
    "maxjobspa": "max_jobs_per_account",
    "maxsubmitjobspu": "max_submit_jobs_per_user",
    "maxsubmitjobspa": "max_submit_jobs_per_account",
    "maxsubmitpu": "max_submit_jobs_per_user",
    "maxsubmitpa": "max_submit_jobs_per_account",
    "mintres": "min_tres_per_job",
}
# Non-limit columns: option (lower case) -> (column, kind).
_ASSOC_OTHER = {
    "fairshare": ("fairshare", "fairshare"),
    "shares": ("fairshare", "fairshare"),
    "qos": ("qos", "qoslist"),
    "qoslevel": ("qos", "qoslist"),
    "defaultqos": ("default_qos", "qosname"),
    "tresdecayhalflife": ("tres_decay_half_life", "halflife"),
    "rawusage": ("raw_usage", "rawusage"),
    "parent": ("parent", "account"),
}
_QOS_OTHER = {
    "priority": ("priority", "uint"),
    "flags": ("flags", "flags"),
    "usagefactor": ("usage_factor", "float"),
    "limitfactor": ("limit_factor", "float_or_unset"),
    "gracetime": ("grace_time", "seconds"),
    "preempt": ("preempt", "qoslist"),
    "description": ("description", "str"),
    "tresdecayhalflife": ("tres_decay_half_life", "halflife"),
    "rawusage": ("raw_usage", "rawusage"),
}


def assoc_option(name: str) -> tuple[str, str]:
    """(column, kind) of an association option, or OptionError."""
    return _lookup(name, _fields(AssocLimits), _ASSOC_OTHER)


def qos_option(name: str) -> tuple[str, str]:
    return _lookup(name, _fields(QOSLimits), _QOS_OTHER)


def _lookup(name: str, limits: dict[str, str], other: dict[str, tuple[str, str]]) -> tuple[str, str]:
    key = name.strip().lower()
    if key in other:
        return other[key]
    column = limits.get(key) or _ALIASES.get(key)
    if column is None or column not in limits.values():
        raise OptionError(f"Unknown option: {name}")
    if column in _TRES_FIELDS:
        return column, "tres"
    if "wall" in column:
        return column, "minutes"
    return column, "count"


def _count(text: str, name: str) -> int | None:
    digits = text.strip().removeprefix("-")
    # ASCII digits only: int() would take "٣" and "1_000", and parse any length.
    if not (digits.isascii() and digits.isdigit()):
        raise OptionError(f"Invalid value for {name}: '{text}' is not a number")
    if len(digits) > 20:
        raise OptionError(f"Invalid value for {name}: {text} (at most {COUNT_MAX})")
    value = int(text)
    if value == -1:
        return None
    if value < 0:
        raise OptionError(
            f"Invalid value for {name}: {value} (negative limits other than -1 are not allowed)"
        )
    return _bounded(value, name, COUNT_MAX)


def _bounded(value: int, name: str, high: int) -> int:
    if value > high:
        raise OptionError(f"Invalid value for {name}: {value} (at most {high})")
    return value


def _tres_bounded(update: dict[str, int | None], name: str) -> None:
    for tres, count in update.items():
        if count is not None:
            _bounded(count, f"{name} {tres}", TRES_MAX)


def _csv(text: str) -> list[str]:
    return [w.strip() for w in text.split(",") if w.strip()]


def apply_option(name: str, op: str, kind: str, value: str, current: object) -> object:
    """The column's new value after ``name op value`` (``op`` is ``=``, ``+=`` or ``-=``).

    TRES and half-life columns hold TRES strings; list columns comma-separated text.
    """
    if op != "=" and kind not in ("qoslist", "flags"):
        raise OptionError(f"{name} does not take '{op}'")
    if kind in ("tres", "halflife"):
        try:
            update = parse_tres(value)
            held = parse_tres(str(current or ""))
        except ValueError as exc:  # TresError, or int() of a count too long to read
            raise OptionError(f"Invalid value for {name}: {exc}") from None
        _tres_bounded(update, name)
        return format_tres(apply_tres_update(held, update))
    if kind in {"count", "uint"}:
        result = _count(value, name)
        return result if kind == "count" else (result or 0)
    if kind == "minutes":
        if value.strip() == "-1":
            return None
        try:
            minutes = parse_time_limit(value)
        except (ValueError, OverflowError) as exc:
            raise OptionError(f"Invalid value for {name}: {value} ({exc})") from None
        if minutes is not None and minutes > COUNT_MAX:
            raise OptionError(f"Invalid value for {name}: {value} (at most {COUNT_MAX} minutes)")
        return minutes
    if kind == "seconds":
        # GraceTime: seconds, or [hh:]mm:ss.
        parts = value.strip().split(":")
        if value.strip() == "-1":
            return 0
        if not all(p.isascii() and p.isdigit() and len(p) <= 10 for p in parts) or len(parts) > 3:
            raise OptionError(f"Invalid value for {name}: {value}")
        seconds = 0
        for p in parts:
            seconds = seconds * 60 + int(p)
        return _bounded(seconds, name, COUNT_MAX)
    if kind in ("float", "float_or_unset"):
        if kind == "float_or_unset" and value.strip() == "-1":
            return None
        try:
            number = float(value)
        except ValueError:
            raise OptionError(f"Invalid value for {name}: '{value}' is not a number") from None
        if not math.isfinite(number) or number < 0:
            raise OptionError(f"Invalid value for {name}: {value} (a finite number >= 0 is expected)")
        return number
    if kind == "fairshare":
        text = value.strip()
        if text.lower() == "parent":
            return "parent"
        result = _count(text, name)
        return "1" if result is None else str(result)
    if kind == "flags":
        given = _csv(value)
        known = {f.lower(): f for f in QOS_FLAGS}
        flags = []
        for f in given:
            if f.lower() not in known and f.lower() != "none":
                raise OptionError(f"Invalid value for Flags: unknown flag '{f}'")
            if f.lower() != "none":
                flags.append(known[f.lower()])
        return _merge(_csv(str(current or "")), flags, op)
    if kind == "qoslist":
        return _merge(_csv(str(current or "")), _csv(value), op)
    if kind == "rawusage":
        if value.strip() != "0":
            raise OptionError("RawUsage can only be set to 0")
        return 0
    return value.strip()


def _merge(current: Iterable[str], given: list[str], op: str) -> str:
    out = list(current)
    if op == "=":
        out = []
    for item in given:
        if op == "-=":
            if item in out:
                out.remove(item)
        elif item not in out:
            out.append(item)
    return ",".join(out)


def split_option(text: str) -> tuple[str, str, str]:
    """``QOS+=high`` -> ("QOS", "+=", "high"); ``GrpTRES=cpu=1`` -> ("GrpTRES", "=", "cpu=1")."""
    name, eq, value = text.partition("=")
    if not eq or not name.strip():
        raise OptionError(f"Unknown option: {text}")
    op = "="
    if name.endswith(("+", "-")):
        op = name[-1] + "="
        name = name[:-1]
    return name.strip(), op, value


__all__ = ["OptionError", "apply_option", "assoc_option", "qos_option", "split_option"]
