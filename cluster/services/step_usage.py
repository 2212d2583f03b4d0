"""sstat's data: the running steps' use as the agents report it (``step_usage``, with each
heartbeat; agent/step_usage.py), kept as the latest per step and node (StepUsage rows).

- :func:`usage_reported`: an agent's report replaces its nodes' rows; a step of those nodes
  missing from the report has ended there, and its row goes. Reports about jobs that are
  not running here (ended meanwhile, or never this controller's) are not kept.
- :func:`step_ended`: an srun step's tasks on a node have ended: their figures from
  their reaping are kept with the step's last report there (StepStatistics rows, which
  each report also updates and nothing removes: the step's accounting record).
- :func:`final_statistics`: the ended steps' statistics for sacct and seff, added up as
  Slurm's accounting keeps them (slurmwords.step_statistics).
- :func:`job_step_usage`: a job's running steps (``batch`` for a batch job, then srun's
  ``N.0``, ``N.1`` ... from the extensions that keep them) with each node's tasks. Who may
  ask is slurmd's rule for a step's statistics (the job's owner, and those who may act on
  any of its jobs: operators, the account's coordinators): anyone else who may see the job
  learns its running steps, as ``squeue -s`` shows them, and is refused their figures with
  slurmd's ``Invalid user id``.  A job they may not see is ``Invalid job id specified``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from cluster import clock, extensions, publish, visibility
from cluster.core.states import JobState
from cluster.models import Job, StepStatistics, StepUsage
from cluster.services.errors import NotFound
from slurmwords import agent_messages as am
from slurmwords import sstat_fields, step_statistics
from slurmwords.step_ids import step_key, step_label

INVALID_JOB_ID = "Invalid job id specified"
INVALID_USER_ID = "Invalid user id"  # slurmd's ESLURM_USER_ID_MISSING to a stranger's sstat
RUNNING_JOB = (JobState.RUNNING, JobState.SUSPENDED)
BATCH = "batch"


@dataclass
class RunningStep:
    step: str  # "batch" or the step number
    node_list: str
    ntasks: int
    nodes: list[dict[str, Any]] = field(default_factory=list)  # [{node, tasks, sampled_at}]


@dataclass
class JobUsage:
    job_id: int
    state: str
    steps: list[RunningStep]
    refused: str = ""  # the step figures are not this user's to see: why


@transaction.atomic
def usage_reported(*, nodes: Sequence[str], msg: am.StepUsage) -> None:
    """An agent's report for its ``nodes`` (only those: another agent's nodes are not its say)."""
    mine = [r for r in msg.steps if r.node in nodes]
    running = dict(
        Job.objects.filter(pk__in={r.job_id for r in mine}, state__in=RUNNING_JOB).values_list(
            "pk", "restart_count"
        )
    )
    now = clock.now()
    rows = [
        StepUsage(
            job_id=r.job_id, step=r.step, node=r.node, tasks=[t.to_wire() for t in r.tasks], sampled_at=now
        )
        for r in mine
        if r.job_id in running
    ]
    kept = {(row.job_id, row.step, row.node) for row in rows}
    gone = {
        pk: job_id
        for pk, job_id, step, node in StepUsage.objects.filter(node__in=list(nodes)).values_list(
            "pk", "job_id", "step", "node"
        )
        if (job_id, step, node) not in kept
    }
    if gone:
        StepUsage.objects.filter(pk__in=list(gone)).delete()
    if rows:
        StepUsage.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["job", "step", "node"],
            update_fields=["tasks", "sampled_at"],
        )
        # Kept past the step's end for accounting: a step's row here goes with the first
        # report after its end, which may come before the end itself is heard of.
        StepStatistics.objects.bulk_create(
            [
                StepStatistics(
                    job_id=row.job_id, run=running[row.job_id], step=row.step, node=row.node, tasks=row.tasks
                )
                for row in rows
            ],
            update_conflicts=True,
            unique_fields=["job", "run", "step", "node"],
            update_fields=["tasks"],
        )
    if changed := {row.job_id for row in rows} | set(gone.values()):
        # Each of these jobs' pages re-reads its Usage panel (templates/console/_job_usage.html);
        # a topic per job, so that an open page is not re-read on every agent's report.
        publish.console_changed(*(usage_topic(job_id) for job_id in sorted(changed)))


def usage_topic(job_id: int) -> str:
    """The console topic of one job's step usage."""
    return f"usage-{job_id}"


def _running_steps(job: Job) -> list[RunningStep]:
    if job.state not in RUNNING_JOB:
        return []
    steps = [RunningStep("batch", job.batch_host, 1)] if job.batch and job.batch_host else []
    now = clock.now()
    for ext in extensions.active():
        for s in ext.job_steps([job.pk], now).get(job.pk, ()):
            if s.state == JobState.RUNNING:
                steps.append(RunningStep(str(s.step_id), s.node_list, s.ntasks))
    return steps


def job_step_usage(*, actor: Any, job_id: int) -> JobUsage:
    """The running steps of job ``job_id`` and their use, for ``actor``."""
    job = Job.objects.filter(pk=job_id).first()
    if job is None or not visibility.may_see(actor, job):
        raise NotFound(INVALID_JOB_ID, field="job_id")
    steps = _running_steps(job)
    if not visibility.may_manage(actor, job):
        return JobUsage(job.pk, job.state, steps, refused=INVALID_USER_ID)
    by_step: dict[str, list[dict[str, Any]]] = {}
    for row in StepUsage.objects.filter(job=job).order_by("node"):
        by_step.setdefault(step_label(row.step), []).append(
            {"node": row.node, "tasks": row.tasks, "sampled_at": row.sampled_at.isoformat()}
        )
    for s in steps:
        s.nodes = by_step.get(s.step, [])
    return JobUsage(job.pk, job.state, steps)


def step_ended(*, job_id: int, step: str, node: str, ends: Sequence[am.TaskEnd]) -> None:
    """The end figures of an srun step's tasks on ``node`` (``step_done``'s), in the
    caller's transaction."""
    if not ends:
        return
    run = Job.objects.filter(pk=job_id).values_list("restart_count", flat=True).first()
    if run is None:
        return
    StepStatistics.objects.bulk_create(
        [StepStatistics(job_id=job_id, run=run, step=step, node=node, ends=[e.to_wire() for e in ends])],
        update_conflicts=True,
        unique_fields=["job", "run", "step", "node"],
        update_fields=["ends"],
    )


@dataclass(frozen=True)
class EndedStep:
    """An ended step whose statistics are asked for: ``run`` is its job's run (a batch
    step's figures are its run's); ``batch_end`` the batch step's figures from the job's
    end report (``max_rss_kb``, ``cpu_secs``) on ``batch_host``."""

    job_id: int
    step: str
    run: int
    batch_host: str = ""
    batch_end: dict[str, Any] | None = None


def final_statistics(steps: Sequence[EndedStep]) -> dict[tuple[int, str], dict[str, Any]]:
    """Each ended step's statistics (step_statistics.to_wire), by (job id, step as asked:
    ``interactive``, not its number), for the steps that have any; one query."""
    if not steps:
        return {}
    wanted = {(s.job_id, step_key(s.step)): s for s in steps}
    by_step: dict[tuple[int, str], list[StepStatistics]] = {}
    found = StepStatistics.objects.filter(job_id__in={s.job_id for s in steps}).order_by("node")
    for row in found.only("job_id", "run", "step", "node", "tasks", "ends"):
        want = wanted.get((row.job_id, row.step))
        # An srun step's number is its own whatever the run; "batch" is each run's.
        if want is not None and (row.step != BATCH or row.run == want.run):
            by_step.setdefault((row.job_id, row.step), []).append(row)
    out = {}
    for (job_id, key), want in wanted.items():
        nodes = {row.node: (row.tasks, row.ends) for row in by_step.get((job_id, key), [])}
        if want.batch_end and want.batch_host:
            tasks, _ends = nodes.get(want.batch_host, ([], []))
            nodes[want.batch_host] = (tasks, [{"task": 0, **want.batch_end}])
        if not nodes:
            continue
        parts = [
            {"node": node, "tasks": step_statistics.node_tasks(tasks, ends)}
            for node, (tasks, ends) in nodes.items()
        ]
        stats = sstat_fields.step_stats(want.job_id, {"step": want.step, "nodes": parts})
        ends = [e for _tasks, node_ends in nodes.values() for e in node_ends]
        out[(job_id, want.step)] = step_statistics.to_wire(
            stats, step_statistics.cpu_time_of(ends, stats.ntasks)
        )
    return out


def forget_step(*, job_id: int, step: str) -> None:
    """The statistics of a step whose id is reused (the interactive step's): gone."""
    StepStatistics.objects.filter(job_id=job_id, step=step).delete()
