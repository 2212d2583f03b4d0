"""The accounting of jobs and their steps that ``fsched sacct`` reads (``GET /api/accounting/jobs/``).

Finished jobs stay in the job table (until ``manage.py fsched_purge --jobs-older-than``, as
slurmdbd's ``PurgeJobAfter``), so accounting survives controller restarts.  The scheduler's
pass never reads them: its queries select by ``state`` (pending, or holding nodes) through
the ``(state, partition)`` index.  Accounting selects by time window through the
``end_time`` index (a job that ended before the window is never read) and pages by job id
(keyset), so a year of finished jobs costs a query no more than the page it returns.

A job's window and state filters are slurmdbd's (sacct(1), ``-S``, ``-E``, ``-s``): without
states, a job is in the window if it was submitted before its end and had not ended before
its start; with states, a job matches a state if it was in it during the window: PENDING
(submitted before the end, not started before the start), RUNNING or SUSPENDED (started
before the end, not ended before the start), a final state (ended in the window).
"""

from __future__ import annotations

import pwd
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.db.models import Q

from cluster import extensions, visibility
from cluster.core import job_steps
from cluster.core.gres import job_gres_tres
from cluster.core.states import FINISHED_JOB_STATES, JobState
from cluster.models import ClusterConfig, Event, Job
from cluster.services import step_usage
from slurmwords import step_statistics
from slurmwords.hostlists import expand_hostlist
from slurmwords.reasons import slurm_reason

# slurm.h's INFINITE: slurmdbd's time limit of a job that has none.
INFINITE_MINUTES = 0xFFFFFFFF
# Slurm's sacct -u root default: the user whose uid is 0 sees every user's jobs without -a.
ROOT = "root"
# States a job holds for a while without ending in them: matched by being in them now and
# in the window.
_HELD_STATES = frozenset({JobState.SUSPENDED, JobState.STOPPED, JobState.COMPLETING, JobState.CONFIGURING})


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# A step in these has not ended: slurmdbd has no statistics of it yet.
_LIVE_STEP_STATES = frozenset(
    {JobState.RUNNING, JobState.SUSPENDED, JobState.COMPLETING, JobState.CONFIGURING}
)


@dataclass
class Filters:
    """What sacct asked for; ``None``/empty means "no restriction"."""

    job_ids: Q | None = None
    users: list[str] = field(default_factory=list)
    all_users: bool = False
    accounts: list[str] = field(default_factory=list)
    partitions: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)  # sacct --name
    qos: list[str] = field(default_factory=list)  # sacct -q
    nodes: frozenset[str] = frozenset()  # sacct -N: jobs that ran on any of them
    states: list[str] = field(default_factory=list)
    start: datetime | None = None
    end: datetime | None = None
    # sacct -i, -I, -k/-K: (min, max) inclusive, or (n, None) for exactly n; slurmdbd's
    # nodes_alloc and tres_alloc's cpu count (0 for a job never started) and its time limit.
    nnodes: tuple[int, int | None] | None = None
    ncpus: tuple[int, int | None] | None = None
    time_limit: tuple[int, int | None] | None = None  # minutes; INFINITE_MINUTES: none


def accounting_jobs(
    *, viewer: Any, filters: Filters, after: int, limit: int, now: datetime
) -> tuple[list[dict[str, Any]], int | None]:
    """One page of the jobs ``viewer`` may see that match, in job id order, each with its
    steps; and the cursor of the next page (None at the end)."""
    qs = Job.objects.filter(visibility.visible_jobs(viewer)).filter(pk__gt=after)
    if filters.job_ids is not None:
        qs = qs.filter(filters.job_ids)
    if filters.users:
        qs = qs.filter(user__in=filters.users)
    elif not filters.all_users and viewer.get_username() != ROOT:
        qs = qs.filter(user=viewer.get_username())
    if filters.accounts:
        qs = qs.filter(account__in=filters.accounts)
    if filters.partitions:
        qs = qs.filter(partition__in=filters.partitions)
    if filters.names:
        qs = qs.filter(name__in=filters.names)
    if filters.qos:
        qs = qs.filter(qos__in=filters.qos)
    if filters.time_limit is not None:
        qs = qs.filter(time_limit_q(*filters.time_limit))
    qs = qs.filter(window_q(filters, now))
    rows = list(qs.order_by("id")[: limit + 1])
    more = len(rows) > limit
    rows = rows[:limit]
    cursor = rows[-1].id if more and rows else None
    if filters.nodes:
        # A page may come out short: the cursor is the last job read, not the last kept.
        rows = [job for job in rows if ran_on(job, filters.nodes)]
    cancellers = _cancellers([j.id for j in rows if j.state == JobState.CANCELLED])
    cluster = ClusterConfig.current().cluster_name
    out = [job_record(job, viewer, cancellers, now, cluster) for job in rows]
    # Counts fsched derives (a finished job's nodes from its node list): kept after
    # reading, as -N's nodes are.
    out = [j for j in out if in_range(j["nnodes"] if j["start_time"] else 0, filters.nnodes)]
    out = [j for j in out if in_range(j["alloc_cpus"], filters.ncpus)]
    _add_srun_steps(out, now)
    add_statistics(out, {job.id: job for job in rows})
    return out, cursor


def in_range(value: int, wanted: tuple[int, int | None] | None) -> bool:
    if wanted is None:
        return True
    low, high = wanted
    return value == low if high is None else low <= value <= high


def time_limit_q(low: int, high: int | None) -> Q:
    """slurmdbd's ``timelimit`` match: a job without a limit holds INFINITE."""
    unlimited = Q(time_limit__isnull=True)
    if high is None:
        return unlimited if low == INFINITE_MINUTES else Q(time_limit=low)
    q = Q(time_limit__gte=low, time_limit__lte=high)
    return q | unlimited if low <= INFINITE_MINUTES <= high else q


def ran_on(job: Job, nodes: frozenset[str]) -> bool:
    if not job.node_list:
        return False
    try:
        return not nodes.isdisjoint(expand_hostlist(job.node_list))
    except ValueError:
        return False


def window_q(filters: Filters, now: datetime) -> Q:
    start, end = filters.start, filters.end
    if start is None and end is None and not filters.states:
        return Q()
    end = end or now
    if not filters.states:
        if start is None:
            return Q(submit_time__lte=end)
        return Q(submit_time__lte=end) & (Q(end_time__gte=start) | Q(end_time__isnull=True))
    # No start (sacct -j without -S): from the beginning, as slurmdbd's usage_start of 0.
    start = start or _EPOCH
    not_ended = Q(end_time__isnull=True) | Q(end_time__gte=start)
    q = Q(pk__in=[])
    for state in filters.states:
        # slurmdbd matches PENDING and RUNNING by the job's times alone: a job that ran
        # during the window matches -s R even if it has completed since.
        if state == JobState.PENDING:
            q |= Q(submit_time__lte=end) & (Q(start_time__isnull=True) | Q(start_time__gte=start)) & not_ended
        elif state == JobState.RUNNING:
            q |= Q(start_time__lte=end) & not_ended
        elif state in _HELD_STATES:
            q |= Q(state=state, start_time__lte=end) & not_ended
        else:
            q |= Q(state=state, end_time__gte=start, end_time__lte=end)
    return q


def _cancellers(job_ids: list[int]) -> dict[int, str]:
    """Who cancelled each job (scancel's user), read from the job's history."""
    if not job_ids:
        return {}
    out: dict[int, str] = {}
    events = Event.objects.filter(kind=Event.Kind.JOB, job_id__in=job_ids, reason="scancel").exclude(user="")
    for job_id, user in events.order_by("time", "id").values_list("job_id", "user"):
        out[job_id] = user  # the last scancel wins
    return out


def _uid(name: str) -> int | str:
    """The requester as Slurm's ``CANCELLED by <uid>``: the uid of that login on the
    controller's host, else the name (an fsched account with no local login)."""
    try:
        return pwd.getpwnam(name).pw_uid
    except (KeyError, ValueError):
        return name


def gres_tres(job: Job, nodes: int, *, allocated: bool = False) -> dict[str, int]:
    """GPUs and other GRES: the devices given (AllocTRES), else the request on ``nodes``."""
    return job_gres_tres(
        job.gres,
        job.tres_per_job,
        job.tres_per_task,
        nodes=nodes,
        tasks=job.num_tasks,
        alloc=job.gres_alloc if allocated else None,
    )


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def job_record(
    job: Job, viewer: Any, cancellers: dict[int, str], now: datetime, cluster: str
) -> dict[str, Any]:
    started = job.start_time is not None and job.state not in (JobState.PENDING, JobState.REQUEUED)
    nnodes = node_count(job) if started else job.min_nodes
    alloc_cpus = job.num_cpus if started else 0
    req_cpus = job.num_tasks * job.cpus_per_task
    req_mem = (job.mem_per_node or 0) * job.min_nodes
    alloc_mem = sum(v[1] for v in job.alloc.values()) if job.alloc else req_mem
    batch = job.alloc.get(job.batch_host) if job.alloc else None
    batch_cpus = batch[0] if batch else (alloc_cpus if nnodes == 1 else job.cpus_per_task)
    batch_mem = batch[1] if batch else (job.mem_per_node or 0)
    # The agent's samples for accounting (containment); None until it records them.
    max_rss, total_cpu = job.max_rss_kb, job.total_cpu_secs
    facts = job_steps.JobFacts(
        state=job.state,
        exit_code=job.exit_code,
        exit_signal=job.exit_signal,
        start=job.start_time,
        end=job.end_time,
        paused_seconds=job.paused_seconds + _paused_now(job, now),
        batch_host=job.batch_host,
        batch_cpus=batch_cpus,
        batch_mem_mb=batch_mem,
        max_rss_kb=max_rss,
        total_cpu_secs=total_cpu,
        batch=job.batch,
    )
    exit_code, exit_signal = job_steps.job_exit(job.state, job.exit_code, job.exit_signal)
    private = visibility.may_manage(viewer, job)
    return {
        "job_id": job.id,
        "array_job_id": job.array_job_id,
        "array_task_id": job.array_task_id,
        "name": job.name,
        "user": job.user,
        "account": job.account,
        "partition": job.partition,
        "qos": job.qos,
        "state": job.state,
        "cancelled_by": _uid(cancellers[job.id]) if job.id in cancellers else None,
        "reason": slurm_reason(job.reason, job.reason_detail),
        "exit_code": exit_code,
        "exit_signal": exit_signal,
        "submit_time": _iso(job.submit_time),
        "eligible_time": _iso(job.eligible_time),
        "start_time": _iso(job.start_time) if started else None,
        "end_time": _iso(job.end_time),
        "elapsed": job_steps.elapsed_seconds(
            job.start_time if started else None, job.end_time, facts.paused_seconds, now
        ),
        # Fixed at submission (the partition's DefaultTime, else MaxTime), as Slurm records it.
        "time_limit": job.time_limit,
        "nnodes": nnodes,
        "alloc_cpus": alloc_cpus,
        "req_cpus": req_cpus,
        "req_mem_mb": req_mem,
        "alloc_tres": job_steps.tres_text(
            cpus=alloc_cpus, mem_mb=alloc_mem, nodes=nnodes, gres=gres_tres(job, nnodes, allocated=True)
        )
        if started
        else "",
        "req_tres": job_steps.tres_text(
            cpus=req_cpus, mem_mb=req_mem, nodes=job.min_nodes, gres=gres_tres(job, job.min_nodes)
        ),
        "node_list": job.node_list if started else "None assigned",
        # The request as sbatch took it (fsched's, not sacct's): what a replay of the
        # cluster's history submits again (fsched simulate --from-history).
        "request": {
            "min_nodes": job.min_nodes,
            "num_tasks": job.num_tasks,
            "cpus_per_task": job.cpus_per_task,
            "mem_per_node": job.mem_per_node,
            "mem_per_cpu": job.mem_per_cpu,
            "licenses": job.licenses,
        },
        "work_dir": job.work_dir if private else None,
        "comment": job.comment,
        # sacct's Cluster, Constraints, Licenses, Priority, Reservation, Restarts, Suspended.
        "cluster": cluster,
        "constraints": job.features,
        "licenses": job.licenses,
        "priority": job.priority,
        "reservation": job.reservation,
        "restarts": job.restart_count,
        "suspended": facts.paused_seconds,
        "max_rss_kb": max_rss,
        "total_cpu_secs": total_cpu,
        "steps": [step_record(s) for s in job_steps.job_steps(facts, now)],
    }


def _add_srun_steps(out: list[dict[str, Any]], now: datetime) -> None:
    """Each job's srun steps after its batch step, from the extensions that keep them."""
    ids = [j["job_id"] for j in out]
    for ext in extensions.active():
        found = ext.job_steps(ids, now) if ids else {}
        for j in out:
            j["steps"] += [step_record(s) for s in found.get(j["job_id"], ())]


def batch_end(job: Job) -> dict[str, Any] | None:
    """The batch step's figures from the job's end report, for its statistics."""
    end = {"max_rss_kb": job.max_rss_kb, "cpu_secs": job.total_cpu_secs}
    return {k: v for k, v in end.items() if v is not None} or None


def add_statistics(out: list[dict[str, Any]], jobs: dict[int, Job]) -> None:
    """Each ended step's statistics (``stats``, step_statistics.to_wire's; None when it has
    none, as a running step's: slurmstepd sends them at the step's end), and its MaxRSS and
    TotalCPU from them."""
    wanted = [
        step_usage.EndedStep(
            job_id=j["job_id"],
            step=s["step_id"],
            run=job.restart_count,
            batch_host=job.batch_host if s["step_id"] == job_steps.BATCH else "",
            batch_end=batch_end(job) if s["step_id"] == job_steps.BATCH else None,
        )
        for j in out
        if (job := jobs.get(j["job_id"])) is not None
        for s in j["steps"]
        if s["state"] not in _LIVE_STEP_STATES
    ]
    found = step_usage.final_statistics(wanted)
    for j in out:
        for s in j["steps"]:
            stats = found.get((j["job_id"], s["step_id"]))
            s["stats"] = stats
            if stats is not None:
                s["max_rss_kb"] = step_statistics.max_rss_kb(stats)
                s["total_cpu_secs"] = step_statistics.total_cpu_secs(stats)


def node_count(job: Job) -> int:
    """Nodes the job held: its allocation while it holds one, its node list after."""
    if job.alloc:
        return len(job.alloc)
    try:
        return len(expand_hostlist(job.node_list)) or job.min_nodes
    except ValueError:
        return job.min_nodes


def _paused_now(job: Job, now: datetime) -> int:
    if job.paused_at is None or job.state in FINISHED_JOB_STATES:
        return 0
    return max(0, int((now - job.paused_at).total_seconds()))


def step_record(step: job_steps.Step) -> dict[str, Any]:
    return {
        "step_id": step.step_id,
        "name": step.name,
        "state": step.state,
        "exit_code": step.exit_code,
        "exit_signal": step.exit_signal,
        "start_time": _iso(step.start),
        "end_time": _iso(step.end),
        "elapsed": step.elapsed,
        "nnodes": step.nnodes,
        "ntasks": step.ntasks,
        "alloc_cpus": step.alloc_cpus,
        "alloc_tres": step.alloc_tres,
        "node_list": step.node_list,
        "max_rss_kb": step.max_rss_kb,
        "total_cpu_secs": step.total_cpu_secs,
    }


def job_states(values: Iterable[str]) -> list[str]:
    """sacct -s: full names or Slurm's short codes, any case (``cd``, ``CANCELLED``)."""
    from cluster.core.states import JOB_STATE_COMPACT  # noqa: PLC0415 - with job_states only

    by_code = {code: state.value for state, code in JOB_STATE_COMPACT.items()}
    out = []
    for value in values:
        upper = value.strip().upper()
        name = by_code.get(upper, upper)
        if name not in JobState.__members__:
            raise ValueError(f"unrecognized job state value {value}")
        out.append(name)
    return out
