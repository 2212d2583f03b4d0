"""What the controller does with an agent's ``prolog_epilog`` reports (agent/prolog.py).

One function per report, each idempotent (an agent may send one twice) and each a no-op
for a job that is no longer the run the report is about:

* :func:`prolog_failed`: as slurmctld on a batch launch whose Prolog failed, the node is
  drained with reason "Prolog error" and the job requeued held ("launch failed requeued
  held", released with ``scontrol release``), or not held with
  ``SchedulerParameters=nohold_on_prolog_fail``. A job that may not be requeued
  (``--no-requeue``) is cancelled, unless ``PrologFlags=ForceRequeueOnFail``.
* :func:`prolog_done`: with ``PrologFlags=Alloc`` a multi-node job waits CONFIGURING
  while its other nodes run their Prolog (``run_prolog``); the last success launches it
  on its batch host (whose own Prolog runs with the launch, as before). A failure on any
  node is :func:`prolog_failed`'s, for that node.
* :func:`epilog_done`: the job, COMPLETING since its processes ended, takes its end and
  releases its nodes.
* :func:`epilog_failed`: the same, and the node is drained with reason "Epilog error".

A failure reported with ``drain`` false (hres/lua's ESLURM_HRES_REMOTE_FAIL: the plugin's
service is unavailable, the node is not at fault) is handled the same, without the drain.

:func:`waits_for_epilog` tells the completion path (cluster/services/agents.py) whether a
job that ended goes COMPLETING first: only when slurm.conf names an ``Epilog``, the same
file the agents read.
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import transaction

from cluster import clock, extensions, publish, triggers
from cluster.core.prolog_conf import PrologConfig, prolog_config
from cluster.core.states import HOLDING_JOB_STATES, JobState, NodeFlag, Reason
from cluster.models import ClusterConfig, Job, Node
from cluster.services.state import (
    alloc_epilogs,
    end_job,
    launch_configured,
    record_transition,
    refresh_usage,
    release_completing_node,
    requeue_held,
    requeue_now,
    set_node_state,
)
from slurmwords.agent_messages import PrologEpilog
from slurmwords.option_lists import option_items
from slurmwords.reasons import LAUNCH_FAILED_REQUEUED_HELD

log = logging.getLogger(__name__)

PROLOG_ERROR = "Prolog error"  # slurmctld's drain reasons
EPILOG_ERROR = "Epilog error"


def current_config() -> PrologConfig:
    try:
        return prolog_config(ClusterConfig.current().options)
    except ValueError:  # checked when slurm.conf was read; an edited row falls back to none
        return PrologConfig()


def waits_for_epilog() -> bool:
    return bool(current_config().epilog)


def _scheduler_parameter(name: str) -> bool:
    value = ClusterConfig.current().options.get("SchedulerParameters")
    return name in (word.lower() for word in option_items(value))


def _drain(name: str, reason: str, *, now: datetime) -> bool:
    """Drain the node with slurmctld's reason; one already drained keeps its own."""
    node = Node.objects.select_for_update().filter(name=name).first()
    if node is None or node.flags & NodeFlag.DRAIN:
        return False
    log.error("%s on node %s, draining the node", reason, name)
    set_node_state(node, add=NodeFlag.DRAIN, reason=reason, user="slurm", now=now)
    node.save(update_fields=["flags", "reason", "reason_user", "reason_time"])
    return True


def _job(job_id: int, node: str, run: int) -> Job | None:
    job = Job.objects.select_for_update().filter(pk=job_id).first()
    if job is None or job.restart_count != run or (node != job.batch_host and node not in job.prolog_nodes):
        return None  # another run's report, or a job long gone
    return job


# A node that has not registered since its power up was asked: the job still waits for it.
_NOT_UP = NodeFlag.POWERED_DOWN | NodeFlag.POWERING_UP | NodeFlag.POWER_UP | NodeFlag.NOT_RESPONDING


@transaction.atomic
def prolog_done(*, job_id: int, node: str, run: int, now: datetime | None = None) -> None:
    """One node's allocation Prolog succeeded; the last one launches the job, unless a
    node of it still powers up (power saving launches it then)."""
    now = now or clock.now()
    job = _job(job_id, node, run)
    if job is None or job.state != JobState.CONFIGURING or node not in job.prolog_nodes:
        return  # a repeat, or a job cancelled or requeued meanwhile
    job.prolog_nodes = [n for n in job.prolog_nodes if n != node]
    job.save(update_fields=["prolog_nodes"])
    if job.prolog_nodes:
        return
    waiting = Node.objects.filter(name__in=list(job.alloc)).values_list("flags", flat=True)
    if any(flags & _NOT_UP for flags in waiting):
        return
    launch_configured(job, now=now, why="prolog complete")
    publish.console_changed("jobs")


@transaction.atomic
def prolog_failed(
    *, job_id: int, node: str, run: int, error: str = "", now: datetime | None = None, drain: bool = True
) -> None:
    now = now or clock.now()
    drained = drain and _drain(node, PROLOG_ERROR, now=now)
    job = _job(job_id, node, run)
    held: list[str] = []
    if job is not None and job.state in HOLDING_JOB_STATES and job.state != JobState.COMPLETING:
        held = list(job.alloc)
        alloc_epilogs(job)
        why = f"prolog failed on {node}: {error}" if error else f"prolog failed on {node}"
        conf = current_config()
        if job.final_state and job.final_state != JobState.REQUEUED:
            # Cancelled (or timed out) while its Prolog ran: that end stands.
            end_job(job, JobState(job.final_state), now=now, why=why, node=node)
        elif job.requeue or conf.flag("ForceRequeueOnFail") or job.final_state == JobState.REQUEUED:
            if _scheduler_parameter("nohold_on_prolog_fail"):
                old = job.state
                requeue_now(job, now=now)
                record_transition(job, old, now=now, why=why, node=node)
                publish.console_changed("jobs")
            else:
                requeue_held(job, now=now, why=why, detail=LAUNCH_FAILED_REQUEUED_HELD, node=node)
        else:
            job.exit_code = 1
            end_job(job, JobState.CANCELLED, now=now, why=why, reason=Reason.JOB_LAUNCH_FAILURE, node=node)
    if held or drained:
        refresh_usage({*held, node})
        publish.console_changed("nodes", "jobs")
        triggers.schedule_after_commit()


def _epilog_end(job_id: int, node: str, run: int, *, now: datetime, why: str) -> None:
    job = Job.objects.select_for_update().filter(pk=job_id).first()
    if job is None or job.state != JobState.COMPLETING or job.restart_count != run or node not in job.alloc:
        return  # not waiting for this epilog (none was expected, or the job ended otherwise)
    release_completing_node(job, node, now=now, why=why)
    refresh_usage([node])
    freed = {node: {job.partition}}
    for ext in extensions.active():
        ext.nodes_freed(freed, now=now)
    publish.console_changed("nodes")
    triggers.schedule_after_commit()


@transaction.atomic
def epilog_done(*, job_id: int, node: str, run: int, now: datetime | None = None) -> None:
    _epilog_end(job_id, node, run, now=now or clock.now(), why="epilog complete")


@transaction.atomic
def epilog_failed(
    *, job_id: int, node: str, run: int, error: str = "", now: datetime | None = None, drain: bool = True
) -> None:
    now = now or clock.now()
    if drain and _drain(node, EPILOG_ERROR, now=now):
        refresh_usage([node])
        publish.console_changed("nodes")
    why = f"epilog failed on {node}: {error}" if error else f"epilog failed on {node}"
    _epilog_end(job_id, node, run, now=now, why=why)


def report(*, msg: PrologEpilog, now: datetime | None = None) -> None:
    """The agent's ``prolog_epilog`` message, to the function for what it reports."""
    if msg.what == PrologEpilog.PROLOG_DONE:
        prolog_done(job_id=msg.job_id, node=msg.node, run=msg.run, now=now)
    elif msg.what == PrologEpilog.PROLOG_FAILED:
        prolog_failed(
            job_id=msg.job_id, node=msg.node, run=msg.run, error=msg.error, now=now, drain=msg.drain
        )
    elif msg.what == PrologEpilog.EPILOG_FAILED:
        epilog_failed(
            job_id=msg.job_id, node=msg.node, run=msg.run, error=msg.error, now=now, drain=msg.drain
        )
    else:
        epilog_done(job_id=msg.job_id, node=msg.node, run=msg.run, now=now)
