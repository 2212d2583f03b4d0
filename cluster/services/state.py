"""The primitives that write a job's or a node's state: every service that moves a job
or a node goes through these, so each rule of the move (the fields an end clears, the
event it records, who is told) lives in one place.

A leaf of the cluster services: it imports no other service module (rows is plumbing),
so the job, node, agent and scheduling services, and the extensions, can all use it.
The callers hold the rows' locks (docs/locking.md); nothing here commits.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction

from cluster import clock, extensions, job_mail, publish, run_records
from cluster.core.gres import launch_gres
from cluster.core.hostlists import expand, fold
from cluster.core.prolog_conf import prolog_config
from cluster.core.requeue_wait import requeued_begin
from cluster.core.states import HOLDING_JOB_STATES, PAUSED_JOB_STATES, JobState, NodeBase, NodeFlag, Reason
from cluster.models import ClusterConfig, Event, Job, Node
from cluster.services import job_credentials, rows
from slurmwords.agent_messages import Cancel, Launch, LaunchJob, RunEpilog, RunProlog, Signal
from slurmwords.reasons import REQUEUED_HELD


def transition_row(
    job_id: int,
    old: str,
    new: str,
    *,
    now: datetime,
    why: str = "",
    user: str = "",
    node: str = "",
    detail: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One row of a job's history, for ``rows.insert_values(Event, ...)`` (the console's
    timeline and later reports read these)."""
    return {
        "time": now,
        "kind": Event.Kind.JOB,
        "job_id": job_id,
        "old_state": old,
        "new_state": new,
        "reason": why,
        "user": user,
        "node": node,
        "detail": detail or {},
    }


def record_transition(
    job: Job,
    old: str,
    *,
    now: datetime | None = None,
    why: str = "",
    user: str = "",
    node: str = "",
    detail: dict[str, Any] | None = None,
) -> None:
    """Record ``job``'s change from ``old`` to its present state."""
    rows.insert_values(
        Event,
        [
            transition_row(
                job.id,
                old,
                job.state,
                now=now or clock.now(),
                why=why,
                user=user,
                node=node,
                detail=detail,
            )
        ],
    )


# What an end writes: a job that ended holds nothing and has no end pending.
ENDED_FIELDS = ("state", "reason", "end_time", "alloc", "final_state", "prolog_nodes")


def mark_ended(
    job: Job, state: JobState, *, now: datetime, reason: str = Reason.NONE, mail: bool = True
) -> None:
    """Set ``job``'s end (ENDED_FIELDS) without saving: for a caller that writes many. Its
    exit code is set first, for the END/FAIL mail (``mail``: False when it was sent as
    the job went COMPLETING)."""
    if mail:
        job_mail.ended(job, state, now=now)
    job.state = state
    job.reason = reason
    job.end_time = now
    job.alloc = {}
    job.final_state = ""
    job.prolog_nodes = []


# What a job entering COMPLETING writes: its end is known, its nodes are still held.
COMPLETING_FIELDS = (
    "state", "reason", "end_time", "final_state", "kill_requested", "exit_code", "exit_signal",
)  # fmt: skip


def mark_completing(
    job: Job, state: JobState, *, now: datetime, reason: str = Reason.NONE, exit_code: int = 0,
    signal: int = 0,
) -> None:  # fmt: skip
    """The job's processes ended but its Epilog runs (slurm.conf's ``Epilog``): COMPLETING,
    with the end it will take in ``final_state``, its nodes held (``alloc`` kept) until the
    epilog is done, as slurmctld keeps a job COMPLETING until each node's epilog completes.
    Unsaved, for a caller that writes many (COMPLETING_FIELDS). The kill, if one was asked,
    is over: the processes are gone. The job's other nodes, which saw no launch, are told
    to run their Epilog (the batch host runs its own after the job)."""
    job.state = JobState.COMPLETING
    job.final_state = state
    job.reason = reason
    job.end_time = now
    job.kill_requested = None
    job.exit_code, job.exit_signal = exit_code, signal
    job_mail.ended(job, state, now=now)  # as slurmctld mails when the job starts completing
    facts = node_job_facts(job)
    publish.to_agents([
        (node, RunEpilog(job_id=job.id, node=node, run=job.restart_count, exit_code=exit_code, signal=signal,
                         job=facts).to_wire())
        for node in job.alloc if node != job.batch_host
    ])  # fmt: skip


def node_job_facts(job: Job) -> dict[str, Any]:
    """What a Prolog's or Epilog's environment names, for a node that saw no launch, and
    what the extensions add to a launch (hres/lua's preps, for the nodes' callbacks)."""
    facts = {
        "user": job.user, "node_list": job.node_list, "num_nodes": len(job.alloc), "partition": job.partition,
        "account": job.account, "name": job.name, "work_dir": job.work_dir, "run": job.restart_count,
        "std_out": job.std_out or None, "std_err": job.std_err or None, "std_in": job.std_in or None,
    }  # fmt: skip
    for ext in extensions.active():
        facts.update(ext.launch_fields(job))
    return facts


def alloc_prolog_nodes(job: Job, *, alloc_flag: bool | None = None) -> list[str]:
    """PrologFlags=Alloc (or Contain, which implies it): the job's nodes other than its
    batch host, which run the Prolog at allocation (slurm.conf(5)); the batch host runs
    its own with the launch. Empty without the flag, or for a one-node job."""
    if alloc_flag is None:
        alloc_flag = alloc_prolog_flag()
    return sorted(node for node in job.alloc if node != job.batch_host) if alloc_flag else []


def alloc_prolog_flag() -> bool:
    try:
        return prolog_config(ClusterConfig.current().options).flag("Alloc")
    except ValueError:  # checked when slurm.conf was read; an edited row falls back to none
        return False


def send_alloc_prologs(job: Job, nodes: Iterable[str] | None = None) -> None:
    """``run_prolog`` to the nodes still running the job's allocation Prolog; an agent
    answers a repeat with the result it already has."""
    publish.to_agents(alloc_prolog_messages(job, job.prolog_nodes if nodes is None else nodes))


def alloc_epilogs(job: Job) -> None:
    """A job leaving CONFIGURING without a launch (its allocation Prolog failed somewhere,
    or it was cancelled or requeued meanwhile): the nodes that were sent ``run_prolog``
    run their Epilog, as slurmctld's termination of an allocation reaches every node. Call
    before the job's allocation is cleared; nothing without PrologFlags=Alloc."""
    if job.state != JobState.CONFIGURING or job.launched:
        return
    nodes = alloc_prolog_nodes(job)
    if not nodes:
        return
    facts = node_job_facts(job)
    run = job.restart_count
    publish.to_agents([
        (node, RunEpilog(job_id=job.id, node=node, run=run, exit_code=0, signal=0, job=facts).to_wire())
        for node in nodes
    ])  # fmt: skip


def alloc_prolog_messages(job: Job, nodes: Iterable[str]) -> list[tuple[str, dict[str, Any]]]:
    facts = node_job_facts(job)
    run = job.restart_count
    return [(node, RunProlog(job_id=job.id, node=node, run=run, job=facts).to_wire()) for node in nodes]


def release_completing_node(job: Job, node: str, *, now: datetime, why: str) -> None:
    """A COMPLETING job's Epilog is done on ``node``: the node is released from the job
    (as slurmctld clears a node's COMPLETING as its epilog completes); the job ends once
    every node's is done. Saved."""
    job.alloc = {name: value for name, value in job.alloc.items() if name != node}
    if job.alloc:
        job.save(update_fields=["alloc"])
    else:
        finish_completing(job, now=now, why=why, node=node)


def finish_completing(job: Job, *, now: datetime, why: str, node: str = "") -> None:
    """COMPLETING → the end kept in ``final_state``, at the time the processes ended; the
    job releases its nodes. Saved, with its event."""
    final = JobState(job.final_state or JobState.COMPLETED)
    mark_ended(job, final, now=job.end_time or now, reason=job.reason, mail=False)
    job.save(update_fields=list(ENDED_FIELDS))
    record_transition(job, JobState.COMPLETING, now=now, why=why, node=node)
    publish.console_changed("jobs")


def requeue_held(job: Job, *, now: datetime, why: str, detail: str, node: str = "") -> None:
    """Back to the queue and held by its user's hold (``scontrol release`` frees it), with
    ``detail`` as the reason squeue shows: Slurm's requeue after a failed Prolog."""
    old = job.state
    requeue_now(job, now=now)
    job.hold = "user"
    job.reason = Reason.JOB_HELD_USER
    job.reason_detail = detail
    job.priority = 0
    job.save(update_fields=["hold", "reason", "reason_detail", "priority"])
    record_transition(job, old, now=now, why=why, node=node)
    publish.console_changed("jobs")


def hold_pending(job: Job, *, now: datetime, reason: str, why: str) -> None:
    """A PENDING job held by the system (JobHeldAdmin's hold, ``scontrol release`` by an
    operator frees it), with ``reason`` shown as its reason: Slurm sets a job's state_desc
    for this, which squeue prints in place of the reason code."""
    job.hold = "admin"
    job.reason = reason[:64]
    job.reason_detail = reason[:512]
    job.priority = 0
    job.save(update_fields=["hold", "reason", "reason_detail", "priority"])
    record_transition(job, job.state, now=now, why=why)
    publish.console_changed("jobs")


def end_job(
    job: Job,
    state: JobState,
    *,
    now: datetime,
    why: str,
    reason: str = Reason.NONE,
    node: str = "",
    user: str = "",
) -> None:
    """A job reaches a final state without an exit from its processes (cancelled while
    pending, lost with its node, failed to launch): it releases its nodes at once."""
    old = job.state
    mark_ended(job, state, now=now, reason=reason)
    job.save()
    record_transition(job, old, now=now, why=why, user=user, node=node)
    publish.console_changed("jobs")


def terminate_running(job: Job, *, final_state: JobState, now: datetime) -> None:
    """Ask the agent to end a job: TERM, then KILL after KillWait; the exit is recorded later."""
    kill_wait = ClusterConfig.current().option_int("KillWait", 30)
    job.final_state = final_state
    job.kill_requested = now
    job.save(update_fields=["final_state", "kill_requested"])
    if final_state == JobState.TIMEOUT:
        job_mail.reached_time_limit(job, now=now)
    if job.state in PAUSED_JOB_STATES:  # a stopped process would never see the TERM
        publish.to_agent(job.batch_host, Signal(job_id=job.id, signal="CONT").to_wire())
    publish.to_agent(job.batch_host, Cancel(job_id=job.id, kill_wait=kill_wait).to_wire())


def requeue_now(job: Job, *, now: datetime, ended_by: JobState = JobState.REQUEUED) -> None:
    """Back to the queue, not eligible again before its last run's credentials expire
    (cluster.core.requeue_wait); squeue shows it waiting on BeginTime. The run that ends
    is kept first, in the state ``ended_by`` (sacct -D's earlier records)."""
    run_records.keep_run(job, now=now, ended_by=ended_by)
    if job.start_time is not None:
        job_mail.ended(job, JobState.REQUEUED, now=now, requeued=True)
    job.state = JobState.PENDING
    job.reason = Reason.NONE
    job.restart_count += 1
    job.start_time = None
    job.end_time = None
    job.node_list = ""
    job.batch_host = ""
    job.alloc = {}
    job.launched = False
    job.kill_requested = None
    job.final_state = ""
    job.exit_code = 0
    job.exit_signal = 0
    # The run's time suspended and samples are its record's now (batch_requeue_fini's too).
    job.paused_seconds, job.paused_at = 0, None
    job.max_rss_kb = job.total_cpu_secs = None
    job.begin_time = requeued_begin(now, job.begin_time, ClusterConfig.current().options.get("AuthInfo"))
    job.eligible_time = job.begin_time
    # A new submission as far as accounting and squeue tell (slurmctld's batch_requeue_fini),
    # a second later than the last one so that the two runs' records differ.
    job.submit_time = max(now, job.submit_time + timedelta(seconds=1)) if job.submit_time else now
    job.prolog_nodes = []
    if job.hold:  # scontrol requeuehold: held by its user, with slurmctld's description
        job.reason = Reason.JOB_HELD_USER
        job.reason_detail = REQUEUED_HELD
        job.priority = 0
    job.save()


# What a start writes: where the job runs, with what, until when, and that it is not yet
# launched (the agent's "started" sets that).
STARTED_FIELDS = (
    "gres_alloc",
    "state",
    "reason",
    "reason_detail",
    "start_time",
    "time_limit",
    "priority",
    "node_list",
    "batch_host",
    "alloc",
    "launched",
    "licenses_alloc",
    "prolog_nodes",
    "last_sched_eval",
    "started_by_backfill",
)


@dataclass(frozen=True)
class Placement:
    """Where and how a pass starts one pending job."""

    hosts: Sequence[str]
    cpus_per_node: Sequence[int]
    mem_per_node: Sequence[int]
    time_limit: int | None
    priority: int
    licenses: str = ""
    # Some of its nodes are powering up: the job waits for them, CONFIGURING.
    configuring: bool = False
    gres_alloc: Mapping[str, list] = field(default_factory=dict)  # GRES devices per node
    backfill: bool = False  # started by the backfill phase (scontrol's Scheduler=Backfill)


def start_jobs(placed: Sequence[tuple[Job, Placement]], *, now: datetime) -> None:
    """PENDING → RUNNING (or CONFIGURING) on the placed nodes, and the launch sent.

    The caller holds the rows' locks and has checked they are still PENDING and unheld, so
    the start is written as decided; a CONFIGURING job is launched by ``launch_configured``
    when its nodes are up.
    """
    events = []
    touched: set[str] = set()
    alloc_flag = alloc_prolog_flag() if placed else False
    prologs: list[Job] = []
    held: set[int] = set()
    # Folding a host list costs a NodeSet; the many jobs a pass packs on one node share it.
    folded: dict[tuple[str, ...], str] = {}
    for job, place in placed:
        job.state = JobState.CONFIGURING if place.configuring else JobState.RUNNING
        job.reason = Reason.NONE
        job.reason_detail = ""
        job.start_time = now
        job.last_sched_eval = now
        job.started_by_backfill = place.backfill
        job.time_limit = place.time_limit
        job.priority = place.priority
        hosts = tuple(place.hosts)
        if hosts not in folded:
            folded[hosts] = fold(hosts)
        job.node_list = folded[hosts]
        job.batch_host = place.hosts[0]
        job.alloc = {
            h: [c, m] for h, c, m in zip(place.hosts, place.cpus_per_node, place.mem_per_node, strict=True)
        }
        job.launched = False
        job.licenses_alloc = place.licenses
        job.gres_alloc = dict(place.gres_alloc)
        # PrologFlags=Alloc: CONFIGURING until the other nodes' Prologs succeeded, as
        # slurmctld holds the batch launch until every node's prolog completes; a job
        # waiting for a power up sends them once its nodes are up (launch_configured).
        job.prolog_nodes = alloc_prolog_nodes(job, alloc_flag=alloc_flag)
        if not place.configuring and not extensions.launch_ready(job):
            # An extension's work must end first (hres/lua's asynchronous pre-run): the job
            # waits CONFIGURING, and launch_configured launches it when that work ends.
            job.state = JobState.CONFIGURING
            held.add(job.id)
        if job.prolog_nodes:
            job.state = JobState.CONFIGURING
            if not place.configuring:
                prologs.append(job)
        touched.update(place.hosts)
        events.append(transition_row(job.id, JobState.PENDING, job.state, now=now, node=job.node_list))
    rows.update_rows([job for job, _ in placed], list(STARTED_FIELDS))
    rows.insert_values(Event, events)
    job_mail.began([job for job, _ in placed], now=now)
    refresh_usage(touched)
    launching = [
        job for job, place in placed if not place.configuring and not job.prolog_nodes and job.id not in held
    ]
    credentials = job_credentials.mint_many(launching)
    added = extensions.launch_fields(launching)
    publish.to_agents(
        [(job.batch_host, launch_payload(job, credentials[job.id], added[job.id])) for job in launching]
    )
    _note_launch_sent([job.id for job in launching], now)
    for job in prologs:
        send_alloc_prologs(job)


def launch_configured(job: Job, *, now: datetime, why: str) -> bool:
    """CONFIGURING → RUNNING on a locked row, and only now the launch sent to the batch
    host. The time limit counts from the launch, not from the allocation. A job whose
    allocation Prologs still run (PrologFlags=Alloc) is not launched: they are (re)sent,
    and the last one's success launches it (cluster/services/prolog_epilog.py).  A job an
    extension holds back (``extensions.launch_ready``) stays CONFIGURING: that extension
    calls this again when its work ends.  False when not launched."""
    if not extensions.launch_ready(job):
        return False
    if job.prolog_nodes:
        send_alloc_prologs(job)
        return False
    job.state = JobState.RUNNING
    job.start_time = now
    job.launched = False
    job.save(update_fields=["state", "start_time", "launched"])
    record_transition(job, JobState.CONFIGURING, now=now, why=why, node=job.node_list)
    publish.to_agent(job.batch_host, launch_payload(job))
    _note_launch_sent([job.id], now)
    return True


# Launches leave when the transaction that started their jobs commits.  A pass of
# thousands of starts can commit many seconds after its clock (the jobs' start_time);
# counted from start_time, BatchStartTimeout would run out before the agents were told.
_LAUNCH_LAG = timedelta(seconds=1)


def _note_launch_sent(job_ids: list[int], started: datetime) -> None:
    """After the commit: when the launches left, recorded only when that is later than
    their start by ``_LAUNCH_LAG`` (one statement, and none at all for a quick pass)."""
    if not job_ids:
        return

    def note() -> None:
        sent = clock.now()
        if sent - started >= _LAUNCH_LAG:
            Job.objects.filter(pk__in=job_ids, start_time=started, launched=False).update(launch_sent=sent)

    # Robust: the launches are sent already, and the callbacks after this one (the
    # allocation prologs, the console) must run even if the database just went away; the
    # watch then counts from the start, as it always did.
    transaction.on_commit(note, robust=True)


def pause_job(
    job: Job,
    state: JobState,
    *,
    now: datetime,
    why: str,
    user: str = "",
    detail: dict[str, Any] | None = None,
    node: str = "",
) -> None:
    """RUNNING → SUSPENDED (``scontrol suspend``) or STOPPED (the load thresholds) on a
    locked row: its processes get SIGSTOP and keep their nodes, and the pause's time will
    not count against the time limit.  ``node``: the node whose state caused it, for the
    event (the node page lists it)."""
    job.state = state
    job.paused_at = now
    job.save(update_fields=["state", "paused_at"])
    publish.to_agent(job.batch_host, Signal(job_id=job.id, signal="STOP").to_wire())
    extensions.job_signalled(job, "STOP")
    record_transition(job, JobState.RUNNING, now=now, why=why, user=user, node=node, detail=detail)


def unpause_job(
    job: Job,
    *,
    now: datetime,
    why: str,
    user: str = "",
    detail: dict[str, Any] | None = None,
    node: str = "",
) -> None:
    """SUSPENDED or STOPPED → RUNNING on a locked row: its processes get SIGCONT."""
    old = job.state
    if job.paused_at is not None:
        job.paused_seconds += max(0, int((now - job.paused_at).total_seconds()))
    job.state = JobState.RUNNING
    job.paused_at = None
    job.save(update_fields=["state", "paused_seconds", "paused_at"])
    publish.to_agent(job.batch_host, Signal(job_id=job.id, signal="CONT").to_wire())
    extensions.job_signalled(job, "CONT")
    record_transition(job, old, now=now, why=why, user=user, node=node, detail=detail)


def suspend_job(job: Job, *, now: datetime, user: str) -> None:
    pause_job(job, JobState.SUSPENDED, now=now, why="suspend", user=user)


def resume_job(job: Job, *, now: datetime, user: str) -> None:
    unpause_job(job, now=now, why="resume", user=user)


def refresh_usage(names: Iterable[str] | None = None) -> None:
    """Recompute allocated CPUs/memory, IDLE/MIXED/ALLOCATED and the COMPLETING flag from
    the jobs holding nodes.

    Derived from the jobs, never counted up and down, so it cannot drift. The nodes are
    locked (in name order) before the jobs are read: on PostgreSQL two transactions ending
    two jobs that shared a node each read the other's job as still running, and both
    wrote the node MIXED. Holding the node's lock, the later one reads the jobs once the
    earlier has committed.

    A COMPLETING job's CPUs stay allocated until its Epilog is done there (slurmctld frees
    a job's resources when its completion ends), but its nodes are COMPLETING and their
    base state counts only the jobs still running, as slurmctld's make_node_comp does:
    ``IDLE+COMPLETING`` (sinfo ``comp``) when nothing else runs, ``MIXED+COMPLETING``
    beside a running job.
    """
    fields = ("name", "cpus", "alloc_cpus", "alloc_mem", "base_state", "flags", "last_busy")
    names = None if names is None else set(names)
    where = None if names is None else {"name": sorted(names)}
    nodes = rows.load(Node, fields, where, order_by=("name",), for_update=True)
    if not nodes:
        return
    usage: dict[str, list[int]] = {}
    running: dict[str, int] = {}
    completing: set[str] = set()
    for alloc, state in _holding_allocs(names):
        for node, (cpus, mem) in alloc.items():
            entry = usage.setdefault(node, [0, 0])
            entry[0] += cpus
            entry[1] += mem
            if state == JobState.COMPLETING:
                completing.add(node)
            else:
                running[node] = running.get(node, 0) + cpus
    changed = []
    for node in nodes:
        cpus, mem = usage.get(node.name, (0, 0))
        busy = running.get(node.name, 0)
        base = NodeBase(node.base_state)
        if base in (NodeBase.IDLE, NodeBase.MIXED, NodeBase.ALLOCATED):
            base = (
                NodeBase.IDLE if busy == 0 else (NodeBase.ALLOCATED if busy >= node.cpus else NodeBase.MIXED)
            )
        ending = NodeFlag.COMPLETING if node.name in completing else NodeFlag.NONE
        flags = int(node.flags & ~NodeFlag.COMPLETING | ending)
        if (node.alloc_cpus, node.alloc_mem, node.base_state, node.flags) != (cpus, mem, base, flags):
            if cpus and not node.alloc_cpus:
                node.last_busy = clock.now()
            node.alloc_cpus, node.alloc_mem, node.base_state, node.flags = cpus, mem, base, flags
            changed.append(node)
    if changed:
        rows.update_rows(changed, ["alloc_cpus", "alloc_mem", "base_state", "flags", "last_busy"])
        publish.console_changed("nodes")


def _holding_allocs(names: Iterable[str] | None) -> list[tuple[dict[str, list[int]], str]]:
    """(alloc, state) of the jobs holding nodes: every one, or (``names``) at least those
    holding one of these nodes, read without the others' allocations.

    A job holds the nodes of its ``node_list`` and its batch host is the first of them
    (``start_jobs``), so a job on one node holds its batch host only: the others are
    the jobs on several nodes (``node_list`` is not the batch host) and those whose
    batch host is one of ``names``.  A holding job without a batch host (none is written
    so) is read too, whatever it holds."""
    # Plain SQL: the ORM compiled this query at every completion batch and every pass, at
    # several times the cost of running it (node_list and batch_host are never NULL).
    holding = [s.value for s in HOLDING_JOB_STATES]
    state, host, node_list = (rows.column(Job, f) for f in ("state", "batch_host", "node_list"))
    where = f"{state} IN ({', '.join(['%s'] * len(holding))})"
    params: list[Any] = list(holding)
    if names is not None:
        names = sorted(names)
        hosts = f"{host} IN ({', '.join(['%s'] * len(names))}) OR " if names else ""
        where += f" AND ({hosts}{host} = %s OR {node_list} <> {host})"
        params += [*names, ""]
    return rows.select_sql(Job, ("alloc", "state"), where, params)  # type: ignore[return-value]


def set_node_state(
    node: Node,
    *,
    base: NodeBase | None = None,
    add: NodeFlag = NodeFlag.NONE,
    remove: NodeFlag = NodeFlag.NONE,
    reason: str | None = None,
    user: str = "",
    now: datetime,
    detail: dict[str, Any] | None = None,
) -> None:
    """Move a locked node row (saved by the caller): its base state, flags added and
    removed, and its reason with who gave it and when; the event if what shows changed."""
    event = move_node(
        node, base=base, add=add, remove=remove, reason=reason, user=user, now=now, detail=detail
    )
    if event is not None:
        Event.objects.create(**event)


def move_node(
    node: Node,
    *,
    base: NodeBase | None = None,
    add: NodeFlag = NodeFlag.NONE,
    remove: NodeFlag = NodeFlag.NONE,
    reason: str | None = None,
    user: str = "",
    now: datetime,
    detail: dict[str, Any] | None = None,
) -> dict[str, Any] | None:
    """``set_node_state`` without writing the event: its row (``rows.insert_values(Event,
    ...)``) when what shows changed, else None; for a caller writing many nodes together."""
    old = node.state
    if base is not None:
        node.base_state = base
    node.flags = (node.flags | add) & ~remove
    if reason is not None:
        node.reason = reason
        node.reason_user = user if reason else ""
        node.reason_time = now if reason else None
    if node.state == old:
        return None
    return node_transition_row(node, old, now=now, user=user, detail=detail)


def sync_node_flag(
    flag: NodeFlag, wanted: Iterable[str], *, now: datetime, bases: Iterable[NodeBase] | None = None
) -> list[str]:
    """Set ``flag`` on the ``wanted`` nodes (those whose base state is one of ``bases``,
    when given) and clear it everywhere else: a flag derived from something else, such
    as a maintenance reservation (MAINTENANCE) or backfill's plan (PLANNED). Only the
    nodes that change are locked (by name) and written; returns their names.

    A few statements whatever the number of nodes: the nodes read, those that change
    locked, their flags written in one statement and their events inserted together.
    The write goes around django-auditlog: the flag is the system's, not a person's
    change (Slurm records no event when backfill plans a node or a maintenance
    reservation covers it); the node's history (Event) still shows the state it took."""
    wanted = set(wanted)
    allowed = None if bases is None else {NodeBase(b).value for b in bases}
    changing = [
        name
        for name, base, flags in rows.select(Node, ("name", "base_state", "flags"))
        if bool(flags & flag) != (name in wanted and (allowed is None or base in allowed))
    ]
    if not changing:
        return []
    fields = ("name", "base_state", "flags", "reason")
    changed: list[Node] = []
    events = []
    for node in rows.load(Node, fields, {"name": sorted(changing)}, order_by=("name",), for_update=True):
        on = node.name in wanted and (allowed is None or node.base_state in allowed)
        if bool(node.flags & flag) == on:
            continue  # changed since it was read
        old = node.state
        node.flags = (node.flags | flag) if on else (node.flags & ~flag)
        if node.state != old:
            events.append(node_transition_row(node, old, now=now))
        changed.append(node)
    if not changed:
        return []
    rows.update_rows(changed, ["flags"])
    rows.insert_values(Event, events)
    publish.console_changed("nodes")
    return [node.name for node in changed]


def configured_state(node: Node, conf_state: str, *, now: datetime) -> None:
    """The state a node takes from its ``State=`` (slurm.conf, or ``scontrol create``): set
    on the row, unsaved. A node that was running jobs keeps IDLE/MIXED/ALLOCATED."""
    flags = node.flags & ~(NodeFlag.CLOUD)
    if conf_state == "FUTURE":
        node.base_state = NodeBase.FUTURE
    elif conf_state == "DOWN":
        node.base_state = NodeBase.DOWN
        node.reason = node.reason or "Configured DOWN"
        node.reason_time = node.reason_time or now
    elif conf_state == "CLOUD":
        node.base_state = NodeBase.IDLE
        flags |= NodeFlag.CLOUD | NodeFlag.POWERED_DOWN
    elif node.base_state not in (NodeBase.IDLE, NodeBase.MIXED, NodeBase.ALLOCATED):
        node.base_state = NodeBase.UNKNOWN
    node.flags = flags


def record_node_transition(
    node: Node, old: str, *, now: datetime, user: str = "", detail: dict[str, Any] | None = None
) -> None:
    """One row of the node's history when its shown state changed (the console's
    timeline and the power reports read these)."""
    if node.state != old:
        Event.objects.create(
            time=now,
            kind=Event.Kind.NODE,
            node=node.name,
            old_state=old,
            new_state=node.state,
            reason=node.reason,
            user=user,
            detail=detail or {},
        )


def node_transition_row(
    node: Node, old: str, *, now: datetime, user: str = "", detail: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One row of a node's history, for ``rows.insert_values(Event, ...)``."""
    return {
        "time": now,
        "kind": Event.Kind.NODE,
        "node": node.name,
        "old_state": old,
        "new_state": node.state,
        "reason": node.reason,
        "user": user,
        "detail": detail or {},
    }


def fail_jobs_on(node_name: str, *, now: datetime, why: str) -> list[int]:
    """Jobs holding a node that failed: requeued when allowed, else NODE_FAIL."""
    return fail_jobs_on_nodes([node_name], now=now, why=why)


def fail_jobs_on_nodes(node_names: Sequence[str], *, now: datetime, why: str) -> list[int]:
    """``fail_jobs_on`` for each node in turn, the holding jobs read once (a cluster's
    agents all lost at once: each node read every holding job)."""
    failed = set(node_names)
    holding = {s.value for s in HOLDING_JOB_STATES}
    jobs = [
        job
        for job in Job.objects.select_for_update().filter(state__in=holding)
        if not failed.isdisjoint(job.alloc)
    ]
    out = []
    for name in node_names:
        # A job failed for an earlier node is no longer holding (fail_job moved it).
        for job in jobs:
            if job.state in holding and name in job.alloc:
                fail_job(job, now=now, why=why, node=name)
                out.append(job.id)
    return out


def fail_job(job: Job, *, now: datetime, why: str, node: str = "") -> None:
    """One job lost to a node failure: requeued when allowed, else NODE_FAIL.

    A job already being ended (cancelled, timed out) simply takes that end.
    """
    old = job.state
    if job.batch_host and job.batch_host != node:
        # The batch script may still run on a healthy node: stop it there.
        publish.to_agent(job.batch_host, Cancel(job_id=job.id, kill_wait=0).to_wire())
    if job.final_state and job.final_state != JobState.REQUEUED:
        end_job(job, JobState(job.final_state), now=now, why=why, node=node)
    elif job.requeue:
        requeue_now(job, now=now, ended_by=JobState.NODE_FAIL)
        record_transition(job, old, now=now, why=why, node=node)
        publish.console_changed("jobs")
    else:
        end_job(job, JobState.NODE_FAIL, now=now, why=why, reason=Reason.NODE_FAIL, node=node)


def _cpus_per_node(job: Job) -> list[int]:
    """The job's CPUs on each node, in its node list's order (a one-node job's at once)."""
    if len(job.alloc) <= 1:
        return [int(v[0]) for v in job.alloc.values()]
    order = expand(job.node_list, limit=len(job.alloc)) if job.node_list else sorted(job.alloc)
    return [int(job.alloc[n][0]) for n in order if n in job.alloc]


def _expected_end(job: Job) -> int | None:
    """The end the job's credential names (SLURM_JOB_END_TIME): its start and time limit, a
    year past the start without a limit, as slurmctld sets an INFINITE job's end_time."""
    if job.start_time is None:
        return None
    limit = timedelta(minutes=job.time_limit) if job.time_limit else timedelta(days=365)
    return int((job.start_time + limit).timestamp())


def launch_payload(
    job: Job, credential: str | None = None, added: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The launch message, with the job's credential (minted here when not given) and
    what the extensions add to it (``extensions.launch_fields``, asked here when not given)."""
    if credential is None:
        credential = job_credentials.mint(job)
    cpus, mem = job.alloc.get(job.batch_host, [job.cpus_per_task, 0])[:2]
    if added is None:
        added = extensions.launch_fields([job])[job.id]
    launch = LaunchJob(
        job_id=job.id,
        run=job.restart_count,
        name=job.name,
        user=job.user,
        script=job.script,
        argv=job.argv,
        work_dir=job.work_dir,
        std_out=job.std_out or None,
        std_err=job.std_err or None,
        std_in=job.std_in or None,
        environment=job.environment,
        batch_host=job.batch_host,
        node_list=job.node_list,
        num_nodes=len(job.alloc) or job.min_nodes,
        cpus_on_node=cpus,
        partition=job.partition,
        account=job.account,
        qos=job.qos,
        array_job_id=job.array_job_id,
        array_task_id=job.array_task_id,
        time_limit=job.time_limit,
        mem_on_node=mem,
        open_mode=job.open_mode or None,
        signal=job.signal or None,
        ntasks_per_node=job.ntasks_per_node,
        get_user_env=job.get_user_env or None,
        gres=launch_gres(
            (job.gres_alloc or {}).get(job.batch_host, []),
            per_node=job.gres,
            per_job=job.tres_per_job,
            per_task=job.tres_per_task,
            cpus_per_gpu=job.cpus_per_gpu,
        ),
        allocation=not job.batch,
        credential=credential,
        cpus_per_node=_cpus_per_node(job),
        mem_per_node=None if job.mem_per_cpu else job.mem_per_node or None,
        mem_per_cpu=job.mem_per_cpu or None,
        licenses=job.licenses or None,
        reservation=job.reservation or None,
        start_time=int(job.start_time.timestamp()) if job.start_time else None,
        end_time=_expected_end(job),
        **added,
    )
    # Launch.of(launch).to_wire(), without walking the job's wire form (its environment, a
    # hundred strings and more) a second time: it is plain already.  A pass of thousands of
    # starts builds one per start.
    return {"type": Launch.TYPE, "job": launch.to_wire()}
