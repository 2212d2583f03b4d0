"""The job page's two views of a job's use: a finished job's efficiency as ``seff`` works it
out (from the accounting sacct reads: slurmwords.efficiency), and a running job's steps as
``sstat`` prints them (from the agents' latest reports: cluster/services/step_usage.py).

Each reads through the rules of the command it mirrors: the efficiency of any job the
viewer may see (sacct's and seff's), the step figures only for those sstat shows them to
(the owner, the account's coordinators, operators); anyone else learns the steps run and
is told why their figures are not shown.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Q

from cluster import accounting
from cluster.core.states import FINISHED_JOB_STATES
from cluster.services.errors import NotFound
from cluster.services.step_usage import RUNNING_JOB, job_step_usage, usage_topic
from slurmwords import efficiency

# The sstat fields a step's row shows, in sstat's order and printing.
USAGE_FIELDS = ("JobID", "NTasks", "MaxRSS", "MaxRSSNode", "AveRSS", "AveCPU")


def finished_efficiency(viewer: Any, job_id: int, state: str, now: datetime) -> efficiency.Efficiency | None:
    """seff's figures for a job that ran and ended; None for any other (without reading it
    again: the page knows its state)."""
    if state not in FINISHED_JOB_STATES:
        return None
    jobs, _ = accounting.accounting_jobs(
        viewer=viewer,
        filters=accounting.Filters(job_ids=Q(pk=job_id), all_users=True),
        after=0,
        limit=1,
        now=now,
    )
    if not jobs or jobs[0]["state"] not in FINISHED_JOB_STATES or not jobs[0]["start_time"]:
        return None
    job = jobs[0]
    return efficiency.of_job(job, efficiency.primary_group(job["user"]))


@dataclass
class StepRow:
    cells: list[tuple[str, str]]  # (sstat field, its text)
    node_list: str
    sampled_at: str  # the newest of its nodes' reports, ISO 8601; "" before the first


@dataclass
class RunningUsage:
    steps: list[StepRow] = field(default_factory=list)
    refused: str = ""  # sstat's refusal to this viewer ("Invalid user id")


def live_topic(job_id: int, state: str) -> str:
    """The console topic the job's Usage panel is re-read on; "" once the job has ended."""
    return "" if state in FINISHED_JOB_STATES else usage_topic(job_id)


def running_usage(viewer: Any, job_id: int, state: str) -> RunningUsage | None:
    """Each running step's sstat figures; None unless the job runs (or is suspended)."""
    if state not in RUNNING_JOB:
        return None
    from slurmwords import sstat_fields  # noqa: PLC0415 - sstat's own printing, pure (no I/O)

    try:
        usage = job_step_usage(actor=viewer, job_id=job_id)
    except NotFound:
        return None
    if usage.refused:
        return RunningUsage(refused=usage.refused)
    cols = sstat_fields.parse_fields(",".join(USAGE_FIELDS))
    opts = sstat_fields.Options()
    rows = []
    for step in usage.steps:
        stats = sstat_fields.step_stats(job_id, {"step": step.step, "nodes": step.nodes})
        cells = [(c.name, c.value(stats, opts) or "") for c in cols]
        cells[0] = ("JobID", stats.job_step)
        newest = max((n["sampled_at"] for n in step.nodes), default="")
        rows.append(StepRow(cells, step.node_list, newest))
    return RunningUsage(steps=rows)
