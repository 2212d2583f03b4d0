"""``scontrol top``: the new priorities and nice values that put jobs first among their
owner's own pending jobs (pure).

As slurmctld's ``_set_top`` (src/slurmctld/job_mgr.c) does it: the priorities of the jobs
moved and of the owner's other pending jobs that share the first moved job's account,
partition and QOS are pooled and sorted, highest first; the moved jobs take the highest
ones in the order given (one below the previous where two are equal), and their nice falls
by what they gained. The other jobs give that gain back, shared out evenly, each ending
below the last moved job, their nice rising by what they lost. So the user's jobs trade
places among themselves and nobody else's job moves: the sum of the priorities is kept.

Priorities are recomputed by every pass from the job's factors less its nice, so the nice
is what keeps the order.
"""

from __future__ import annotations

from dataclasses import dataclass

# Slurm keeps nice in an unsigned field offset by 2**31; its MIN(nice, gain) is on that.
NICE_OFFSET = 2**31
_UINT32 = 2**32


@dataclass(frozen=True)
class Ranked:
    job_id: int
    priority: int
    nice: int


def top_order(moved: list[Ranked], others: list[Ranked]) -> dict[int, tuple[int, int]]:
    """Job id -> (new priority, new nice) for ``moved`` (valid, pending, not held, in the
    order asked, no repeats) and ``others`` (the owner's jobs that trade places with them,
    pending with a priority above 1, in job id order)."""
    pool = sorted([j.priority for j in moved] + [j.priority for j in others], reverse=True)
    out: dict[int, tuple[int, int]] = {}
    last: int | None = None
    total = 0
    for job, highest in zip(moved, pool, strict=False):
        taken = highest
        # Never below 2: the jobs after it take one less, and 1 is the least a job can hold.
        if last is not None and taken == last and last > 2:
            taken = last - 1
        last = taken
        gain = taken - job.priority
        nice_fall = min(job.nice + NICE_OFFSET, gain)
        total += nice_fall
        out[job.job_id] = (taken, job.nice - nice_fall)
    assert last is not None, "no job to move"
    remaining = len(others)
    for job in others:
        share = int(total / remaining)  # C's division: towards zero
        lowered = (job.priority - share) % _UINT32
        if lowered >= last:
            lowered = last - 1
            share = job.priority - lowered
        out[job.job_id] = (lowered, job.nice + share)
        total -= share
        remaining -= 1
    return out
