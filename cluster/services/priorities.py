"""sprio: the priorities of the pending jobs as the scheduler computes them.

The factors come from the extension that gives priorities (the limits' multifactor),
on the snapshot a scheduler pass would read now, with the pass's own plugins: the
same jobs (pending, not held, eligible) and the same figures.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime

from cluster import clock, extensions
from cluster.extensions import PriorityReport
from cluster.services.scheduling import build_snapshot, pass_context

Owners = dict[int, tuple[str, str]]  # pending job id -> (user, partition)


def priority_report(*, now: datetime | None = None) -> tuple[PriorityReport | None, Owners]:
    """The report (None under priority/basic) and each pending job's (user, partition)."""
    now = now or clock.now()
    snap, _ = build_snapshot(now, backfill=False)
    # sprio leaves out a job not eligible yet (its begin time ahead), as slurmctld's
    # priority_p_get_priority_factors_list does: no pass orders it before then.
    eligible = tuple(j for j in snap.pending if j.begin_time is None or j.begin_time <= snap.now)
    if len(eligible) != len(snap.pending):
        snap = dataclasses.replace(snap, pending=eligible)
    ctx = pass_context(now)
    for ext in extensions.active():
        snap = ext.adjust_snapshot(ctx, snap)
    owners = {job.job_id: (job.user, job.partition) for job in snap.pending}
    return extensions.priority_report(ctx, snap), owners
