"""The job page's actions: cancel, hold, release, requeue and a new time limit.

Each goes through its service in ``cluster.services.jobs``, which decides who may act (the
job's owner or staff; only staff raise a time limit or release an administrator's hold, as
scontrol's), and records one audit entry with the reason given (cluster.action_flow).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.urls import reverse

from cluster import visibility
from cluster.action_flow import ActionSpec, Field, run_named_action
from cluster.models import Job
from cluster.services import jobs as job_services
from cluster.services.action_audit import action_audited
from slurmwords.durations import format_minutes

_WATCHED = ("state", "hold", "reason", "time_limit")


def _recorded(actor: Any, job_id: int, name: str, reason: str, act: Callable[[], Job]) -> Job:
    job = job_services.get_job(job_id)
    action_audited(actor=actor, instance=job, watched=_WATCHED, action=name, reason=reason, act=act)
    return job


def _simple(name: str, service: Callable[..., Job], done: str) -> Callable[[int], ActionSpec]:
    def spec(job_id: int) -> ActionSpec:
        def perform(actor: Any, values: dict[str, str], reason: str) -> str:
            _recorded(actor, job_id, name, reason, lambda: service(actor=actor, job_id=job_id))
            return f"Job {job_id} {done}."

        return ActionSpec(
            title=f"{name.capitalize()} job {job_id}",
            question=f"{name.capitalize()} job {job_id}?",
            perform=perform,
            back=reverse("job", kwargs={"job_id": job_id}),
        )

    return spec


def _time_limit(job_id: int) -> ActionSpec:
    def perform(actor: Any, values: dict[str, str], reason: str) -> str:
        changes = {"time_limit": values["time_limit"]}
        job = _recorded(
            actor,
            job_id,
            "time_limit",
            reason,
            lambda: job_services.job_update(actor=actor, job_id=job_id, changes=changes),
        )
        return f"Job {job_id} TimeLimit={format_minutes(job.time_limit)}."

    return ActionSpec(
        title=f"Change the time limit of job {job_id}",
        question=f"Change the time limit of job {job_id}?",
        perform=perform,
        back=reverse("job", kwargs={"job_id": job_id}),
        # scontrol update JobId= TimeLimit= takes the formats of sbatch --time.
        fields=(Field("time_limit", "TimeLimit", "days-hh:mm:ss, hh:mm:ss, minutes or UNLIMITED", True),),
    )


ACTIONS: dict[str, Callable[[int], ActionSpec]] = {
    "cancel": _simple("cancel", job_services.job_cancel, "cancelled"),
    "hold": _simple("hold", job_services.job_hold, "held"),
    "release": _simple("release", job_services.job_release, "released"),
    "requeue": _simple("requeue", job_services.job_requeue, "requeued"),
    "time_limit": _time_limit,
}


def job_action(request: HttpRequest, job_id: int, action: str) -> HttpResponse:
    # A job the viewer may not see (PrivateData=jobs) is not found, as Slurm answers.
    user = request.user
    if user.is_authenticated and not Job.objects.filter(visibility.visible_jobs(user), pk=job_id).exists():
        return HttpResponse("Invalid job id specified", status=404, content_type="text/plain")
    return run_named_action(request, ACTIONS, action, job_id)
