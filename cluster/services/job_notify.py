"""``scontrol notify JOBID MESSAGE``: a message to the job's salloc/srun, or to its batch
script's stderr.

As slurmctld's ``_slurm_rpc_job_notify`` and ``srun_user_message`` (src/stepmgr/srun_comm.c):

* a job that does not exist (or that PrivateData hides): ``Invalid job id specified``;
* another user's job, unless the caller is staff (Slurm's SlurmUser/root): ``Invalid user id``;
* a job neither pending nor running: ``Job/step already completing or completed``;
* an allocation with a live holder (salloc, srun outside an allocation), pending or
  running: the holder prints it on its stderr (``salloc: <message>``) when it next renews
  its lease, which answers the notifications it has not seen;
* a running batch job: its batch host's agent writes ``slurmstepd: error: <message>`` to
  the job's stderr file, as slurmstepd logs it there;
* anything else (a pending batch job, ``salloc --no-shell``'s allocation, which has no
  holder): ``Requested operation is presently disabled``.

Every delivered notification is an event of the job (``notify``, the text in its detail).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from cluster import publish, visibility
from cluster.core.states import JobState
from cluster.models import AllocationHolder, Event
from cluster.services.errors import NotFound, PermissionDenied, ServiceError
from cluster.services.jobs import get_job
from cluster.services.state import record_transition
from slurmwords.agent_messages import Notify

MAX_MESSAGE = 4096
NOTIFY = "notify"
_PENDING = frozenset({JobState.PENDING, JobState.REQUEUED})
# Slurm's IS_JOB_RUNNING: CONFIGURING and STOPPED are flags on a running job there.
_RUNNING = frozenset({JobState.RUNNING, JobState.CONFIGURING, JobState.STOPPED})


@transaction.atomic
def job_notify(*, actor: Any, job_id: int, message: object) -> str:
    """Send ``message``; answers where it went: ``"holder"`` or ``"batch"``."""
    if not isinstance(message, str) or len(message) > MAX_MESSAGE or "\x00" in message:
        raise ServiceError(f"message: text of at most {MAX_MESSAGE} characters", field="message")
    job = get_job(job_id)
    if not visibility.may_see(actor, job):
        raise NotFound("Invalid job id specified")
    if job.user != actor.get_username() and not visibility.viewer(actor).staff:
        raise PermissionDenied("Invalid user id")
    if job.state not in _PENDING | _RUNNING:
        raise ServiceError("Job/step already completing or completed")
    if not job.batch and AllocationHolder.objects.filter(job_id=job.id).exists():
        where = "holder"
    elif job.batch and job.state in _RUNNING and job.batch_host:
        publish.to_agent(job.batch_host, Notify(job_id=job.id, message=message).to_wire())
        where = "batch"
    else:
        raise ServiceError("Requested operation is presently disabled")
    record_transition(job, job.state, why=NOTIFY, user=actor.get_username(), detail={"message": message})
    return where


def unseen_notifications(job_id: int, seen: int) -> list[dict[str, Any]]:
    """The notifications of an allocation after event ``seen``, oldest first, for its
    holder's renewal: ``[{"id": event id, "message": text}]``."""
    events = Event.objects.filter(kind=Event.Kind.JOB, job_id=job_id, reason=NOTIFY, pk__gt=seen)
    return [
        {"id": pk, "message": (detail or {}).get("message", "")}
        for pk, detail in events.order_by("pk").values_list("pk", "detail")
    ]
