"""``?start=1`` on the job list and a job: the pending jobs' planned start, as Slurm's job
records carry backfill's (squeue ``--start``, ``%S``, ``%Y``; ``scontrol show job``'s
``StartTime=``, ``EndTime=``, ``SchedNodeList=``).

Asked for, not always: the plan is a dry run of a backfill pass
(``cluster.services.start_plan``), run once for the page and only when it holds a pending
job, so the plain listings (and clients polling them) never pay it.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.utils import timezone
from rest_framework.request import Request

from cluster.core.states import JobState
from cluster.services import diagnostics
from cluster.services.start_plan import planned_starts

_YES = frozenset({"1", "true", "yes"})


def wanted(request: Request) -> bool:
    return (request.query_params.get("start") or "").lower() in _YES


def add_planned_starts(jobs: list[dict]) -> None:
    """Set each pending job's ``start_time``, ``end_time`` (start + time limit, None when
    unlimited) and ``sched_nodes`` ("" when backfill names none) from one dry run; a
    pending job without a plan keeps no start, as Slurm shows ``N/A``/``Unknown``. Its
    ``last_sched_eval``: the last pass's time, when that pass weighed it."""
    pending = [job for job in jobs if job.get("state") == JobState.PENDING]
    if not pending:
        return
    plan = planned_starts(timezone.now())
    last_pass = diagnostics.last_pass_time()
    for job in pending:
        submitted = datetime.fromisoformat(job["submit_time"]) if job.get("submit_time") else None
        weighed = diagnostics.last_sched_eval(
            last_pass, reason=job.get("reason"), held=bool(job.get("hold")), submitted=submitted
        )
        if weighed is not None:
            job["last_sched_eval"] = weighed.isoformat()
        estimate = plan.get(job.get("job_id"))
        job["sched_nodes"] = estimate.nodes if estimate else ""
        if estimate is None:
            continue
        job["start_time"] = estimate.start.isoformat()
        limit = job.get("time_limit")
        end = None if limit is None else estimate.start + timedelta(minutes=int(limit))
        job["end_time"] = end.isoformat() if end else None

