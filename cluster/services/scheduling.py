"""The scheduler pass and the node health pass, as services the cycles call.

A pass: read a snapshot from the ORM → the pure core decides → apply every decision in one
transaction → publish on commit.  The core never sees the ORM; this module never decides.
"""

from __future__ import annotations

import contextlib
import gc
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from ClusterShell.NodeSet import NodeSet
from django.db import transaction

from cluster import clock, extensions, job_mail, publish
from cluster.core import dependencies, scheduler, states
from cluster.core.states import HOLDING_JOB_STATES, JobState, NodeBase, NodeFlag
from cluster.extensions import Allocation, PassContext
from cluster.models import ClusterConfig, Event, Job, Node
from cluster.services import pass_snapshot, rows, scheduler_params, snapshot_rows
from cluster.services.agents import PING_INTERVAL
from cluster.services.dependencies import policy as dependency_policy
from cluster.services.dependencies import read_facts as read_depend_facts
from cluster.services.nodes import NOT_RESPONDING_REASON
from cluster.services.state import (
    Placement,
    end_job,
    fail_jobs_on_nodes,
    move_node,
    record_transition,
    refresh_usage,
    start_jobs,
    sync_node_flag,
    terminate_running,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PassSummary:
    pending: int
    started: int  # decided by the core
    timeouts: int
    written: int = 0  # of those, started in the database
    backfilled: int = 0  # of those written, started by backfill ahead of their turn
    bf_tested: int = 0  # jobs backfill tried to place (sdiag's "try sched" depth)
    untried: int = 0  # jobs the main loop left for the next pass: its max_sched_time was spent


def _epoch(dt: datetime | None) -> float | None:
    return dt.timestamp() if dt else None


def build_snapshot(
    now: datetime, *, backfill: bool = True, queue_depth: int | None = None
) -> tuple[scheduler.Snapshot, list[str]]:
    """The core's view of the cluster, and the node names in the order of its indices.

    Read with plain statements (cluster.services.rows): event-driven passes run many
    times a second under a stream of submissions, and the ORM's query compiler and model
    instances cost several times the statements."""
    # The nodes, partitions, holding jobs and the queue: kept between passes where that is
    # exact (cluster.services.pass_snapshot), read whole otherwise.  With queue_depth
    # (Slurm's default_queue_depth) an event-driven pass looks at the head of each
    # partition's queue; the periodic full pass and backfill see every job not held.
    kept = pass_snapshot.resources(queue=True, queue_depth=queue_depth)
    names, partitions = kept.names, kept.partitions
    pending = kept.pending
    if pending is None:
        pending = snapshot_rows.read_queue(list(partitions), queue_depth)
    waiting_on: dict[int, dependencies.Dependency] = {}
    singles: list[tuple[str, str]] = []
    for job in pending:
        if job.dependency is not None:
            waiting_on[job.job_id] = job.dependency
            if job.dependency.has_singleton():
                singles.append((job.user, job.name))
    snap = scheduler.Snapshot(
        now=now.timestamp(),
        nodes=kept.nodes,
        partitions=partitions,
        pending=pending,
        running=kept.running,
        config=scheduler_params.pass_config(backfill=backfill),
        # One read for every dependency of the pass, none when no job has one.
        depend_facts=read_depend_facts(waiting_on, singles) if waiting_on else None,
        running_since=pass_snapshot.running_change(kept.running),
    )
    return snap, names


def pass_context(now: datetime, *, backfill: bool = False) -> PassContext:
    """A pass's context with every extension's plugins, in the settings' order."""
    ctx = PassContext(now=now, cfg=scheduler_params.config(), backfill=backfill)
    active = extensions.active()
    for ext in active:
        ext.prepare_pass(ctx)
    for ext in active:
        ctx.plugins.extend(ext.pass_plugins(ctx))
    return ctx


def decide(
    now: datetime, *, backfill: bool = True, queue_depth: int | None = None
) -> tuple[scheduler.Snapshot, list[str], PassContext, scheduler.PassResult]:
    """What a pass would do now, read and computed outside any write transaction; nothing
    is written (``schedule_pass`` applies it; the explainer reads backfill's plan)."""
    snap, names = build_snapshot(now, backfill=backfill, queue_depth=queue_depth)
    active = extensions.active()
    ctx = pass_context(now, backfill=backfill)
    for ext in active:
        snap = ext.adjust_snapshot(ctx, snap)
    priority: dict = {}
    for ext in active:
        priority.update(ext.pass_priority(ctx, snap))
    node_key = extensions.node_order_key() or scheduler.node_order_key
    with _collector_off():
        # The main loop's budget by the controller's clock: the wall clock live, the
        # simulator's virtual one (still while a pass runs: the budget never runs out).
        result = scheduler.schedule(snap, ctx.plugins, node_key=node_key, clock=clock.timestamp, **priority)
    return snap, names, ctx, result


@contextlib.contextmanager
def _collector_off() -> Iterator[None]:
    """The pass allocates a great many small objects and frees none until it ends, so the
    cyclic collector would run again and again over a heap it cannot shrink (the 20,000
    job snapshot, the limits' and HRES' state; the rows, events and launches of thousands
    of starts: a fifth of such a pass, bench/pass_service.py --starts): off meanwhile
    (bench/combined_pass.py)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def schedule_pass(
    *, now: datetime | None = None, backfill: bool = True, queue_depth: int | None = None
) -> PassSummary:
    """One scheduler pass.  The caller holds the pass lock (cluster.cycles).

    The snapshot is read and the core decides *outside* the write transaction, so agents'
    completions and API submissions are not held up by the computation (on SQLite a write
    transaction locks the whole database).  That is safe because only a pass allocates:
    what others write meanwhile can only free resources (completions, cancels) or add
    jobs the next pass will see; the apply step re-checks that each started job is still
    PENDING and its nodes still usable.

    As in Slurm, passes triggered by events (a submission, a completion) are quick main
    scheduler passes; backfill, which plans ahead for the whole queue, runs on its own
    interval (``backfill=True``).
    """
    now = now or clock.now()
    if queue_depth is None:
        _end_held_past_deadline(now)
    snap, names, ctx, result = decide(now, backfill=backfill, queue_depth=queue_depth)
    active = extensions.active()
    with _collector_off(), transaction.atomic():
        written = _apply(result, names, ctx)
        for ext in active:
            ext.after_apply(ctx, result)
    ahead = {s.job_id for s in result.starts if s.backfill}
    return PassSummary(
        pending=len(snap.pending),
        started=len(result.starts),
        timeouts=len(result.timeouts),
        written=len(written),
        backfilled=len(ahead & written),
        bf_tested=result.stats.bf_tested,
        untried=result.stats.untried,
    )


def _apply(result: scheduler.PassResult, names: list[str], ctx: PassContext) -> set[int]:
    """Write the pass's decisions; the jobs it really started (a start whose job or nodes
    changed since the snapshot, or an extension dropped, is left for a later pass)."""
    now = ctx.now
    written: set[int] = set()
    if result.dependencies:
        # First: a job the pass starts is still PENDING here, and starts with none.
        _update_dependencies(result.dependencies, now)
    if result.starts:
        started = {s.job_id: s for s in result.starts}
        wanted = {names[i] for s in result.starts for i in s.node_indices}
        usable = {
            name
            for name, base, flags in rows.select(
                Node, ("name", "base_state", "flags"), {"name": list(wanted)}
            )
            if states.is_usable(base, flags)
        }
        # Locked as they are read, in id order: a cancel or a hold that lands between the
        # snapshot and here is seen (PostgreSQL re-checks a row it waited for), and that
        # job's start is dropped for the next pass to redo.
        still = {"pk": list(started), "state": JobState.PENDING, "hold": ""}
        locked = [
            job
            for job in rows.load(Job, None, still, order_by=("id",), for_update=True)
            if all(names[i] in usable for i in started[job.id].node_indices)
        ]
        allocation = Allocation({job.id: [names[i] for i in started[job.id].node_indices] for job in locked})
        for ext in extensions.active():
            ext.jobs_allocated(ctx, allocation)
        starting = [
            (job, _placement(started[job.id], allocation, job.id))
            for job in locked
            if job.id not in allocation.dropped
        ]
        start_jobs(starting, now=now)
        written = {job.id for job, _ in starting}
    if result.pending:
        _update_pending(result.pending)
    if result.expired:
        _end_expired(result.expired, now)
    if dependency_policy(ctx.cfg).kill_invalid_depend:
        _kill_invalid_dependents(result.pending, now)
    if ctx.backfill:
        _mark_planned(result.pending, names, now)
    for timeout in result.timeouts:
        job = Job.objects.select_for_update().filter(pk=timeout.job_id).first()
        if job is None or job.state not in HOLDING_JOB_STATES or job.final_state:
            continue
        terminate_running(job, final_state=JobState.TIMEOUT, now=now)
        record_transition(job, job.state, now=now, why="time limit reached")
    if result.starts or result.timeouts:
        publish.console_changed("jobs")
    return written


def _mark_planned(pending: tuple[scheduler.Pending, ...], names: list[str], now: datetime) -> None:
    """As Slurm's backfill does each cycle: the idle and mixed nodes it plans for pending
    jobs are PLANNED (sinfo's ``plnd``, ``mix-``) until the next backfill pass, which
    plans afresh; an allocated node does not show it."""
    planned = {names[i] for p in pending if p.start_time is not None for i in p.sched_nodes}
    sync_node_flag(NodeFlag.PLANNED, planned, now=now, bases=(NodeBase.IDLE, NodeBase.MIXED))


def _placement(start: scheduler.Start, allocation: Allocation, job_id: int) -> Placement:
    return Placement(
        hosts=allocation.nodes[job_id],
        cpus_per_node=start.cpus_per_node,
        mem_per_node=start.mem_per_node,
        time_limit=start.time_limit,
        priority=start.priority,
        licenses=allocation.licenses_alloc(job_id),
        gres_alloc=allocation.gres.get(job_id, {}),
        # Given powered-down nodes, it waits for them, CONFIGURING.
        configuring=job_id in allocation.waiting,
        backfill=start.backfill,
    )


def _update_pending(pending: tuple[scheduler.Pending, ...]) -> None:
    """Write only the reasons and priorities that changed: most passes change none."""
    wanted = {p.job_id: p for p in pending}
    current = pass_snapshot.stored_reasons(list(wanted))
    changed = []
    invalid = []
    for job_id, (reason, detail, priority) in current.items():
        p = wanted[job_id]
        if (reason, detail, priority) != (p.reason, p.detail, p.priority):
            changed.append((job_id, p.reason, p.detail, p.priority))
            if p.reason == states.Reason.DEPENDENCY_NEVER_SATISFIED != reason:
                invalid.append(job_id)
    if changed:
        # Only where the job is still waiting as the snapshot saw it: a hold or a cancel
        # since then keeps the reason and priority it set (JobHeldUser, 0).
        still = {"state": JobState.PENDING, "hold": ""}
        rows.update_values(Job, ["reason", "reason_detail", "priority"], changed, only_if=still)
        publish.console_changed("jobs")
    if invalid:
        # --mail-type=INVALID_DEPEND: once, when the dependency is found never satisfiable.
        for job in Job.objects.filter(pk__in=invalid).exclude(mail_type=""):
            job_mail.invalid_dependency(job)


def _update_dependencies(changed: dict[int, str], now: datetime) -> None:
    """Store the terms the pass saw fulfilled or failed (a fulfilled term is dropped, as
    Slurm drops it), for the jobs still PENDING; a job started keeps none.  A job whose
    dependency is satisfied becomes eligible now (EligibleTime=, AccrueTime=), as Slurm's
    job_independent() sets its begin time, unless --begin set one."""
    rows.update_values(Job, ["dependency"], changed.items(), only_if={"state": JobState.PENDING})
    satisfied = [job_id for job_id, text in changed.items() if not text]
    if satisfied:
        waiting = Job.objects.filter(pk__in=satisfied, state=JobState.PENDING, eligible_time=None)
        waiting.update(eligible_time=now)


def _end_expired(expired: tuple[int, ...], now: datetime) -> None:
    """sbatch --deadline: the jobs the pass found unable to end in time end DEADLINE (Slurm's
    FAIL_DEADLINE), if they are still pending."""
    still = {"pk": list(expired), "state": JobState.PENDING}
    for job in rows.load(Job, None, still, order_by=("id",), for_update=True):
        end_job(job, JobState.DEADLINE, now=now, why="deadline", reason=states.Reason.DEADLINE)


def _end_held_past_deadline(now: datetime) -> None:
    """The held jobs, which no pass reads, end DEADLINE too once they cannot end in time
    (the same rule, ``scheduler.missed_deadline``); looked at by the periodic full passes
    only, never by the quick ones a submission or a completion asks for."""
    t = now.timestamp()
    where = {"state": JobState.PENDING, "deadline": rows.Not(None), "hold": rows.Not("")}
    held = rows.select(Job, ("id", "deadline", "time_min", "time_limit"), where)
    late = [
        job_id
        for job_id, deadline, time_min, limit in held
        if scheduler.missed_deadline(t, deadline.timestamp(), time_min, limit)
    ]
    if late:
        with transaction.atomic():
            _end_expired(tuple(late), now)


def _kill_invalid_dependents(pending: tuple[scheduler.Pending, ...], now: datetime) -> None:
    """DependencyParameters=kill_invalid_depend: a job whose dependency can never be
    satisfied is cancelled, keeping its reason DependencyNeverSatisfied (Slurm's
    _kill_dependent)."""
    never = [p.job_id for p in pending if p.reason == states.Reason.DEPENDENCY_NEVER_SATISFIED]
    if not never:
        return
    still = {"pk": never, "state": JobState.PENDING}
    for job in rows.load(Job, None, still, order_by=("id",), for_update=True):
        end_job(
            job,
            JobState.CANCELLED,
            now=now,
            why="dependency never satisfied",
            reason=states.Reason.DEPENDENCY_NEVER_SATISFIED,
            user="slurm",
        )


ALWAYS_HEARD = datetime.min.replace(tzinfo=UTC)


def health_pass(
    *,
    now: datetime | None = None,
    heard_since: datetime | None = ALWAYS_HEARD,
    received: Mapping[str, datetime] | None = None,
) -> list[str]:
    """Nodes not heard from: NOT_RESPONDING, then DOWN after SlurmdTimeout with their jobs failed.

    ``heard_since``: since when a server process has listened to the agents without a
    break (cluster.liveness). Silence counts from then at the earliest, and with None
    (nobody listens) no node is judged: the controller's outage is not the nodes'.
    ``received``: when this process last read a message from a node's agent
    (cluster.liveness.last_received), which counts though it is not handled yet.

    Also re-sends the cancel of jobs that outlived KillWait (an agent that missed it).
    """
    now = now or clock.now()
    if heard_since is None:
        return []
    cfg = ClusterConfig.current()
    timeout = cfg.option_int("SlurmdTimeout", 300)
    downed: list[Node] = []
    silent: list[Node] = []
    events: list[dict] = []
    with transaction.atomic():
        limit = now - timedelta(seconds=timeout)
        stale = (
            Node.objects.select_for_update()
            .exclude(base_state__in=[NodeBase.DOWN, NodeBase.FUTURE])
            .order_by("name")
        )
        for node in stale:
            if node.flags & (NodeFlag.POWERED_DOWN | NodeFlag.POWERING_UP | NodeFlag.POWERING_DOWN):
                continue
            seen = node.last_contact or cfg.loaded_at
            read = received.get(node.name) if received else None
            if read is not None and (seen is None or read > seen):
                seen = read
            if seen is None:
                continue
            seen = max(seen, heard_since)
            if seen > limit:
                # Silent for three heartbeats (a hung agent keeps its socket open): "*" first.
                if (
                    seen < now - timedelta(seconds=3 * PING_INTERVAL)
                    and not node.flags & NodeFlag.NOT_RESPONDING
                ):
                    event = move_node(node, add=NodeFlag.NOT_RESPONDING, now=now)
                    events += [event] if event is not None else []
                    silent.append(node)
                continue
            event = move_node(
                node,
                base=NodeBase.DOWN,
                add=NodeFlag.NOT_RESPONDING,
                reason=NOT_RESPONDING_REASON,
                user="slurm",
                now=now,
            )
            events += [event] if event is not None else []
            downed.append(node)
        # Written together, without audit entries (the system's verdict, not a person's
        # change; the node events keep the history): every agent of a large cluster lost
        # at once took one statement and one audit entry a node.
        rows.update_rows(silent, ["flags"])
        rows.update_rows(downed, ["base_state", "flags", "reason", "reason_user", "reason_time"])
        rows.insert_values(Event, events)
        fail_jobs_on_nodes([node.name for node in downed], now=now, why="node not responding")
        if downed:
            refresh_usage()
        if downed:
            publish.console_changed("nodes", "jobs")
        elif silent:
            publish.console_changed("nodes")
    return [node.name for node in downed]


def estimate_start(common: dict, *, now: datetime) -> tuple[datetime | None, str, int]:
    """Where and when a job described by validated submit fields would start (sbatch --test-only).

    Runs the core on the current snapshot with this job alone in the queue: it starts now, or
    at the latest expected end of the running jobs in its partition (an upper bound).
    """
    snap, names = build_snapshot(now)
    probe = scheduler.JobView(
        job_id=0,
        partition=common["partition"],
        user=common["user"],
        submit_time=now.timestamp(),
        min_nodes=common["min_nodes"],
        max_nodes=common["max_nodes"],
        num_tasks=common["num_tasks"],
        cpus_per_task=common["cpus_per_task"],
        mem_per_node=common["mem_per_node"],
        time_limit=common["time_limit"],
        req_nodes=frozenset(NodeSet(common["req_nodes"])) if common["req_nodes"] else frozenset(),
        exc_nodes=frozenset(NodeSet(common["exc_nodes"])) if common["exc_nodes"] else frozenset(),
        exclusive=bool(common.get("exclusive")),
    )
    alone = scheduler.Snapshot(
        now=snap.now, nodes=snap.nodes, partitions=snap.partitions, pending=(probe,), running=snap.running
    )
    result = scheduler.schedule(alone, pass_context(now).plugins)
    cpus = probe.num_tasks * probe.cpus_per_task
    if result.starts:
        start = result.starts[0]
        return now, str(NodeSet.fromlist([names[i] for i in start.node_indices])), cpus
    ends = [
        j.start_time + j.time_limit * 60
        for j in snap.running
        if j.partition == probe.partition and j.start_time and j.time_limit
    ]
    if ends:
        return datetime.fromtimestamp(max(ends), UTC), "", cpus
    return None, "", cpus
