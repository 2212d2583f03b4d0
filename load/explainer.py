"""The load thresholds' part of "Why is this job pending?" (the console's job page,
``GET /api/jobs/{id}/explain/`` and ``fsched explain``), through the ``pending_causes``
hook: the nodes a pending job could use that the load check drained, each with the
figures behind the drain and what undrains it; and, for a job the load check STOPPED,
why and what continues it.

The reason of each cause stays the job's own, as the scheduler set it (Slurm's
``Resources``, ``Priority``, ``ReqNodeNotAvail``...): the load is the detail behind it,
never a reason code of its own.  Reads only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from django.conf import settings

from cluster import clock
from cluster.core.hostlists import expand, fold
from cluster.core.states import JobState, Reason
from cluster.extensions import PendingCause
from cluster.models import Job, Node, Partition
from cluster.selectors import hostlist_limit
from load.core.decisions import crossed
from load.core.thresholds import INDICES, Thresholds, lower_is_worse
from load.models import NodeLoad
from load.selectors import thresholds_in_force
from load.services import LOAD_REASON, STALE_AFTER, load_drained

# The reasons under which the nodes a job could use are what it waits for; a job held,
# waiting on a dependency, a limit or a reservation waits for something else.
_NODE_REASONS = frozenset(
    {"", Reason.NONE, Reason.PRIORITY, Reason.RESOURCES, Reason.REQ_NODE_NOT_AVAIL, Reason.NODE_DOWN}
)
# Drained nodes named one cause each; the rest are folded into one more cause.
NAMED = 8
LEVEL = "node load"


def pending_causes(job: Job) -> list[PendingCause]:
    if job.state == JobState.PENDING and job.reason in _NODE_REASONS:
        return _drained(job)
    if job.state == JobState.STOPPED and job.reason_detail.startswith(LOAD_REASON):
        return _stopped(job)
    return []


def _spaced(entries: Sequence[str]) -> str:
    """``ut=95>LoadSchedUt=80`` (the drain reason's form) as ``ut=95 > LoadSchedUt=80``."""
    return ", ".join(re.sub(r"([<>])", r" \1 ", entry, count=1) for entry in entries)


def _conditions(table: Mapping[str, float]) -> str:
    """What "satisfied" means for each threshold: ``mem > 1300, ut < 80``."""
    out = []
    for index, limit in table.items():
        integer = INDICES[index][1]
        shown = int(limit) if integer or limit == int(limit) else limit
        out.append(f"{index} {'>' if lower_is_worse(index) else '<'} {shown}")
    return ", ".join(out)


def _now_crossed(name: str, kind: str, found: Thresholds | None, latest: Mapping[str, NodeLoad]) -> list[str]:
    """The thresholds the node's fresh indices are beyond now (none without fresh indices)."""
    row = latest.get(name)
    if found is None or row is None:
        return []
    return crossed(row.indices(), found.sched if kind == "Sched" else found.stop, kind)


def _fresh(names: Sequence[str]) -> dict[str, NodeLoad]:
    since = clock.now() - STALE_AFTER
    return {row.node: row for row in NodeLoad.objects.filter(node__in=names, at__gte=since)}


def _usable(job: Job) -> set[str]:
    """The nodes the job could use: its partitions', within --nodelist, without --exclude."""
    limit = hostlist_limit()
    wanted = [p.strip() for p in job.partition.split(",") if p.strip()]
    names: set[str] = set()
    for nodes in Partition.objects.filter(name__in=wanted).values_list("nodes", flat=True):
        names.update(expand(nodes or "", limit=limit))
    if job.req_nodes:
        names &= set(expand(job.req_nodes, limit=limit))
    if job.exc_nodes:
        names -= set(expand(job.exc_nodes, limit=limit))
    return names


def _drained(job: Job) -> list[PendingCause]:
    # The nodes the load check drained, few or none, are read first: most pending jobs of
    # most clusters then cost no partition read nor hostlist expansion.
    found = [n for n in Node.objects.filter(reason__startswith=LOAD_REASON) if load_drained(n)]
    if not found:
        return []
    usable = _usable(job)
    drained = [n for n in found if n.name in usable]
    if not drained:
        return []
    drained.sort(key=lambda n: n.name)
    limits = thresholds_in_force([n.name for n in drained])
    latest = _fresh([n.name for n in drained])
    reason = job.reason or Reason.NONE
    causes = []
    for node in drained[:NAMED]:
        found = limits.get(node.name)
        over = _now_crossed(node.name, "Sched", found, latest)
        if over:
            figures = _spaced(over)
        else:  # back within its thresholds, not yet undrained: the figures that drained it
            figures = _spaced(node.reason[len(LOAD_REASON) :].split(",")) + " when drained"
        where = f" (partition {found.partition})" if found else ""
        conditions = f" ({_conditions(found.sched)})" if found else ""
        causes.append(
            PendingCause(
                reason,
                f"{node.name}: drained by the load check: {figures}{where}",
                LEVEL,
                f"It is undrained when every LoadSched threshold is satisfied again{conditions} "
                f"and its stopped jobs are continued; the load check runs every "
                f"{settings.FSCHED_LOAD_INTERVAL:g} s.",
            )
        )
    rest = drained[NAMED:]
    if rest:
        causes.append(
            PendingCause(
                reason,
                f"{fold(n.name for n in rest)}: {len(rest)} more nodes drained by the load check",
                LEVEL,
                "Each is undrained when every LoadSched threshold of its partition is satisfied again.",
            )
        )
    return causes


def _stopped(job: Job) -> list[PendingCause]:
    """A job the load check stopped: the figures that stopped it, on which node, and what
    continues it."""
    nodes = sorted(job.alloc or {})
    limits = {name: t for name, t in thresholds_in_force(nodes).items() if t.stop}
    latest = _fresh(list(limits))
    figures = _spaced(job.reason_detail[len(LOAD_REASON) :].split(","))
    on = fold(limits) if limits else fold(nodes)
    parts = sorted({t.partition for t in limits.values()})
    where = f" (partition {', '.join(parts)})" if parts else ""
    still = sorted({entry for name in limits for entry in _now_crossed(name, "Stop", limits[name], latest)})
    now = f"; now {_spaced(still)}" if still else ""
    conditions = "; ".join(dict.fromkeys(f"{_conditions(t.sched)}" for t in limits.values()))
    return [
        PendingCause(
            job.reason or Reason.NONE,
            f"{on}: stopped by the load check: {figures}{where}{now}; its memory, CPUs and nodes "
            "stay allocated to it",
            LEVEL,
            "It is continued when every LoadSched threshold is satisfied again"
            + (f" ({conditions})" if conditions else "")
            + ", the stopped jobs of a node one per check, the highest priority first "
            "(at equal priority the earliest started).",
        )
    ]
