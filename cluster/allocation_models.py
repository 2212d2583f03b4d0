"""The rows of allocation-only jobs and of job credentials (issue #16 point 2).

Imported by :mod:`cluster.models` so that Django registers them with the ``cluster`` app.
"""

from __future__ import annotations

from django.db import models


class JobCredential(models.Model):
    """The credential a running job's processes authenticate with (Slurm's munge credential
    serving srun): minted at each launch, only its SHA-256 kept.  The text reads
    ``<job id>.<secret>``, so the row is found by its primary key."""

    job = models.OneToOneField("cluster.Job", primary_key=True, on_delete=models.CASCADE)
    digest = models.CharField(max_length=64)
    # The run (restart count) it was minted for: a requeued job's next run gets a new one.
    run = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"credential of job {self.job_id}"


class AllocationHolder(models.Model):
    """An allocation-only job's holder (salloc, or srun outside an allocation) renews its
    lease; a lease that runs out means the holder is gone, and the job is ended (Slurm's
    InactiveLimit for a non-responsive salloc/srun)."""

    job = models.OneToOneField("cluster.Job", primary_key=True, on_delete=models.CASCADE)
    lease_until = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"holder of job {self.job_id}"
