"""Usage accounting with decay and resets: pure functions, the clock passed in (Slurm's
resource_limits.html, "Controlling how GrpTRESMins usage decays" and the UsageFactor NOTE).

A :class:`UsageRecord` exists per association and per QOS (keys :func:`assoc_key`,
:func:`qos_key`).  A running job charges, every accounting cycle, its TRES-seconds
(GrpTRESMins), its wall seconds (GrpWall) and its billing-seconds (RawUsage, fairshare) to
its association and every ancestor, and to its QOS and partition QOS, multiplied by the
*current* UsageFactor of its QOS.  GrpTRESRunMins is different: it is booked with the factor
in effect when the job started and released with that same factor (see
:func:`run_minutes`); the adapter stores that factor on the job at start and rebooks it on
restart or reconfigure, as slurmctld does.

Decay is exponential: ``usage * 2 ** (-elapsed / half_life)``.

* ``PriorityDecayHalfLife`` (minutes in slurm.conf; seconds here) decays every counter.
* ``TresDecayHalfLife`` (per association or QOS, per TRES, seconds) overrides it for that
  TRES's GrpTRESMins only; ``0`` means never decay: an allocation that never replenishes.
* A QOS with ``NoDecay`` does not decay at all (GrpTRESMins, GrpWall, RawUsage).
* ``PriorityUsageResetPeriod`` zeroes every counter at a calendar boundary of the
  controller's local time instead (``DAILY``, ``WEEKLY`` (Sunday 00:00), ``MONTHLY``,
  ``QUARTERLY``, ``YEARLY``), including TRES with a half-life of 0; ``NOW`` zeroes them
  once, at start or reconfigure, never in a cycle.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo

UsageKey = tuple[str, ...]

RESET_PERIODS = ("NONE", "NOW", "DAILY", "WEEKLY", "MONTHLY", "QUARTERLY", "YEARLY")


def assoc_key(account: str, user: str = "", partition: str = "") -> UsageKey:
    return ("assoc", account, user, partition)


def qos_key(name: str) -> UsageKey:
    return ("qos", name)


# --------------------------------------------------------------------------- decay


def decay_factor(elapsed: float, half_life: float) -> float:
    """The multiplier after ``elapsed`` seconds; a half-life <= 0 never decays."""
    if half_life <= 0 or elapsed <= 0:
        return 1.0
    return 0.5 ** (elapsed / half_life)


def decay(usage: float, elapsed: float, half_life: float) -> float:
    """``usage`` after ``elapsed`` seconds of decay with ``half_life`` seconds (0: none)."""
    return usage * decay_factor(elapsed, half_life)


@dataclass(frozen=True)
class UsageRecord:
    """Decayed usage of one association or QOS.

    ``raw_usage`` is billing-seconds (Slurm's RawUsage), ``tres_seconds`` the GrpTRESMins
    usage per TRES in TRES-seconds, ``wall_seconds`` the GrpWall usage.
    """

    raw_usage: float = 0.0
    tres_seconds: Mapping[str, float] = field(default_factory=dict)
    wall_seconds: float = 0.0

    def tres_mins(self, tres: str) -> float:
        return self.tres_seconds.get(tres, 0.0) / 60.0

    @property
    def wall_mins(self) -> float:
        return self.wall_seconds / 60.0


EMPTY = UsageRecord()


def decay_record(
    record: UsageRecord,
    elapsed: float,
    half_life: float,
    *,
    tres_half_life: Mapping[str, float] | None = None,
    no_decay: bool = False,
) -> UsageRecord:
    """Decay one record by ``elapsed`` seconds; ``tres_half_life`` overrides per TRES
    (GrpTRESMins only), ``no_decay`` (QOS NoDecay) leaves the record as it is."""
    if no_decay or elapsed <= 0:
        return record
    f = decay_factor(elapsed, half_life)
    overrides = tres_half_life or {}
    tres = {
        name: value * (decay_factor(elapsed, overrides[name]) if name in overrides else f)
        for name, value in record.tres_seconds.items()
    }
    return UsageRecord(record.raw_usage * f, tres, record.wall_seconds * f)


def charge_record(
    record: UsageRecord, tres: Mapping[str, float], seconds: float, *, billing: float, factor: float
) -> UsageRecord:
    """Add ``seconds`` of a job holding ``tres`` (billing ``billing``) at UsageFactor ``factor``.
    A factor of 0 adds no timed usage."""
    if seconds <= 0 or factor == 0:
        return record
    scale = seconds * factor
    merged = dict(record.tres_seconds)
    for name, count in tres.items():
        if count:
            merged[name] = merged.get(name, 0.0) + count * scale
    return UsageRecord(record.raw_usage + billing * scale, merged, record.wall_seconds + scale)


def run_minutes(
    tres: Mapping[str, float], remaining_seconds: float | None, start_factor: float
) -> dict[str, float]:
    """GrpTRESRunMins booked by a running job: TRES times its remaining time limit, with the
    UsageFactor in effect when it started (its NOTE).  ``None`` remaining is INFINITE."""
    if remaining_seconds is None:
        return {name: float("inf") if count and start_factor else 0.0 for name, count in tres.items()}
    minutes = max(remaining_seconds, 0.0) / 60.0 * start_factor
    return {name: count * minutes for name, count in tres.items()}


# --------------------------------------------------------------------------- resets


def parse_reset_period(text: str) -> str:
    value = text.strip().upper()
    if value not in RESET_PERIODS:
        raise ValueError(f"PriorityUsageResetPeriod={text}: expected one of {', '.join(RESET_PERIODS)}")
    return value


def next_reset(period: str, after: float, tz: tzinfo = UTC) -> float | None:
    """The first reset boundary strictly after ``after`` (epoch seconds), or None.

    Boundaries are calendar instants in ``tz``, the controller's local time zone, as
    slurmctld computes them with localtime(): DAILY is the next local midnight, WEEKLY
    the next Sunday 00:00, MONTHLY/QUARTERLY/YEARLY the first day of the next month,
    quarter or year at 00:00, whatever the UTC offset (DST included).

    ``NOW`` has no boundary: it clears usage once, when the controller starts or is
    reconfigured (the adapter does that), and the cycles then behave as ``NONE``, as
    Slurm's priority/multifactor switches the period to NONE after its one reset.
    """
    if period in ("NONE", "NOW"):
        return None
    t = datetime.fromtimestamp(after, tz)
    midnight = t.replace(hour=0, minute=0, second=0, microsecond=0)
    if period == "DAILY":
        nxt = midnight + timedelta(days=1)
    elif period == "WEEKLY":
        # Sunday 00:00; weekday(): Monday=0 .. Sunday=6.
        days = (6 - t.weekday()) % 7 or 7
        nxt = midnight + timedelta(days=days)
    elif period == "MONTHLY":
        nxt = _month_start(t.year, t.month + 1, tz)
    elif period == "QUARTERLY":
        nxt = _month_start(t.year, (t.month - 1) // 3 * 3 + 4, tz)
    elif period == "YEARLY":
        nxt = _month_start(t.year + 1, 1, tz)
    else:
        raise ValueError(f"unknown PriorityUsageResetPeriod {period!r}")
    return nxt.timestamp()


def _month_start(year: int, month: int, tz: tzinfo) -> datetime:
    year += (month - 1) // 12
    month = (month - 1) % 12 + 1
    return datetime(year, month, 1, tzinfo=tz)


def reset_due(period: str, last_reset: float, now: float, tz: tzinfo = UTC) -> bool:
    nxt = next_reset(period, last_reset, tz)
    return nxt is not None and now >= nxt


# --------------------------------------------------------------------------- a cycle


@dataclass(frozen=True, slots=True)
class RunningCharge:
    """What a running job charges per cycle: the usage records it feeds (its association and
    ancestors, its QOS and partition QOS), its TRES, billing, and the *current* UsageFactor
    of its QOS (RawUsage, GrpTRESMins and GrpWall accrue with the current factor)."""

    keys: tuple[UsageKey, ...]
    tres: Mapping[str, float]
    billing: float
    start_time: float
    usage_factor: float = 1.0


@dataclass(frozen=True)
class DecayPolicy:
    """``half_life`` is PriorityDecayHalfLife in seconds (0: no decay); ``tres_half_life``
    the TresDecayHalfLife of each record that sets one; ``no_decay`` the NoDecay QOS keys."""

    half_life: float = 7 * 86400.0
    tres_half_life: Mapping[UsageKey, Mapping[str, float]] = field(default_factory=dict)
    no_decay: frozenset[UsageKey] = frozenset()
    reset_period: str = "NONE"
    tz: tzinfo = UTC


def usage_cycle(
    records: Mapping[UsageKey, UsageRecord],
    jobs: Iterable[RunningCharge],
    *,
    last: float,
    now: float,
    policy: DecayPolicy,
    last_reset: float,
) -> tuple[dict[UsageKey, UsageRecord], bool]:
    """One accounting cycle from ``last`` to ``now``: reset if a boundary passed, else
    decay, then charge the running jobs for the interval.  Returns the new records and
    whether a reset happened (the adapter then stores ``now`` as the last reset)."""
    elapsed = max(0.0, now - last)
    reset = reset_due(policy.reset_period, last_reset, now, policy.tz)
    if reset:
        out: dict[UsageKey, UsageRecord] = {key: EMPTY for key in records}
    else:
        out = {
            key: decay_record(
                rec,
                elapsed,
                policy.half_life,
                tres_half_life=policy.tres_half_life.get(key),
                no_decay=key in policy.no_decay,
            )
            for key, rec in records.items()
        }
    for job in jobs:
        seconds = now - max(last, job.start_time)
        if seconds <= 0:
            continue
        for key in job.keys:
            out[key] = charge_record(
                out.get(key, EMPTY), job.tres, seconds, billing=job.billing, factor=job.usage_factor
            )
    return out, reset


def clear_usage(
    records: Mapping[UsageKey, UsageRecord], keys: Iterable[UsageKey]
) -> dict[UsageKey, UsageRecord]:
    """``sacctmgr modify ... set RawUsage=0``: every counter of the records named (for an
    account, the caller passes it and every association beneath) goes to zero; there is no
    per-TRES reset."""
    out = dict(records)
    for key in keys:
        out[key] = EMPTY
    return out


__all__ = [
    "EMPTY",
    "RESET_PERIODS",
    "DecayPolicy",
    "RunningCharge",
    "UsageKey",
    "UsageRecord",
    "assoc_key",
    "charge_record",
    "clear_usage",
    "decay",
    "decay_factor",
    "decay_record",
    "next_reset",
    "parse_reset_period",
    "qos_key",
    "reset_due",
    "run_minutes",
    "usage_cycle",
]
