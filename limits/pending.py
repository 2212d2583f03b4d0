""" "Why is this job pending?" for the console's job page: every cause holding a pending job,
each with what holds it (the limit and its level, the HRES layer, the node states, the
reservation) and what would release it.  Reads only.

Accounting limits come from :func:`limits.reports.explain` (the same core the scheduler
uses, so the page names the limit the pass would).  The other reasons are the scheduler's
own (``Resources``, ``ReqNodeNotAvail``, ``Reservation``, ``Licenses``...): their detail is
what the last pass recorded on the job, completed here with the live node and reservation
rows it refers to.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils import timezone

from cluster.core.states import JobState, Reason
from cluster.models import Job, Node, Reservation
from limits import reports

# Reasons that name a limit of the accounting (the explainer lists those from the core).
_LIMIT_PREFIXES = ("Assoc", "QOS", "MaxMemPer", "InvalidAccount", "InvalidQOS")


@dataclass(frozen=True)
class Cause:
    """One thing holding a pending job: Slurm's reason code, what holds it (``holder``:
    the limit, layer, nodes or reservation), where (``level``) and how it is released."""

    reason: str
    holder: str
    level: str
    release: str


def _limit_causes(job: Job) -> list[Cause]:
    return [
        Cause(
            reason=b.reason,
            holder=b.detail,
            level=f"{b.level} {b.limit.source}" if b.limit else "",
            release=reports.release_hint(b),
        )
        for b in reports.explain(job)
    ]


def _node_states(names: list[str]) -> str:
    rows = Node.objects.filter(name__in=names).order_by("name")
    return ", ".join(
        f"{n.name} {n.base_state}" + (f" ({n.reason})" if n.reason else "") for n in rows
    ) or ", ".join(names)


def _other_cause(job: Job) -> Cause | None:
    """The scheduler's reason for a job no accounting limit holds."""
    reason, detail = job.reason, job.reason_detail
    if reason in (Reason.NONE, ""):
        return Cause(reason or "None", "not yet considered", "scheduler", "The next scheduler pass.")
    if reason == Reason.PRIORITY:
        return Cause(
            reason,
            "higher priority jobs are ahead in the partition's queue",
            f"partition {job.partition}",
            "Released as the jobs ahead of it start or end.",
        )
    if reason == Reason.RESOURCES:
        return Cause(
            reason,
            detail or "not enough free CPUs or memory on the job's nodes",
            f"partition {job.partition}",
            "Released when running jobs end and free the nodes it needs.",
        )
    if reason in (Reason.REQ_NODE_NOT_AVAIL, Reason.NODE_DOWN):
        names = detail.partition("UnavailableNodes:")[2].split(",") if "UnavailableNodes:" in detail else []
        names = [n for n in names if n]
        return Cause(
            reason,
            _node_states(names) if names else detail or "a requested node is not usable",
            "node state",
            "Return the nodes to service (scontrol update NodeName=... State=RESUME) or submit without them.",
        )
    if reason == Reason.RESERVATION:
        resv = Reservation.objects.filter(name=job.reservation).first()
        holder = (
            f"reservation {resv.name} starts {timezone.localtime(resv.start_time):%Y-%m-%dT%H:%M:%S}"
            if resv
            else detail or f"reservation {job.reservation}"
        )
        return Cause(reason, holder, "reservation", "Released when the reservation starts.")
    if reason in (Reason.LICENSES, Reason.HRES_DISABLED):
        return Cause(
            reason,
            detail or f"licenses {job.licenses}",
            "HRES layer" if ":" in (detail or "") or "layer" in (detail or "") else "licenses",
            "Released when jobs holding these resources end; see the Resources page.",
        )
    if reason in (Reason.JOB_HELD_USER, Reason.JOB_HELD_ADMIN):
        return Cause(reason, "the job is held", "job", f"scontrol release {job.id}")
    if reason == Reason.BEGIN_TIME:
        begin = f" until {timezone.localtime(job.begin_time):%Y-%m-%dT%H:%M:%S}" if job.begin_time else ""
        return Cause(reason, f"--begin{begin}", "job", "Released at its begin time.")
    if reason in (Reason.PARTITION_DOWN, Reason.PARTITION_INACTIVE):
        return Cause(
            reason,
            detail or f"partition {job.partition} is not UP",
            f"partition {job.partition}",
            f"scontrol update PartitionName={job.partition} State=UP",
        )
    if reason in (Reason.PARTITION_NODE_LIMIT, Reason.PARTITION_TIME_LIMIT):
        return Cause(
            reason,
            detail or "the request exceeds the partition's MaxNodes/MaxTime",
            f"partition {job.partition}",
            "Change the job's request (scontrol update JobId=... TimeLimit=/NumNodes=) "
            "or the partition's limit.",
        )
    return Cause(reason, detail, "", "") if detail else None


def pending_causes(job: Job) -> list[Cause]:
    """Every cause holding ``job``; empty for a job that is not pending."""
    if job.state != JobState.PENDING:
        return []
    causes = _limit_causes(job)
    if causes:
        return causes
    if job.reason.startswith(_LIMIT_PREFIXES):
        # The pass held it by a limit the explainer no longer sees: changed since.
        return [Cause(job.reason, job.reason_detail, "", "The next scheduler pass re-checks it.")]
    other = _other_cause(job)
    return [other] if other else []
