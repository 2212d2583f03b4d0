"""The load check: every 30 seconds, each node's latest indices against its partition's
thresholds (docs/load-thresholds.md).  The decisions are the pure core's
(load.core.decisions); this applies them.

A node drained by the check carries a reason that starts with ``Load:`` (given by
``slurm``, as slurmctld signs its own reasons); a drain with any other reason is an
administrator's, which the check neither takes over nor lifts.  A job stopped by the check
is Slurm's STOPPED (SIGSTOP to its processes, which keep their memory, nodes and CPUs),
its reason detail naming the figures; the time it spends stopped does not count against
its time limit, nor is it charged usage for it (its CPUs stay allocated to it).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Max

from cluster import clock, cycles, publish
from cluster.core.states import JobState, NodeBase, NodeFlag
from cluster.models import Job, Node
from cluster.services import pass_snapshot, rows
from cluster.services.state import pause_job, set_node_state, unpause_job
from load import history
from load.core.decisions import CHECK_INTERVAL, NodeJob, check_node
from load.models import NodeLoad
from load.selectors import thresholds_in_force

LOAD_REASON = "Load: "
SIGNER = "slurm"
# Indices older than this say nothing about the node now (its agent is silent).
STALE_AFTER = timedelta(seconds=CHECK_INTERVAL)
_UNJUDGED = NodeFlag.NOT_RESPONDING | NodeFlag.POWERED_DOWN | NodeFlag.POWERING_DOWN | NodeFlag.POWERING_UP


def load_drained(node: Node) -> bool:
    return bool(node.flags & NodeFlag.DRAIN) and node.reason.startswith(LOAD_REASON)


def load_check(*, now: datetime | None = None) -> str:
    """One check of every node with thresholds and fresh indices; what it did, in words."""
    now = now or clock.now()
    if not _fresh_indices(now):
        # No node with fresh indices: nothing to record or judge (a simulation without a
        # load trace, agents silent); the history still ages.
        if history.prune(now=now):
            publish.console_changed("load")
        return "no node with thresholds and indices"
    latest = {row.node: row for row in NodeLoad.objects.filter(at__gte=now - STALE_AFTER)}
    # One check interval: the one in force, an admin's edit included.
    check_interval = cycles.interval_in_force("load")
    # The chart's history: every node with fresh figures, thresholds or not (an
    # administrator choosing thresholds wants to see the load before setting any).
    if history.record(latest.values(), now=now, check_interval=check_interval) + history.prune(now=now):
        publish.console_changed("load")
    limits = {name: t for name, t in thresholds_in_force(list(latest)).items() if t}
    if not limits:
        return "no node with thresholds and indices"
    # A job is stopped once it has run one check interval.
    done: list[str] = []
    with transaction.atomic():
        # Nodes are locked by name, then the jobs, the writers' order (docs/locking.md).
        nodes = list(Node.objects.select_for_update().filter(name__in=limits).order_by("name"))
        # Jobs matter only where stop thresholds are set: only those are read and locked.
        on_node = _jobs_by_node({n.name for n in nodes if limits[n.name].stop})
        for node in nodes:
            if node.base_state == NodeBase.DOWN or node.flags & _UNJUDGED:
                continue
            row = latest[node.name]
            drained_by_load = load_drained(node)
            decisions = check_node(
                thresholds=limits[node.name],
                indices=row.indices(),
                run_queue=row.run_queue,
                jobs=[_view(job) for job in on_node.get(node.name, ())],
                load_drained=drained_by_load,
                admin_drained=bool(node.flags & NodeFlag.DRAIN) and not drained_by_load,
                now=now.timestamp(),
                check_interval=check_interval,
            )
            figures = {**row.indices(), "run_queue": row.run_queue}
            for decision in decisions:
                if decision.action == "drain":
                    set_node_state(
                        node, add=NodeFlag.DRAIN, reason=decision.reason, user=SIGNER, now=now, detail=figures
                    )
                elif decision.action == "undrain":
                    set_node_state(
                        node, remove=NodeFlag.DRAIN, reason="", user=SIGNER, now=now, detail=figures
                    )
                else:
                    job = next(j for j in on_node[node.name] if j.id == decision.job_id)
                    _stop_or_continue(
                        job, decision.action, decision.reason, now=now, figures=figures, node=node.name
                    )
                    done.append(f"{decision.action} job {job.id} on {node.name}")
                    continue
                rows.update_rows([node], ["flags", "reason", "reason_user", "reason_time"])
                done.append(f"{decision.action} {node.name}")
    if done:
        publish.console_changed("nodes", "jobs", "load")
    return ", ".join(done) or "nothing to do"


def _fresh_indices(now: datetime) -> bool:
    """Whether some node's latest indices are fresh at ``now``, from the newest reading
    (kept by the simulator until a heartbeat writes one)."""
    newest = pass_snapshot.kept_value(
        "load.newest_indices", (NodeLoad,), lambda: NodeLoad.objects.aggregate(t=Max("at"))["t"]
    )
    return newest is not None and newest >= now - STALE_AFTER


def _jobs_by_node(names: set[str]) -> dict[str, list[Job]]:
    """The running and stopped jobs on these nodes, locked in id order: found by a plain
    read, then only they are locked (and read again, as they are now), not every running
    job of the cluster."""
    if not names:
        return {}
    states = (JobState.RUNNING, JobState.STOPPED)
    found = [
        job_id
        for job_id, alloc in Job.objects.filter(state__in=states).values_list("id", "alloc")
        if names.intersection(alloc or {})
    ]
    out: dict[str, list[Job]] = {}
    for job in Job.objects.select_for_update().filter(pk__in=found, state__in=states).order_by("id"):
        for name in names.intersection(job.alloc or {}):
            out.setdefault(name, []).append(job)
    return out


def _view(job: Job) -> NodeJob:
    start = job.start_time.timestamp() if job.start_time else 0.0
    return NodeJob(job.id, job.priority, start, stopped=job.state == JobState.STOPPED)


def _stop_or_continue(job: Job, action: str, reason: str, *, now: datetime, figures: dict, node: str) -> None:
    if action == "stop":
        job.reason_detail = reason[:512]
        job.save(update_fields=["reason_detail"])
        pause_job(job, JobState.STOPPED, now=now, why=reason, user=SIGNER, detail=figures, node=node)
    else:
        job.reason_detail = ""
        job.save(update_fields=["reason_detail"])
        unpause_job(job, now=now, why=reason, user=SIGNER, detail=figures, node=node)
