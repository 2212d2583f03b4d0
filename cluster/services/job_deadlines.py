"""sbatch ``--deadline``: a pending job that can no longer end before its deadline is
removed with state DEADLINE, as Slurm does ("remove the job if no ending is possible
before this deadline (start > (deadline - time[-min]))", sbatch(1)).

Run at the start of each scheduler pass, so a job is never started past its deadline.
Only jobs with a deadline are read, through a partial index of them (none on most
clusters: one indexed query that finds nothing).  A job that started in time runs its
full time limit: fsched does not shorten it to the deadline.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from cluster.core.states import JobState
from cluster.models import Job
from cluster.services.state import end_job

# Slurm's state reason for it (FAIL_DEADLINE).
REASON = "DeadLine"


def cannot_end_in_time(job: Job, now: datetime) -> bool:
    """Whether starting now would end after the deadline: ``--time-min`` counts, else the
    time limit (an unlimited job only needs to start before it)."""
    if job.deadline is None:
        return False
    minutes = job.time_min if job.time_min is not None else (job.time_limit or 0)
    return now + timedelta(minutes=minutes) > job.deadline


def expire(now: datetime) -> list[int]:
    """End the pending jobs that missed their deadline; their ids."""
    ended = []
    # deadline__isnull first: the partial index job_deadline holds only these rows.
    for job in Job.objects.filter(deadline__isnull=False, state=JobState.PENDING):
        if cannot_end_in_time(job, now):
            end_job(job, JobState.DEADLINE, now=now, why="deadline", reason=REASON)
            ended.append(job.id)
    return ended
