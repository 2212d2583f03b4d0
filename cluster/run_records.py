"""Keeping a requeued job's run that ended (``sacct -D``'s earlier records), written by
``requeue_now`` before it resets the job for its next run.

What the record holds follows slurmctld: a job requeued while running is recorded when the
requeue is asked (``_job_requeue_op`` sets the end then, and the job's exit code is still
0); a node failure records NODE_FAIL; a finished job requeued keeps its run's record with
the state changed to REQUEUED and the end to the requeue's time.  The batch step keeps what
its processes did (``as_mysql_step_complete``: a signal is CANCELLED, an exit code FAILED).
"""

from __future__ import annotations

from datetime import datetime

from cluster import accounting
from cluster.core import job_steps
from cluster.core.states import FINISHED_JOB_STATES, JobState
from cluster.models import Job
from cluster.run_models import JobRun
from slurmwords.reasons import slurm_reason

# The job's fields a record reads.
_READS = frozenset(
    {
        "name", "partition", "account", "qos", "time_limit", "submit_time", "eligible_time",
        "start_time", "state", "final_state", "kill_requested", "reason", "reason_detail",
        "exit_code", "exit_signal", "node_list", "batch_host", "alloc", "launched", "end_time",
        "mem_per_node", "min_nodes", "num_tasks", "cpus_per_task", "gres", "tres_per_job",
        "tres_per_task", "gres_alloc", "paused_seconds", "paused_at", "max_rss_kb", "total_cpu_secs",
        "batch", "restart_count",
    }
)  # fmt: skip


def keep_run(job: Job, *, now: datetime, ended_by: JobState) -> JobRun | None:
    """Record the run ``job`` is ending by a requeue (before it is reset); None for a
    job that never started (nothing ran, so no record)."""
    if missing := job.get_deferred_fields() & _READS:
        # A job loaded with a few fields (the completions' batch): one read, not one each.
        job.refresh_from_db(fields=sorted(missing))
    if job.start_time is None:
        return None
    finished = job.state in FINISHED_JOB_STATES
    asked = job.kill_requested if job.final_state == JobState.REQUEUED else None
    end = now if finished else (asked or now)
    # Requeued while suspended: the run was suspended until it ended.
    paused = job.paused_seconds + (max(0, int((end - job.paused_at).total_seconds())) if job.paused_at else 0)
    nnodes = accounting.node_count(job)
    alloc_cpus = job.num_cpus
    req_mem = (job.mem_per_node or 0) * job.min_nodes
    alloc_mem = sum(v[1] for v in job.alloc.values()) if job.alloc else req_mem
    gres = accounting.gres_tres(job, nnodes, allocated=True)
    exit_code, exit_signal = (
        job_steps.job_exit(job.state, job.exit_code, job.exit_signal) if finished else (0, 0)
    )
    # One record per run: requeue_now moves the job to its next run right after.
    return JobRun.objects.create(
        job=job,
        run=job.restart_count,
        **{
            "name": job.name,
            "partition": job.partition,
            "account": job.account,
            "qos": job.qos,
            "time_limit": job.time_limit,
            "submit_time": job.submit_time or job.start_time,
            "eligible_time": job.eligible_time,
            "start_time": job.start_time,
            "end_time": end,
            "state": ended_by.value,
            "reason": slurm_reason(job.reason, job.reason_detail)[:64],
            "exit_code": exit_code,
            "exit_signal": exit_signal,
            "node_list": job.node_list,
            "nnodes": nnodes,
            "alloc_cpus": alloc_cpus,
            "alloc_tres": job_steps.tres_text(cpus=alloc_cpus, mem_mb=alloc_mem, nodes=nnodes, gres=gres),
            "paused_seconds": paused,
            "max_rss_kb": job.max_rss_kb,
            "total_cpu_secs": job.total_cpu_secs,
            "steps": _run_steps(job, finished=finished, ended_by=ended_by, paused=paused, now=now),
        },
    )


def _run_steps(job: Job, *, finished: bool, ended_by: JobState, paused: int, now: datetime) -> list[dict]:
    """The run's steps with their statistics: the next run's batch step starts anew."""
    steps = _steps(job, finished=finished, ended_by=ended_by, paused=paused, now=now)
    record = {"job_id": job.id, "steps": steps}
    accounting.add_statistics([record], {job.id: job})
    return record["steps"]


def _steps(job: Job, *, finished: bool, ended_by: JobState, paused: int, now: datetime) -> list[dict]:
    if finished:
        basis, step_end = JobState(job.state), job.end_time
    elif ended_by != JobState.REQUEUED:
        basis, step_end = ended_by, now
    elif job.exit_signal:
        # Killed by the requeue: any of the killed states makes a CANCELLED step.
        basis, step_end = JobState.CANCELLED, now
    else:
        basis, step_end = (JobState.FAILED if job.exit_code else JobState.COMPLETED), now
    batch = job.alloc.get(job.batch_host) if job.alloc else None
    nnodes = accounting.node_count(job)
    facts = job_steps.JobFacts(
        state=basis,
        exit_code=job.exit_code,
        exit_signal=job.exit_signal,
        start=job.start_time,
        end=step_end,
        paused_seconds=paused,
        # A script never launched (its Prolog failed, its nodes never came up) has no step.
        batch_host=job.batch_host if (job.launched or finished) else "",
        batch_cpus=batch[0] if batch else (job.num_cpus if nnodes == 1 else job.cpus_per_task),
        batch_mem_mb=batch[1] if batch else (job.mem_per_node or 0),
        max_rss_kb=job.max_rss_kb,
        total_cpu_secs=job.total_cpu_secs,
        batch=job.batch,
    )
    return [accounting.step_record(step) for step in job_steps.job_steps(facts, now)]
