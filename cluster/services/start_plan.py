"""Backfill's plan for the pending jobs: when and where each would start.

Slurm's backfill writes its plan into each pending job it reserves for (``start_time``,
``sched_nodes``): squeue's ``%S``/``%Y`` and ``--start`` and ``scontrol show job``'s
``StartTime=``/``SchedNodeList=`` read it back.  fsched's passes keep no plan between
them, so this asks a dry run of a backfill pass over the current state (the same
``decide`` the live pass runs; nothing is written): the plan counts every job ahead, the
limits and the HRES layers, as the next pass would.  One dry run answers for every
pending job, so a listing pays one pass, not one per job.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime

from cluster.services.scheduling import decide
from slurmwords.hostlists import fold_hostlist


@dataclass(frozen=True)
class Estimate:
    start: datetime
    nodes: str  # SchedNodeList, folded ("node[01-02]"); empty when backfill names none


def planned_starts(now: datetime) -> dict[int, Estimate]:
    """Pending job id -> its planned start, for the jobs backfill plans one for now (a job
    the pass would start at once: ``now`` and its nodes).  A job left out has none: no time
    limit to plan around, a hold, a dependency, a limit with no end in sight, past
    bf_window."""
    _snap, names, _ctx, result = decide(now, backfill=True)
    plan: dict[int, Estimate] = {}
    for start in result.starts:
        plan[start.job_id] = Estimate(now, fold_hostlist(names[i] for i in start.node_indices))
    for pending in result.pending:
        if pending.start_time is not None and math.isfinite(pending.start_time):
            nodes = fold_hostlist(names[i] for i in pending.sched_nodes) if pending.sched_nodes else ""
            plan[pending.job_id] = Estimate(datetime.fromtimestamp(pending.start_time, UTC), nodes)
    return plan
