"""``scontrol update JobId=N Priority=P``: slurmctld's update_job rules for a job's priority.

An operator sets any value; the pass then keeps it rather than computing one (slurmctld's
``direct_set_prio``) until ``Priority=4294967295`` (INFINITE) hands the job back to the
priority plugin.  A value other than 0 resets the job's nice to 0, as slurmctld does.
``Priority=0`` holds a pending job (held by the administrator when an operator asks);
INFINITE releases a held one, a user's own hold by its user.  A held job refuses any other
value.  A user may only lower a priority, which slurmctld applies until its next
computation and answers "Changes to job priority are not persistent, change nice instead";
fsched computes every pending job's priority at each pass, so it refuses with those words
and changes nothing.  A finished job is refused before this (job_update).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from cluster import visibility
from cluster.core.states import JobState, Reason
from cluster.models import Job
from cluster.services.errors import PermissionDenied, ServiceError

FIELD = "priority"
INFINITE = 0xFFFFFFFF  # what `scontrol release` sends: "compute it again"


def checked(value: Any) -> int:
    """The value as scontrol's parse_uint32 takes it: 0 to 4294967295."""
    text = str(value).strip() if not isinstance(value, bool) else ""
    if not text.isdigit() or int(text) > INFINITE:
        raise ServiceError(f"Invalid Priority value: {value}", field=FIELD)
    return int(text)


def apply(actor: AbstractBaseUser, job: Job, value: int) -> list[str]:
    """Change the job (not saved) as slurmctld would; the fields changed."""
    operator = visibility.privileged(actor)
    if value == job.priority:
        return []
    if job.hold:
        if value == INFINITE and (operator or job.hold == "user"):
            job.hold = ""
            job.reason = Reason.NONE
            return ["hold", "reason"]
        if value != INFINITE:
            raise ServiceError("Job is in held state, pending scheduler release", field=FIELD)
        raise PermissionDenied("Access/permission denied", field=FIELD)
    if not (operator or value < job.priority):
        if value == INFINITE:
            return []  # already released: slurmctld ignores it
        raise PermissionDenied("Access/permission denied", field=FIELD)
    if value == 0:
        if job.state != JobState.PENDING:
            raise ServiceError("Job is no longer pending execution", field=FIELD)
        job.hold = "admin" if operator else "user"
        job.reason = Reason.JOB_HELD_ADMIN if operator else Reason.JOB_HELD_USER
        job.priority = 0
        return ["hold", "reason", "priority"]
    if not operator:
        raise ServiceError("Changes to job priority are not persistent, change nice instead", field=FIELD)
    fields = ["nice"] if job.nice else []
    job.nice = 0
    if value == INFINITE:
        job.priority_set = 0  # the pass computes it again from the next one
        return ["priority_set", *fields]
    job.priority = job.priority_set = value
    return ["priority", "priority_set", *fields]
