"""sprio's figures: the multifactor priority of the pending jobs, factor by factor.

Computed by the very object a scheduler pass orders its queue with
(:func:`limits.services.pass_priority`), on the pass's snapshot, so the sum shown is
the priority the scheduler gives the job at that instant.
"""

from __future__ import annotations

from collections.abc import Sequence

from cluster.core.scheduler import Snapshot
from cluster.extensions import JobPriorityFactors, PriorityReport
from limits import selectors, services
from limits.core.priority import MultifactorPriority

MULTIFACTOR = "priority/multifactor"


def priority_report(snap: Snapshot, active: Sequence[object]) -> PriorityReport | None:
    """None when priority/multifactor is not in force (the core's priority/basic orders)."""
    found = services.pass_priority(snap, active).get("priority")
    if not isinstance(found, MultifactorPriority):
        return None
    cfg = selectors.context().priority
    weights = {
        "age": cfg.weight_age,
        "fairshare": cfg.weight_fairshare,
        "jobsize": cfg.weight_job_size,
        "partition": cfg.weight_partition,
        "qos": cfg.weight_qos,
        "tres": ",".join(f"{name}={weight:g}" for name, weight in cfg.weight_tres.items()),
    }
    jobs = {}
    for job in snap.pending:
        partition = snap.partitions.get(job.partition)
        w = found.weighted(job, partition, snap.now)
        jobs[job.job_id] = JobPriorityFactors(
            priority=found(job, partition, snap.now),
            age=w["age"],
            fairshare=w["fairshare"],
            jobsize=w["jobsize"],
            partition=w["partition"],
            qos=w["qos"],
            tres=w["tres"],
            nice=w["nice"],
        )
    return PriorityReport(plugin=MULTIFACTOR, weights=weights, jobs=jobs)
