"""Launches and cancels the agent never answered (Slurm's BatchStartTimeout and
UnkillableStepTimeout), checked by the health cycle with the clock passed in.

Launch: a RUNNING job whose agent never reported ``started`` within BatchStartTimeout
seconds (slurm.conf, default 10) is, as slurmctld says, "missing from batch node (not
found BatchStartTime after startup)": it is requeued when it may be, else it ends
NODE_FAIL (``fail_job``, the same end as a job lost with its node). The time counts from
the latest of the job's start, the moment its launch left (``launch_sent``: a long pass
commits, and so sends its launches, well after its clock) and its batch host's last
registration, because a registering agent is sent the launches it missed
(agent_register's relaunch) and must get the whole timeout for them. The launch is not
re-sent first: the agent answers a repeated launch with ``started`` at once, so a launch
unanswered for 10 s means an agent that does not work, and one more try would only hold
the nodes longer. A ``cancel`` goes to the batch host first (with the requeue after it on
the same connection), so a launch that was merely slow cannot run beside the job's next
run.

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


def _missing_message(job: Job) -> str:
    where = f"missing from batch node {job.batch_host}"
    return f"Batch JobId={job.id} {where} (not found BatchStartTime after startup)"


def _launch_timeouts(now: datetime, timeout: int) -> list[Job]:
    """Jobs whose launch was never reported started in time."""
    limit = now - timedelta(seconds=timeout)
    jobs = list(
        Job.objects.select_for_update().filter(
            Q(launch_sent__isnull=True) | Q(launch_sent__lt=limit),
            state=JobState.RUNNING,
            launched=False,
            kill_requested__isnull=True,
            start_time__lt=limit,
        )
    )
    if not jobs:
        return []
    registered = dict(
        Node.objects.filter(name__in={j.batch_host for j in jobs}).values_list("name", "slurmd_start_time")
    )
    return [job for job in jobs if (registered.get(job.batch_host) or job.start_time) < limit]


def _drain(name: str, *, now: datetime) -> bool:
    node = Node.objects.select_for_update().filter(name=name).first()
    if node is None or node.flags & NodeFlag.DRAIN:
        return False
    set_node_state(node, add=NodeFlag.DRAIN, reason=KILL_TASK_FAILED, user="slurm", now=now)
    node.save()
    return True


def launch_watch_pass(*, now: datetime) -> str:
    """Time out unanswered launches and cancels; a summary for the cycle's log."""
    cfg = ClusterConfig.current()
    start_timeout = cfg.option_int("BatchStartTimeout", 10)
    kill_limit = cfg.option_int("KillWait", 30) + cfg.option_int("UnkillableStepTimeout", 60)
    held: set[str] = set()
    with transaction.atomic():
        missing = _launch_timeouts(now, start_timeout)
        for job in missing:
            log.warning("%s", _missing_message(job))
            publish.to_agent(job.batch_host, Cancel(job_id=job.id, kill_wait=0).to_wire())
            held.update(job.alloc)
            fail_job(job, now=now, why=_missing_message(job), node=job.batch_host)
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
    return f"launch_timeouts={len(missing)} kill_failed={len(unkillable)} drained={len(drained)}"
