"""What node agents tell the controller: registration, heartbeats, job starts and ends.

Each function is idempotent: agents resend after reconnecting, and a message seen twice
must change nothing the second time (a completion is recorded exactly once).

A connection speaks only for the nodes it registered (cluster/consumers.py filters every
message by them); a node is registered by one live agent at a time (:func:`held_elsewhere`).
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from cluster import clock, extensions, publish, triggers
from cluster.core.states import HOLDING_JOB_STATES, JobState, NodeBase, NodeFlag, Reason
from cluster.models import ClusterConfig, Event, Job, Node
from cluster.services import launch_watch, rows
from cluster.services.dynamic_nodes import register_dynamic
from cluster.services.nodes import NOT_RESPONDING_REASON
from cluster.services.prolog_epilog import waits_for_epilog
from cluster.services.reboots import reboot_registration
from cluster.services.state import (
    COMPLETING_FIELDS,
    ENDED_FIELDS,
    alloc_prolog_messages,
    end_job,
    fail_job,
    fail_jobs_on,
    launch_payload,
    mark_completing,
    mark_ended,
    move_node,
    refresh_usage,
    requeue_now,
    set_node_state,
    transition_row,
)

log = logging.getLogger(__name__)

# Cloud accounting fields an agent may report (``fsched agent --instance-id ...``) → Node field.
CLOUD_ACCOUNTING = {"instance_id": "instance_id", "instance_type": "instance_type", "extra": "extra_text"}

PING_INTERVAL = 5  # seconds between agent heartbeats (sent to agents in ``registered``)
HOLDER_SILENCE = timedelta(seconds=3 * PING_INTERVAL)
HELD_ELSEWHERE = "node is served by another agent"
# The holder of a node in these states is gone (disconnected, timed out, powered off).
_HOLDER_GONE = NodeFlag.NOT_RESPONDING | NodeFlag.POWERED_DOWN | NodeFlag.POWERING_UP


@cache
def _node_fields() -> tuple[str, ...]:
    """Every field of a node row but its key (read once the models are loaded)."""
    return tuple(f.name for f in Node._meta.concrete_fields if not f.primary_key)


@cache
def _host_fields() -> tuple[tuple[str, str, int], ...]:
    """(register's key, node field, its length): what the agent reports of its host."""
    pairs = (("arch", "arch"), ("os", "os"), ("version", "slurmd_version"))
    return tuple((key, attr, Node._meta.get_field(attr).max_length) for key, attr in pairs)


def _ts(epoch: float | None) -> datetime | None:
    return datetime.fromtimestamp(epoch, UTC) if epoch else None


@dataclass
class Registration:
    accepted: list[str] = field(default_factory=list)
    rejected: dict[str, str] = field(default_factory=dict)
    kill: list[int] = field(default_factory=list)
    relaunch: list[dict[str, Any]] = field(default_factory=list)
    acked: list[int] = field(default_factory=list)
    at: datetime | None = None  # when: the connection's identity with its agent_id


def single_process() -> bool:
    """Whether every agent connection is in this process (embedded mode's in-memory layer)."""
    backend = settings.CHANNEL_LAYERS.get("default", {}).get("BACKEND", "")
    return backend.endswith("InMemoryChannelLayer")


def held_elsewhere(
    node: Node, agent_id: str, live: dict[str, str], *, one_process: bool, now: datetime | None = None
) -> bool:
    """Whether another agent's live connection serves ``node``.

    A node NOT_RESPONDING (silent for three pings), powered down or powering up has no
    holder worth keeping. Otherwise ``live`` maps the nodes held by connections of this
    process to their agent ids: that is certain. Failing that, the node's ``agent_id``
    (cleared when its connection closes) says who had it: the same agent may always
    have it back (a server restarted under it), another only if, with one server
    process, that holder is not connected to it.
    """
    if node.flags & _HOLDER_GONE:
        return False  # a holder still connected but silent is hung: its node may move on
    holder = live.get(node.name)
    if holder is not None:
        return holder != agent_id
    if not node.agent_id or node.agent_id == agent_id:
        return False
    # Silent for three heartbeats: its holder is gone even if no health pass has run to
    # say so (the passes may be what a Redis or PostgreSQL restart held up).
    if now is not None and node.last_contact is not None and now - node.last_contact > HOLDER_SILENCE:
        return False
    return not one_process


@transaction.atomic
def agent_register(
    *,
    agent_id: str,
    nodes: list[dict[str, Any]],
    running: list[dict[str, Any]],
    completions: list[dict[str, Any]],
    now: datetime | None = None,
    live: dict[str, str] | None = None,
    one_process: bool | None = None,
) -> Registration:
    """``live``: node -> agent id of the connections of this process that hold one."""
    now = now or clock.now()
    result = Registration(at=now)
    live = live or {}
    one_process = single_process() if one_process is None else one_process
    cfg = ClusterConfig.current()
    return_to_service = cfg.option_int("ReturnToService", 0)
    names = [n.get("name", "") for n in nodes]
    known = {n.name: n for n in Node.objects.select_for_update().filter(name__in=names).order_by("name")}
    # The nodes' rows and events are written together after the loop: a registration of
    # a thousand nodes is a few statements, not several a node (1,000 nodes took 5 s).
    written: list[Node] = []
    events: list[dict[str, Any]] = []
    for info in nodes:
        name = info.get("name", "")
        node = known.get(name)
        if node is None and info.get("conf"):
            # slurmd -Z: a node slurm.conf does not list may join with a dynamic configuration.
            node = register_dynamic(name, str(info["conf"]), agent_id=agent_id, now=now)
        if node is None:
            result.rejected[name] = "node not in the configuration"
            log.error("agent %s registered unknown node %r: refused", agent_id, name)
            continue
        if NodeBase(node.base_state) == NodeBase.FUTURE:
            result.rejected[name] = "node is in state FUTURE"
            continue
        if held_elsewhere(node, agent_id, live, one_process=one_process, now=now):
            # Never a takeover: the holder keeps its jobs, this agent gets no launch payload.
            result.rejected[name] = HELD_ELSEWHERE
            log.warning(
                "agent %s registered %s, which agent %s serves: refused", agent_id, name, node.agent_id
            )
            continue
        # Called before the new boot time is stored (power saving judges a registration
        # against the previous one).
        invalid = [why for ext in extensions.active() for why in ext.node_reported(node, info, now=now)]
        if invalid and node.flags & NodeFlag.POWERING_UP and not node.flags & NodeFlag.INVALID_REG:
            # Slurm kills the jobs of a node that was powering up when its registration is
            # invalid: before the power up ends, so that none of them is launched there.
            fail_jobs_on(node.name, now=now, why=", ".join(invalid))
        for ext in extensions.active():
            ext.node_registering(node, boot_time=info.get("boot_time"), now=now)
        node.agent_id = agent_id
        node.reported_cpus = info.get("cpus")
        node.reported_memory = info.get("real_memory")
        for key, attr, length in _host_fields():
            if isinstance(value := info.get(key), str):
                setattr(node, attr, value[:length])
        node.boot_time = _ts(info.get("boot_time"))
        for key, attr in CLOUD_ACCOUNTING.items():
            if info.get(key) is not None:
                setattr(node, attr, str(info[key]))
        node.slurmd_start_time = now
        node.last_contact = now
        # Back from scontrol reboot (judged on the new boot time, stored above).
        reboot_registration(node, boot_time=info.get("boot_time"), now=now)
        remove = NodeFlag.NOT_RESPONDING
        base = None
        reason = None
        written.append(node)
        if invalid:
            _invalid_registration(node, ", ".join(invalid), now=now)
            result.accepted.append(name)
            continue
        remove |= NodeFlag.INVALID_REG  # a valid registration clears it (the DRAIN stays)
        if NodeBase(node.base_state) == NodeBase.UNKNOWN:
            base = NodeBase.IDLE
        elif (
            NodeBase(node.base_state) == NodeBase.DOWN
            and node.reason == NOT_RESPONDING_REASON
            and (return_to_service >= 1)
        ):
            base = NodeBase.IDLE
            reason = ""
        event = move_node(node, base=base, remove=remove, reason=reason, now=now)
        if event is not None:
            events.append(event)
        result.accepted.append(name)
    # As save() would (every field), without its audit entry: a registration is the
    # agent's report, not a person's change; the node's history (Event) shows what it did.
    rows.update_rows(written, _node_fields())
    rows.insert_values(Event, events)

    accepted = set(result.accepted)
    # Jobs the agent still runs: keep those the controller agrees are running there.
    reported: set[int] = set()
    for item in running:
        if item.get("node") not in accepted:
            continue  # not this agent's to keep or to kill: its node was refused
        job = Job.objects.filter(pk=item.get("job_id")).first()
        if (
            job is None
            or job.state not in HOLDING_JOB_STATES
            or job.batch_host != item.get("node")
            or job.restart_count != item.get("run", job.restart_count)
        ):
            result.kill.append(int(item.get("job_id")))
            continue
        reported.add(job.id)
        if not job.launched:
            job.launched = True
            job.save(update_fields=["launched"])
    # Together, as a batch of live completions: an agent back after a long outage restates
    # thousands, and one by one each re-read every holding job's allocation (the 10,000-node
    # bench's controller stalled minutes in one registration, the write lock held).
    # Completions of a refused node are kept by the agent (not acked) until it is accepted.
    mine = [c for c in completions if c.get("node") in accepted]
    if mine:
        _complete_many(mine, now=now)
    result.acked.extend(int(c["job_id"]) for c in mine)
    done = set(result.acked)
    # Jobs the controller believes run on these nodes but the agent does not have.
    for job in Job.objects.select_for_update().filter(
        state__in=[s.value for s in HOLDING_JOB_STATES], batch_host__in=accepted
    ):
        if job.id in reported or job.id in done:
            continue
        if not job.launched and job.state != JobState.CONFIGURING:
            result.relaunch.append(launch_payload(job))
            continue
        if job.launched:
            log.warning("job %s: agent %s lost it on %s", job.id, agent_id, job.batch_host)
            fail_job(job, now=now, why="lost by agent", node=job.batch_host)
    # PrologFlags=Alloc: the allocation Prologs these nodes may have missed (the agent
    # answers one it has run with the same result).
    for job in Job.objects.filter(state=JobState.CONFIGURING):
        pending = [n for n in job.prolog_nodes if n in accepted]
        result.relaunch.extend(payload for _node, payload in alloc_prolog_messages(job, pending))
    refresh_usage(accepted)
    publish.console_changed("nodes", "jobs")
    triggers.schedule_after_commit()
    return result


def _invalid_registration(node: Node, reason: str, *, now: datetime) -> None:
    """A registration that does not match the configuration (Slurm's validate_node_specs):
    the node is INVALID_REG and drained with the reasons, unless it is already DOWN or
    drained (a node that was powering up has lost its jobs already)."""
    if not node.flags & NodeFlag.INVALID_REG:
        log.error("Setting node %s state to INVAL with reason:%s", node.name, reason)
    add = NodeFlag.INVALID_REG
    drain_reason = None
    if NodeBase(node.base_state) != NodeBase.DOWN and not node.flags & NodeFlag.DRAIN:
        add |= NodeFlag.DRAIN
        drain_reason = reason
    # The node answers: it leaves UNKNOWN and NOT_RESPONDING as any registered node does.
    base = NodeBase.IDLE if NodeBase(node.base_state) == NodeBase.UNKNOWN else None
    set_node_state(node, base=base, add=add, remove=NodeFlag.NOT_RESPONDING, reason=drain_reason,
                   user="slurm", now=now)  # fmt: skip


def agent_ping(
    *,
    nodes: list[str],
    load: dict[str, dict[str, Any]] | None = None,
    now: datetime | None = None,
    jobs: Collection[int] | None = None,
    in_flight: Collection[int] = (),
    written: Collection[int] | None = None,
) -> list[int]:
    """A heartbeat: the nodes are alive (a node marked not responding but not yet DOWN
    recovers), and their launches past BatchStartTimeout that the agent does not hold
    (``jobs``, its job list; None from an agent that sends none) are missing
    (launch_watch.missing_at_ping; ``in_flight``: launches sent after the agent wrote
    its list; ``written``: the launches the connection wrote that the list lacks). The
    ids of the jobs failed so."""
    now = now or clock.now()
    load = load or {}
    with transaction.atomic():
        batch = []
        recovered: list[Node] = []
        events: list[dict[str, Any]] = []
        for node in Node.objects.filter(name__in=nodes):
            node.last_contact = now
            info = load.get(node.name) or {}
            node.cpu_load = info.get("cpu_load", node.cpu_load)
            node.free_mem = info.get("free_mem", node.free_mem)
            if node.flags & NodeFlag.NOT_RESPONDING and node.base_state != NodeBase.DOWN:
                event = move_node(node, remove=NodeFlag.NOT_RESPONDING, now=now)
                events += [event] if event is not None else []
                recovered.append(node)
            batch.append(node)
        rows.update_rows(batch, ["last_contact", "cpu_load", "free_mem"])
        if recovered:  # together: an agent's thousand nodes recover in two statements
            rows.update_rows(recovered, ["flags"])
            rows.insert_values(Event, events)
            publish.console_changed("nodes")
        if load:
            extensions.node_heartbeat({n.name: load[n.name] for n in batch if n.name in load}, now=now)
        return launch_watch.missing_at_ping(
            nodes=set(nodes), jobs=jobs, in_flight=in_flight, written=written, now=now
        )


def agent_disconnected(
    *,
    nodes: list[str],
    now: datetime | None = None,
    agent_id: str | None = None,
    registered_at: datetime | None = None,
) -> None:
    """The agent's websocket closed: its nodes stop responding (DOWN later, by the health cycle).

    With ``agent_id`` and ``registered_at`` (the connection's registration), only the
    nodes this connection still holds: a node registered again since, by a newer
    connection, is not that one's to give up.
    """
    now = now or clock.now()
    # The nodes are written together (an agent's thousand nodes: a few statements), without
    # audit entries: the agent's end is the system's news, not a person's change.
    released: list[Node] = []
    silent: list[Node] = []
    events: list[dict[str, Any]] = []
    with transaction.atomic():
        for node in Node.objects.select_for_update().filter(name__in=nodes).order_by("name"):
            if agent_id is not None:
                if node.agent_id != agent_id or (
                    registered_at is not None
                    and node.slurmd_start_time is not None
                    and node.slurmd_start_time > registered_at
                ):
                    continue
                node.agent_id = ""  # its holder is gone: another agent may register it
                released.append(node)
            if node.flags & NodeFlag.NOT_RESPONDING:
                continue
            if node.flags & (NodeFlag.POWERING_DOWN | NodeFlag.POWERED_DOWN | NodeFlag.REBOOT_ISSUED):
                continue  # its agent stopping is the power down or the reboot itself: no NoResp
            event = move_node(node, add=NodeFlag.NOT_RESPONDING, now=now)
            events += [event] if event is not None else []
            silent.append(node)
        rows.update_rows(released, ["agent_id"])
        rows.update_rows(silent, ["flags"])
        rows.insert_values(Event, events)
        publish.console_changed("nodes")


@transaction.atomic
def agent_drain(
    *, nodes: list[str], reason: str, agent_id: str = "", now: datetime | None = None
) -> list[str]:
    """An agent cannot keep its nodes' jobs safe (its spool is gone or unwritable): DRAIN
    them with its reason, as ``scontrol update State=DRAIN`` would, so no job is sent
    there. A node already drained keeps its reason (an administrator's, or this one)."""
    now = now or clock.now()
    reason = " ".join(str(reason).split())[:256] or "agent reported a problem"
    drained = []
    for node in Node.objects.select_for_update().filter(name__in=nodes).order_by("name"):
        if node.flags & NodeFlag.DRAIN:
            continue
        set_node_state(node, add=NodeFlag.DRAIN, reason=reason, user="slurm", now=now)
        node.save(update_fields=["flags", "reason", "reason_user", "reason_time"])
        drained.append(node.name)
    if drained:
        log.error("agent %s: drained %s: %s", agent_id, ",".join(drained), reason)
        refresh_usage(drained)
        publish.console_changed("nodes")
        triggers.schedule_after_commit()
    return drained


def jobs_started(*, items: list[dict[str, Any]]) -> None:
    """Several ``started`` messages at once, in one transaction."""
    with transaction.atomic():
        _mark_started(items)


def _mark_started(items: list[dict[str, Any]]) -> None:
    """``launched`` set on each job still held on the node and run its agent names: one
    statement for every item, sent together (psycopg's pipeline on PostgreSQL), where an
    UPDATE per (node, run) was a round trip each."""
    holding = [s.value for s in HOLDING_JOB_STATES]
    q = connection.ops.quote_name
    where = (
        f"{q(Job._meta.pk.column)} = %s AND {rows.column(Job, 'batch_host')} = %s"
        f" AND {rows.column(Job, 'state')} IN ({', '.join(['%s'] * len(holding))})"
    )
    sql = f"UPDATE {rows.table(Job)} SET {rows.column(Job, 'launched')} = %s WHERE {where}"  # noqa: S608
    of_run: list[list[Any]] = []
    any_run: list[list[Any]] = []  # an agent of an earlier release names no run
    for item in items:
        params = [True, int(item["job_id"]), str(item.get("node", "")), *holding]
        run = item.get("run")
        if run is None:
            any_run.append(params)
        else:
            of_run.append([*params, int(run)])
    with connection.cursor() as cursor:
        for statement, params in (
            (sql + f" AND {rows.column(Job, 'restart_count')} = %s", of_run),
            (sql, any_run),
        ):
            if len(params) == 1:
                cursor.execute(statement, params[0])
            elif params:
                cursor.executemany(statement, params)


def job_started(*, job_id: int, node: str, run: int | None = None, now: datetime | None = None) -> None:
    jobs_started(items=[{"job_id": job_id, "node": node, "run": run}])


@transaction.atomic
def job_launch_failed(
    *, job_id: int, node: str, error: str, run: int | None = None, now: datetime | None = None
) -> None:
    """Slurm holds a job whose launch failed (JobLaunchFailure) and drains nothing for a user error."""
    now = now or clock.now()
    job = Job.objects.select_for_update().filter(pk=job_id, batch_host=node).first()
    if job is None or job.state not in HOLDING_JOB_STATES or (run is not None and run != job.restart_count):
        return
    held = job.alloc
    job.reason_detail = error[:512]
    job.exit_code = 1
    end_job(
        job,
        JobState.FAILED,
        now=now,
        why=f"launch failed: {error}",
        reason=Reason.JOB_LAUNCH_FAILURE,
        node=node,
    )
    refresh_usage(held.keys())
    publish.console_changed("jobs")
    triggers.schedule_after_commit()


def completion_state(
    job: Job, exit_code: int, signal: int, ended: datetime | None = None, *, out_of_memory: bool = False
) -> JobState:
    """The state a job's end records: what a kill asked for (``final_state``), unless the
    job ended by itself before the kill was asked (its completion was lost and sent
    again), then what it did. A job its agent found over its memory is OUT_OF_MEMORY."""
    ended_first = not signal and ended is not None and job.kill_requested and ended < job.kill_requested
    if job.final_state and not ended_first:
        return JobState(job.final_state)
    if out_of_memory:
        return JobState.OUT_OF_MEMORY
    if signal or exit_code:
        return JobState.FAILED
    return JobState.COMPLETED


@transaction.atomic
def job_completed(*, completion: dict[str, Any], now: datetime | None = None) -> bool:
    """Record a job's end once.  Returns False when it was already recorded (or stale)."""
    return _complete_many([completion], now=now or clock.now()) == 1


@transaction.atomic
def jobs_completed(*, completions: list[dict[str, Any]], now: datetime | None = None) -> int:
    """Several completions in one transaction (agents batch them under load)."""
    return _complete_many(completions, now=now or clock.now())


def jobs_reported(
    *, started: list[dict[str, Any]], completions: list[dict[str, Any]], now: datetime | None = None
) -> int:
    """What an agent's messages of one batch report: the starts, then the ends, in one
    transaction (each was one of its own). Returns the ends recorded."""
    with transaction.atomic():
        if started:
            _mark_started(started)
        return _complete_many(completions, now=now or clock.now()) if completions else 0


_COMPLETION_FIELDS = (
    "state",
    "partition",
    "batch_host",
    "restart_count",
    "final_state",
    "alloc",
    "exit_code",
    "exit_signal",
    "end_time",
    "reason",
    "start_time",
    "node_list",
    "launched",
    "kill_requested",
    "eligible_time",
    "max_rss_kb",
    "total_cpu_secs",
    "mail_type",
)
# Slurm's SIG_OOM (253) as a wait status: sacct's ExitCode of an OUT_OF_MEMORY job, 0:125.
OOM_EXIT = (0, 125)


def _end_reason(state: JobState, exit_code: int) -> str:
    """The reason an ended job keeps (squeue's and sacct's Reason)."""
    if state == JobState.TIMEOUT:
        return Reason.TIME_LIMIT
    if state == JobState.OUT_OF_MEMORY:
        return Reason.OUT_OF_MEMORY
    return Reason.NON_ZERO_EXIT_CODE if state == JobState.FAILED and exit_code else Reason.NONE


def _complete_many(completions: list[dict[str, Any]], *, now: datetime) -> int:
    by_id = {int(c["job_id"]): c for c in completions}
    # What recording an end reads and writes (and requeue_now, which saves what it read).
    jobs = rows.load(
        Job,
        _COMPLETION_FIELDS,
        {"pk": list(by_id), "state": [s.value for s in HOLDING_JOB_STATES]},
        for_update=True,
    )
    recorded = 0
    freed: dict[str, set[str]] = {}  # node -> partitions of the jobs that ended there
    events = []
    requeued = []
    completing = []  # ended, their Epilog running (cluster/services/prolog_epilog.py)
    epilog = waits_for_epilog() if jobs else False
    for job in jobs:
        c = by_id[job.id]
        if c.get("node") != job.batch_host or ("run" in c and c["run"] != job.restart_count):
            continue  # a late message from an earlier run
        if job.state == JobState.COMPLETING:
            continue  # recorded already (a re-sent completion)
        exit_code = int(c.get("exit_code", 0))
        signal = int(c.get("signal", 0))
        ended = _ts(c.get("end_time"))
        oom = c.get("out_of_memory") is True
        state = completion_state(job, exit_code, signal, ended, out_of_memory=oom)
        _usage(job, c)
        old = job.state
        if epilog and state != JobState.REQUEUED:
            reason = _end_reason(state, exit_code)
            if state == JobState.OUT_OF_MEMORY:
                exit_code, signal = OOM_EXIT
            mark_completing(job, state, now=ended or now, reason=reason, exit_code=exit_code, signal=signal)
            completing.append(job)
            events.append(transition_row(job.id, old, job.state, now=now, node=c.get("node", ""),
                                         detail={"exit_code": exit_code, "signal": signal}))  # fmt: skip
            recorded += 1
            continue
        for name in job.alloc:
            freed.setdefault(name, set()).add(job.partition)
        if state == JobState.REQUEUED:
            job.exit_code, job.exit_signal = exit_code, signal  # kept in the run's batch step
            requeue_now(job, now=now)
            requeued.append(job.id)
        else:
            reason = _end_reason(state, exit_code)
            if state == JobState.OUT_OF_MEMORY:
                exit_code, signal = OOM_EXIT
            job.exit_code = exit_code
            job.exit_signal = signal
            mark_ended(job, state, now=ended or now, reason=reason)
        events.append(
            transition_row(
                job.id,
                old,
                job.state,
                now=now,
                node=c.get("node", ""),
                detail={"exit_code": exit_code, "signal": signal},
            )
        )
        recorded += 1
    done = [j for j in jobs if j.id not in requeued and j.state not in HOLDING_JOB_STATES]
    usage = ("max_rss_kb", "total_cpu_secs")
    rows.update_rows(done, [*ENDED_FIELDS, "exit_code", "exit_signal", *usage])
    rows.update_rows(completing, [*COMPLETING_FIELDS, *usage])
    rows.insert_values(Event, events)
    if recorded:
        # A COMPLETING job's nodes too: they take the COMPLETING flag.
        refresh_usage({*freed, *(name for job in completing for name in job.alloc)})
        for ext in extensions.active():
            ext.nodes_freed(freed, now=now)
        publish.console_changed("jobs", "nodes")
        triggers.schedule_after_commit()
    return recorded


def _usage(job: Job, c: dict[str, Any]) -> None:
    """The agent's samples of the run that ended (an agent of an earlier release sends none)."""
    rss, cpu = c.get("max_rss_kb"), c.get("total_cpu_secs")
    number = (int, float)
    job.max_rss_kb = rss if type(rss) is int and rss >= 0 else None
    job.total_cpu_secs = float(cpu) if type(cpu) in number and cpu >= 0 else None


__all__ = [
    "HELD_ELSEWHERE",
    "Registration",
    "agent_disconnected",
    "agent_drain",
    "agent_ping",
    "agent_register",
    "held_elsewhere",
    "job_completed",
    "job_launch_failed",
    "job_started",
    "jobs_completed",
    "jobs_reported",
    "jobs_started",
    "launch_payload",
    "single_process",
]
