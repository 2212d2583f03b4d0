"""How long an allocation-only job outlives a silent holder (issue #16 point 2). Pure.

Slurm's slurmctld pings a job's srun/salloc every InactiveLimit/3 and ends the job
(TIMEOUT, reason InactiveLimit) when it stops answering for InactiveLimit seconds.  In
fsched the holder calls the controller instead: it renews a lease every third of its
length, and the controller's health cycle ends a job whose lease ran out.  Slurm's
InactiveLimit=0 keeps a dead salloc's allocation until its time limit; fsched bounds the
silence even then, by DEFAULT_LEASE.
"""

from __future__ import annotations

DEFAULT_LEASE = 120  # seconds, when slurm.conf sets no InactiveLimit
MIN_LEASE = 3  # a renewal every second at the most


def lease_seconds(inactive_limit: int) -> int:
    """The lease's length for slurm.conf's InactiveLimit (seconds, 0: unset)."""
    if inactive_limit <= 0:
        return DEFAULT_LEASE
    return max(MIN_LEASE, inactive_limit)


def renew_every(lease: int) -> float:
    """How often the holder renews: three chances before the lease runs out."""
    return max(1.0, lease / 3)
