"""Allocation-only jobs (salloc's, srun's outside an allocation): their holder's lease,
its release, and the end of one whose holder went silent (issue #16 point 2).

The job runs no process (agent/allocations.py): it holds its nodes until its holder
releases it (``Relinquishing job allocation N``), scancel, its time limit, or the holder's
silence (cluster/core/allocation_leases.py).  Each end goes through the batch host's agent
as a ``cancel``, so that the end is recorded, and the Epilog run, as any job's.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from cluster import clock, publish, visibility
from cluster.core.allocation_leases import lease_seconds
from cluster.core.states import FINISHED_JOB_STATES, HOLDING_JOB_STATES, JobState
from cluster.models import AllocationHolder, ClusterConfig, Job
from cluster.services.errors import PermissionDenied, ServiceError
from cluster.services.jobs import get_job, job_cancel
from cluster.services.state import end_job, record_transition, refresh_usage, terminate_running
from slurmwords.agent_messages import Cancel

# Slurm's reason for an allocation whose srun/salloc stopped answering (FAIL_INACTIVE_LIMIT).
INACTIVE_LIMIT = "InactiveLimit"
MAX_STATUS = 255


@dataclass(frozen=True)
class Lease:
    job: Job
    seconds: int


def _holder_job(actor: AbstractBaseUser, job_id: int) -> tuple[Job, AllocationHolder | None]:
    job = Job.objects.select_for_update().get(pk=get_job(job_id).pk)
    if not visibility.may_manage(actor, job):
        raise PermissionDenied("Access/permission denied")
    if job.batch:
        raise ServiceError(f"Job {job.id} is a batch job, not an allocation", field="job_id")
    return job, AllocationHolder.objects.select_for_update().filter(job_id=job.id).first()


def current_lease() -> int:
    return lease_seconds(ClusterConfig.current().option_int("InactiveLimit", 0))


@transaction.atomic
def allocation_renew(*, actor: AbstractBaseUser, job_id: int, now: datetime | None = None) -> Lease:
    """The holder is alive: its lease runs for another InactiveLimit from now."""
    now = now or clock.now()
    job, holder = _holder_job(actor, job_id)
    seconds = current_lease()
    if holder is not None and job.state not in FINISHED_JOB_STATES:
        holder.lease_until = now + timedelta(seconds=seconds)
        holder.save(update_fields=["lease_until"])
    return Lease(job=job, seconds=seconds)


def _status(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_STATUS:
        raise ServiceError(f"{what}: a whole number from 0 to {MAX_STATUS}", field=what)
    return value


@transaction.atomic
def allocation_release(
    *, actor: AbstractBaseUser, job_id: int, exit_code: object = 0, signal: object = 0
) -> Job:
    """salloc's command ended: the job ends with its status (salloc's slurm_complete_job:
    COMPLETED for 0, else FAILED with that ExitCode, as a batch script's end).  A request
    still pending is cancelled; a job already ended is left as it ended."""
    code, sig = _status(exit_code, "exit_code"), _status(signal, "signal")
    job, holder = _holder_job(actor, job_id)
    if holder is not None:
        holder.delete()
    if job.state in FINISHED_JOB_STATES or job.state == JobState.COMPLETING or job.final_state:
        return job
    if job.state not in HOLDING_JOB_STATES or not job.launched:
        # Given up before its Prolog was done (Ctrl-C while salloc waited): cancelled.
        return job_cancel(actor=actor, job_id=job.id)
    now = clock.now()
    record_transition(job, job.state, now=now, why="allocation released", user=actor.get_username())
    publish.to_agent(
        job.batch_host, Cancel(job_id=job.id, kill_wait=0, exit_code=code, exit_signal=sig).to_wire()
    )
    return job


@transaction.atomic
def allocation_keep(*, actor: AbstractBaseUser, job_id: int) -> Job:
    """salloc --no-shell: the granted allocation outlives its holder, which exits.  As
    Slurm's salloc then leaves slurmctld no port to ping, InactiveLimit no longer applies:
    the job holds its nodes until scancel or its time limit."""
    job, holder = _holder_job(actor, job_id)
    if job.state in FINISHED_JOB_STATES or job.state == JobState.COMPLETING:
        raise ServiceError("Job/step already completing or completed")
    if job.state not in HOLDING_JOB_STATES:
        raise ServiceError("Job is pending execution")
    if holder is not None:
        holder.delete()
        who = actor.get_username()
        record_transition(job, job.state, why="allocation kept (salloc --no-shell)", user=who)
    return job


def expire_holders(*, now: datetime | None = None) -> list[int]:
    """End the allocations whose holder let its lease run out (killed, its host lost): a
    pending request is cancelled, a running one ends TIMEOUT (Slurm's InactiveLimit)."""
    now = now or clock.now()
    ended = []
    with transaction.atomic():
        expired = AllocationHolder.objects.select_for_update().filter(lease_until__lt=now)
        for holder in expired.select_related("job"):
            job = holder.job
            holder.delete()
            if job.state == JobState.PENDING or (job.state == JobState.CONFIGURING and not job.launched):
                held = list(job.alloc)
                end_job(job, JobState.CANCELLED, now=now, why=INACTIVE_LIMIT, reason=INACTIVE_LIMIT)
                refresh_usage(held)
            elif job.state in HOLDING_JOB_STATES and job.state != JobState.COMPLETING and not job.final_state:
                terminate_running(job, final_state=JobState.TIMEOUT, now=now)
                record_transition(job, job.state, now=now, why=INACTIVE_LIMIT)
            else:
                continue
            ended.append(job.id)
    if ended:
        publish.console_changed("jobs")
    return ended
