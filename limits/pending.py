""" "Why is this job pending?" for the console's job page, ``GET /api/jobs/{id}/explain/`` and
``fsched explain``: every cause holding a pending job, each with what holds it (the limit and
its level, the HRES layer, the node states, the reservation) and what would release it.
Reads only.  The core reaches it through the ``pending_causes`` hook.

Accounting limits come from :func:`limits.reports.explain` (the same core the scheduler
uses, so the page names the limit the pass would).  The other reasons are the scheduler's
own (``Resources``, ``ReqNodeNotAvail``, ``Reservation``, ``Licenses``...): their detail is
what the last pass recorded on the job, completed here with the live node and reservation
rows it refers to.
"""

from __future__ import annotations

import re

from django.utils import timezone

from cluster import clock
from cluster.core.states import JobState, NodeFlag, Reason
from cluster.extensions import PendingCause as Cause
from cluster.models import Job, Node, Partition, Reservation
from limits import reports
from slurmwords.hostlists import expand_hostlist, fold_hostlist
from slurmwords.reasons import MAY_BE_RESERVED, RESERVED_FOR_MAINTENANCE, unavailable_nodes

# The layer an HRES detail names ("flat: 1 requested, layer low1 has 0 free", "flat: 10
# needed on layer top, 3 free", "flat: layer low1 is disabled"; not "no layer of flat ...").
_LAYER = re.compile(r"(?:, |: |on )layer ([^\s,]+)")

# Reasons that name a limit of the accounting (the explainer lists those from the core).
_LIMIT_PREFIXES = ("Assoc", "QOS", "MaxMemPer", "InvalidAccount", "InvalidQOS")


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


def _reserved_cause(job: Job, reason: str, detail: str) -> Cause:
    """Required nodes another reservation holds: which nodes, which reservation, until when."""
    now = clock.now()
    wanted = set(expand_hostlist(job.req_nodes))
    held = []
    for resv in Reservation.objects.filter(start_time__lte=now, end_time__gt=now):
        names = wanted & set(expand_hostlist(resv.nodes))
        if names and resv.name != job.reservation:
            until = f"{timezone.localtime(resv.end_time):%Y-%m-%dT%H:%M:%S}"
            held.append(f"{fold_hostlist(names)} in reservation {resv.name} until {until}")
    return Cause(
        reason,
        "; ".join(held) or detail,
        "reservation",
        "Released when the reservation ends, or submit without its nodes or with --reservation.",
    )


def _node_cause(job: Job, reason: str, detail: str) -> Cause:
    """Required nodes that cannot take the job: each with its state (``node01
    IDLE+POWERED_DOWN``) and reason, and the command that returns them to service."""
    if detail == MAY_BE_RESERVED:
        return _reserved_cause(job, reason, detail)
    names = unavailable_nodes(detail)
    rows = list(Node.objects.filter(name__in=names).order_by("name")) if names else []
    if not rows:
        holder = detail or "a requested node is not usable"
        if detail == RESERVED_FOR_MAINTENANCE:
            return Cause(reason, holder, "reservation", "Released when the maintenance reservation ends.")
        return Cause(reason, holder, "node state", f"Submit without the unusable nodes, or scancel {job.id}.")
    holder = ", ".join(f"{n.name} {n.state}" + (f" ({n.reason})" if n.reason else "") for n in rows)
    powered = NodeFlag.POWERED_DOWN | NodeFlag.POWERING_DOWN
    down = fold_hostlist(n.name for n in rows if n.flags & powered)
    others = fold_hostlist(n.name for n in rows if not n.flags & powered)
    release = []
    if down:
        release.append(f"Power the nodes up (scontrol power up {down}) or set ResumeProgram")
    if others:
        release.append(f"Return the nodes to service (scontrol update NodeName={others} State=RESUME)")
    return Cause(reason, holder, "node state", "; ".join(release) + ", or submit without them.")


def _license_cause(job: Job, reason: str, detail: str) -> Cause:
    """Licenses or an HRES resource: the layer the pass blamed (``flat: 1 requested, layer
    low1 has 0 free``), and the update that would release a disabled resource or layer."""
    name = detail.partition(":")[0] if ":" in detail else ""
    layer = _LAYER.search(detail)
    if layer:
        level = f"HRES {name} layer {layer.group(1)}"
    else:
        level = f"HRES {name}" if reason == Reason.HRES_DISABLED else f"licenses {name}".strip()
    release = "Released when jobs holding these resources end; see the Resources page."
    if reason == Reason.HRES_DISABLED and name:
        release = (
            f"scontrol update HRESName={name} LayerName={layer.group(1)} DisableLayer=false"
            if layer
            else f"scontrol update HRESName={name} DisableHRES=false"
        )
    elif layer:
        release = (
            "Released when jobs holding these resources end, or raise the layer's count "
            f"(scontrol update HRESName={name} LayerName={layer.group(1)} Count=N)."
        )
    return Cause(reason, detail or f"licenses {job.licenses}", level, release)


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
        return _node_cause(job, reason, detail)
    if reason == Reason.RESERVATION:
        resv = Reservation.objects.filter(name=job.reservation).first()
        holder = (
            f"reservation {resv.name} starts {timezone.localtime(resv.start_time):%Y-%m-%dT%H:%M:%S}"
            if resv
            else detail or f"reservation {job.reservation}"
        )
        return Cause(reason, holder, "reservation", "Released when the reservation starts.")
    if reason in (Reason.LICENSES, Reason.HRES_DISABLED):
        return _license_cause(job, reason, detail)
    if reason in (Reason.JOB_HELD_USER, Reason.JOB_HELD_ADMIN):
        who = "its user" if reason == Reason.JOB_HELD_USER else "an administrator"
        return Cause(reason, f"the job is held by {who}", "job", f"scontrol release {job.id}")
    if reason == Reason.DEPENDENCY:
        return Cause(
            reason,
            detail or "a job it depends on has not reached the state its --dependency names",
            "job",
            "Released when the jobs it depends on reach that state.",
        )
    if reason == Reason.DEPENDENCY_NEVER_SATISFIED:
        return Cause(
            reason,
            detail or "a job it depends on ended in a state its --dependency excludes",
            "job",
            f"Never released: scancel {job.id} and submit it again.",
        )
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
            detail or _partition_excess(job, reason),
            f"partition {job.partition}",
            f"Change the job's request (scontrol update JobId={job.id} "
            f"{'TimeLimit=' if reason == Reason.PARTITION_TIME_LIMIT else 'NumNodes='}...) "
            "or the partition's limit.",
        )
    return Cause(reason, detail, "", "") if detail else None


def _partition_excess(job: Job, reason: str) -> str:
    """Which of the job's figures passes which of its partition's limits, in the words the
    limits' own explainer uses when AccountingStorageEnforce checks them."""
    part = Partition.objects.filter(name=job.partition).first()
    where = f"(partition {job.partition})"
    if reason == Reason.PARTITION_TIME_LIMIT:
        most = "UNLIMITED" if part is None or part.max_time is None else part.max_time
        return f"time limit {job.time_limit} minutes exceeds MaxTime={most} {where}"
    if part is not None and job.min_nodes < part.min_nodes:
        return f"job asks node={job.min_nodes}, under MinNodes={part.min_nodes} {where}"
    most = "UNLIMITED" if part is None or part.max_nodes is None else part.max_nodes
    return f"job asks node={job.min_nodes}, over MaxNodes={most} {where}"


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
