"""The figures of a group of jobs (the whole simulation, a partition, an account, a user):
counts by end state, utilisation, wait and bounded-slowdown distributions.

Quantiles interpolate linearly between the two nearest ranks (Hyndman and Fan's type 7,
numpy's default): the p-quantile of sorted x[0..n-1] is x[h] at h = (n-1)·p, interpolated.
Bounded slowdown is (wait + run) / max(run, 10 s), the usual bound (Feitelson's) that keeps
jobs of a few seconds from dominating the mean.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

DIGITS = 6
SLOWDOWN_BOUND = 10.0  # seconds
# The wait histogram's bins, in seconds: decades from 1 s, [0,1) first, [1e6,inf) last.
WAIT_EDGES = (0, 1, 10, 100, 1_000, 10_000, 100_000, 1_000_000)


def histogram_labels() -> list[str]:
    ends = [*WAIT_EDGES[1:], "inf"]
    return [f"[{lo},{hi})" for lo, hi in zip(WAIT_EDGES, ends, strict=True)]


HISTOGRAM_LABELS = tuple(histogram_labels())


def r(x: float | None) -> float | None:
    return None if x is None else round(x, DIGITS)


def quantile(sorted_x: Sequence[float], p: float) -> float | None:
    if not sorted_x:
        return None
    h = (len(sorted_x) - 1) * p
    lo = math.floor(h)
    hi = min(lo + 1, len(sorted_x) - 1)
    return sorted_x[lo] + (h - lo) * (sorted_x[hi] - sorted_x[lo])


def bounded_slowdown(wait: float, run: float) -> float:
    return (wait + run) / max(run, SLOWDOWN_BOUND)


def wait_histogram(waits: Iterable[float]) -> dict[str, int]:
    counts = dict.fromkeys(HISTOGRAM_LABELS, 0)
    for w in waits:
        i = len(WAIT_EDGES) - 1
        while i > 0 and w < WAIT_EDGES[i]:
            i -= 1
        counts[HISTOGRAM_LABELS[i]] += 1
    return counts


def distribution(values: list[float], quantiles: dict[str, float], *, with_max: bool) -> dict:
    values.sort()
    out: dict[str, float | None] = {"mean": r(sum(values) / len(values)) if values else None}
    out.update({name: r(quantile(values, p)) for name, p in quantiles.items()})
    if with_max:
        out["max"] = r(values[-1]) if values else None
    return out


@dataclass
class GroupTally:
    """What the report adds up for one group while it walks the jobs."""

    jobs: int = 0
    started: int = 0
    running_at_end: int = 0
    pending_at_end: int = 0
    end_states: dict[str, int] = field(default_factory=dict)
    cpu_seconds: float = 0.0
    waits: list[float] = field(default_factory=list)
    slowdowns: list[float] = field(default_factory=list)

    def figures(self, *, available_all: float, available_powered: float) -> dict:
        """``available_*``: the CPU-seconds the utilisation divides by."""
        ends = self.end_states
        return {
            "jobs": self.jobs,
            "started": self.started,
            "completed": ends.get("COMPLETED", 0),
            "timeout": ends.get("TIMEOUT", 0),
            "failed": ends.get("FAILED", 0),
            "end_states": dict(sorted(ends.items())),
            "running_at_end": self.running_at_end,
            # Waits count the started jobs only: these never started, their wait is longer.
            "pending_at_end": self.pending_at_end,
            "cpu_hours": r(self.cpu_seconds / 3600),
            "utilisation_all": r(self.cpu_seconds / available_all) if available_all > 0 else None,
            "utilisation_powered": (
                r(self.cpu_seconds / available_powered) if available_powered > 0 else None
            ),
            "wait": distribution(self.waits, {"median": 0.5, "p90": 0.9, "p99": 0.99}, with_max=True),
            "slowdown": distribution(self.slowdowns, {"median": 0.5, "p90": 0.9}, with_max=False),
            "wait_histogram": wait_histogram(self.waits),
        }
