"""Launches the agent never took (Slurm's BatchStartTimeout), decided at its ping, and
cancels it never finished (UnkillableStepTimeout), checked by the health cycle.

Launch: slurmctld declares a batch job "missing from batch node (not found BatchStartTime
after startup)" when the node's registration, the job list slurmd sends when asked by the
ping logic, lacks it and the job started more than BatchStartTimeout seconds (slurm.conf,
default 10) before. fsched's agent sends that list in every ``ping`` (the jobs it holds:
running, starting, ended but not yet reported), and ``missing_at_ping`` fails the RUNNING,
not yet launched jobs of the pinging connection's nodes that it lacks: requeued when they
may be, else NODE_FAIL (``fail_job``, the end of a job lost with its node). The absence of
a ``started`` report proves nothing by itself: a controller with a backlog has the report
in its websocket queue, unread, when the timeout runs out. A connection's messages are
handled in order (cluster/consumers.py), so whatever the agent said before its ping,
``started`` or ``launch_failed``, is recorded before the ping is read.

The time counts from the latest of the job's start, the moment its launch left
(``launch_sent``: a long pass commits, and so sends its launches, well after its clock)
and its batch host's last registration, because a registering agent is sent the launches
it missed (agent_register's relaunch) and must get the whole timeout for them. A launch
still on its way when the agent wrote its list is not missing: the ping says how many of
the controller's frames the agent had read (``seen``), and the connection knows which
frame carried each launch (``in_flight``). The connection also knows which launches it
has written (``written``): a backlog of the server's own sends (the channel layer's queue
to the consumer, 10,000 commands deep in the 10,000-node bench) can hold a launch long
after ``launch_sent``. A launch this connection has not written is still in that queue,
or was written to an earlier connection: it is missing only once the channel layer would
have dropped it (its expiry, ``CHANNEL_EXPIRY``) on top of the timeout. A launch that
never reached the agent (the connection dropped under it) is absent from the next list
and fails at the first ping past the timeout. The launch
is not re-sent first: the agent answers a repeated launch with ``started`` at once, so a
launch it does not hold after 10 s means an agent that does not work. A ``cancel`` goes
to the batch host first (with the requeue after it on the same connection), so a launch
that was merely slow cannot run beside the job's next run.

An agent that sends no list (an earlier release) keeps the earlier rule at its pings: a
job not reported ``started`` within the timeout is missing. A node whose agent went silent
needs nothing here: SlurmdTimeout makes it DOWN and its jobs NODE_FAIL (the health cycle).

Cancel: a job still holding its nodes KillWait + UnkillableStepTimeout (default 30 + 60)
seconds after its kill was requested has processes that would not die, or an agent that
never acknowledged. As slurmd does for an unkillable step, its batch host is drained
with reason "Kill task failed" (unless already drained: an administrator's reason is
kept) and the job takes the end it was being given (CANCELLED, TIMEOUT..., or back to
the queue for a requeue), releasing its nodes. The node stays drained until an
administrator resumes it.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Q

from cluster import publish, triggers
from cluster.core.states import HOLDING_JOB_STATES, JobState, NodeFlag
from cluster.models import ClusterConfig, Job, Node
from cluster.services.state import fail_job, refresh_usage, set_node_state
from slurmwords.agent_messages import Cancel

log = logging.getLogger(__name__)

KILL_TASK_FAILED = "Kill task failed"
# Seconds the channel layer keeps a message for a consumer before dropping it (channels'
# and channels_redis' expiry, left at its default in config.settings).
CHANNEL_EXPIRY = 60


def _missing_message(job: Job) -> str:
    where = f"missing from batch node {job.batch_host}"
    return f"Batch JobId={job.id} {where} (not found BatchStartTime after startup)"


def _launch_timeouts(nodes: Collection[str], now: datetime, timeout: int) -> list[Job]:
    """The RUNNING jobs of these batch hosts whose launch is older than the timeout and
    not yet reported started, locked."""
    limit = now - timedelta(seconds=timeout)
    late = Job.objects.filter(
        Q(launch_sent__isnull=True) | Q(launch_sent__lt=limit),
        state=JobState.RUNNING,
        launched=False,
        kill_requested__isnull=True,
        start_time__lt=limit,
    )
    # The hosts are matched here, not in SQL: an agent may serve thousands of nodes.
    hosts = nodes if isinstance(nodes, (set, frozenset, dict)) else set(nodes)
    ids = [pk for pk, host in late.values_list("pk", "batch_host") if host in hosts]
    if not ids:
        return []
    jobs = list(late.select_for_update().filter(pk__in=ids))
    registered = dict(
        Node.objects.filter(name__in={j.batch_host for j in jobs}).values_list("name", "slurmd_start_time")
    )
    return [job for job in jobs if (registered.get(job.batch_host) or job.start_time) < limit]


def missing_at_ping(
    *,
    nodes: Collection[str],
    jobs: Collection[int] | None,
    in_flight: Collection[int] = (),
    written: Collection[int] | None = None,
    now: datetime,
) -> list[int]:
    """An agent's ping for ``nodes``: fail the launches past BatchStartTimeout it does
    not hold (``jobs``; None: an agent that sends no list, whose unreported launches are
    missing), except those still ``in_flight`` to it and those its connection has not
    written yet (``written``: the launches it wrote that the agent's list has not yet
    shown; None: no connection's record, every launch taken as written at
    ``launch_sent``). Inside the caller's transaction; the ids failed."""
    if not nodes:
        return []
    timeout = ClusterConfig.current().option_int("BatchStartTimeout", 10)
    held = set(jobs or ()) | set(in_flight)
    missing = [
        job
        for job in _launch_timeouts(nodes, now, timeout)
        if jobs is None or (job.id not in held and _sent_long_ago(job, written, now, timeout))
    ]
    if not missing:
        return []
    freed: set[str] = set()
    for job in missing:
        log.warning("%s", _missing_message(job))
        publish.to_agent(job.batch_host, Cancel(job_id=job.id, kill_wait=0).to_wire())
        freed.update(job.alloc)
        fail_job(job, now=now, why=_missing_message(job), node=job.batch_host)
    refresh_usage(freed)
    publish.console_changed("nodes", "jobs")
    triggers.schedule_after_commit()
    return [job.id for job in missing]


def _sent_long_ago(job: Job, written: Collection[int] | None, now: datetime, timeout: int) -> bool:
    """Past the timeout already (``_launch_timeouts``); a launch the connection has not
    written must also be past what the channel layer keeps a message."""
    if written is None or job.id in written:
        return True
    sent = job.launch_sent or job.start_time
    return sent < now - timedelta(seconds=timeout + CHANNEL_EXPIRY)


def _drain(name: str, *, now: datetime) -> bool:
    node = Node.objects.select_for_update().filter(name=name).first()
    if node is None or node.flags & NodeFlag.DRAIN:
        return False
    set_node_state(node, add=NodeFlag.DRAIN, reason=KILL_TASK_FAILED, user="slurm", now=now)
    node.save()
    return True


def launch_watch_pass(*, now: datetime) -> str:
    """Time out unanswered cancels; a summary for the cycle's log (launches are the
    pings' to judge: ``missing_at_ping``)."""
    cfg = ClusterConfig.current()
    kill_limit = cfg.option_int("KillWait", 30) + cfg.option_int("UnkillableStepTimeout", 60)
    held: set[str] = set()
    with transaction.atomic():
        unkillable = list(
            Job.objects.select_for_update().filter(
                Q(state__in=[s.value for s in HOLDING_JOB_STATES]),
                kill_requested__lt=now - timedelta(seconds=kill_limit),
            )
        )
        drained = []
        for job in unkillable:
            host = job.batch_host
            log.warning(
                "job %s: processes on %s not killed after %d s: %s",
                job.id,
                host,
                kill_limit,
                KILL_TASK_FAILED,
            )
            if host and _drain(host, now=now):
                drained.append(host)
            held.update(job.alloc)
            fail_job(job, now=now, why=KILL_TASK_FAILED, node=host)
        if held:
            refresh_usage(held)
            publish.console_changed("nodes", "jobs")
            triggers.schedule_after_commit()
    return f"kill_failed={len(unkillable)} drained={len(drained)}"
