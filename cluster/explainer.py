""""Why is this job pending?", one explainer for the job page, ``/limits/jobs/N/``,
``GET /api/jobs/{id}/explain/`` and ``fsched explain``: the causes every extension gives
(``selectors.pending_causes``) and, where backfill plans one, the job's expected start.

The estimate is what squeue --start and scontrol show job (StartTime=, SchedNodeList=) show
for a pending job in Slurm: the start and nodes backfill planned.  It comes from a dry run of
a backfill pass over the current state, so the plan counts every job ahead of this one, its
limits and HRES layers; nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from cluster import selectors
from cluster.core.states import JobState
from cluster.extensions import PendingCause
from cluster.models import Job
from cluster.services.start_plan import Estimate, planned_starts


@dataclass(frozen=True)
class Explanation:
    causes: list[PendingCause]
    estimate: Estimate | None


def backfill_estimate(job: Job, *, now: datetime) -> Estimate | None:
    """When and where backfill would start a pending job now; None when it plans no start
    (no time limit to plan around, a hold, a limit with no end in sight, beyond bf_window)."""
    if job.state != JobState.PENDING:
        return None
    return planned_starts(now).get(job.id)


def explain(job: Job, *, now: datetime) -> Explanation:
    causes = selectors.pending_causes(job)
    return Explanation(causes, backfill_estimate(job, now=now) if job.state == JobState.PENDING else None)
