""""Why is this job pending?", one explainer for the job page, ``/limits/jobs/N/``,
``GET /api/jobs/{id}/explain/`` and ``fsched explain``: the causes every extension gives
(``selectors.pending_causes``) and, where backfill plans one, the job's expected start.

The estimate is what squeue --start and scontrol show job (StartTime=, SchedNodeList=) show
for a pending job in Slurm: the start and nodes backfill planned.  It comes from a dry run of
a backfill pass over the current state, so the plan counts every job ahead of this one, its
limits and HRES layers; nothing is written.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime

from cluster import selectors
from cluster.core.states import JobState
from cluster.extensions import PendingCause
from cluster.models import Job
from cluster.services.scheduling import decide
from slurmwords.hostlists import fold_hostlist


@dataclass(frozen=True)
class Estimate:
    start: datetime
    nodes: str  # SchedNodeList, folded ("node[01-02]"); empty when backfill names none


@dataclass(frozen=True)
class Explanation:
    causes: list[PendingCause]
    estimate: Estimate | None


def backfill_estimate(job: Job, *, now: datetime) -> Estimate | None:
    """When and where backfill would start a pending job now; None when it plans no start
    (no time limit to plan around, a hold, a limit with no end in sight, beyond bf_window)."""
    if job.state != JobState.PENDING:
        return None
    _snap, names, _ctx, result = decide(now, backfill=True)
    for start in result.starts:
        if start.job_id == job.id:
            return Estimate(now, fold_hostlist(names[i] for i in start.node_indices))
    for pending in result.pending:
        if pending.job_id == job.id and pending.start_time is not None and math.isfinite(pending.start_time):
            nodes = fold_hostlist(names[i] for i in pending.sched_nodes) if pending.sched_nodes else ""
            return Estimate(datetime.fromtimestamp(pending.start_time, UTC), nodes)
    return None


def explain(job: Job, *, now: datetime) -> Explanation:
    causes = selectors.pending_causes(job)
    return Explanation(causes, backfill_estimate(job, now=now) if job.state == JobState.PENDING else None)
