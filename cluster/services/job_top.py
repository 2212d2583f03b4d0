"""``scontrol top``: move jobs to the top of their owner's own pending jobs.

As slurmctld's ``job_set_top`` and ``_set_top`` (src/slurmctld/job_mgr.c): an operator
(staff, an accounting Operator or Administrator) may move any jobs; any other user only
their own, and only where slurm.conf's SchedulerParameters has ``enable_user_top``.  The
words and the order of the checks are slurmctld's:

* a job id that does not read, or names no job (or one PrivateData hides):
  ``Invalid job id specified``; nothing moves;
* another user's job, for a non-operator: ``Access/permission denied``; nothing moves;
* a job not pending (``Job is no longer pending execution``) or held (``Job is in held
  state, pending scheduler release``) is left out; the others still move, and only when
  none is left is that the answer.

The new priorities and nice values are cluster.core.job_top's; each job that changes
records an event with its old and new values.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from cluster import publish, triggers, visibility
from cluster.core.job_top import Ranked, top_order
from cluster.core.states import JobState
from cluster.models import ClusterConfig, Job
from cluster.services.errors import NotFound, PermissionDenied, ServiceError
from cluster.services.state import record_transition

INVALID_JOB_ID = "Invalid job id specified"
_LONG_MAX = 2**63 - 1
_MAX_IDS = 10000
_SHOWN_IDS = 100  # moved jobs named in each event


def _job_ids(text: str) -> list[tuple[int, int | None]]:
    """``12,13_2,14_*`` -> [(12, None), (13, 2), (14, None)], read as job_set_top does
    (strtol: a number above 0, then nothing, ``_*`` or ``_<task>``)."""
    out: list[tuple[int, int | None]] = []
    for token in (t for t in text.split(",") if t):
        number, underscore, task = token.partition("_")
        if not (number.isascii() and number.isdigit()) or not 0 < int(number) < _LONG_MAX:
            raise NotFound(INVALID_JOB_ID, field="job_ids")
        if not underscore or task == "*":
            out.append((int(number), None))
        elif task.isascii() and task.isdigit():
            out.append((int(number), int(task)))
        else:
            raise NotFound(INVALID_JOB_ID, field="job_ids")
        if len(out) > _MAX_IDS:
            raise ServiceError(f"At most {_MAX_IDS} job ids", field="job_ids")
    if not out:
        raise NotFound(INVALID_JOB_ID, field="job_ids")
    return out


def _user_top_enabled() -> bool:
    # slurmctld looks for the word anywhere in the value, in any case (xstrcasestr).
    params = ClusterConfig.current().options.get("SchedulerParameters") or ""
    return "enable_user_top" in params.lower()


def _find(actor: Any, job_id: int, task: int | None) -> Job:
    qs = Job.objects.select_for_update()
    found = (
        qs.filter(pk=job_id).first()
        if task is None
        else qs.filter(array_job_id=job_id, array_task_id=task).first()
    )
    if found is None or not visibility.may_see(actor, found):
        raise NotFound(INVALID_JOB_ID, field="job_ids")
    return found


@transaction.atomic
def job_top(*, actor: Any, job_ids: str) -> list[Job]:
    """Move the jobs named by ``job_ids`` (scontrol's text) to the top; the jobs whose
    priority or nice changed, the moved ones first."""
    operator = visibility.privileged(actor)
    if not operator and not _user_top_enabled():
        raise PermissionDenied("Access/permission denied")
    named = [_find(actor, job_id, task) for job_id, task in _job_ids(str(job_ids))]
    moved: list[Job] = []
    skipped = ""
    for job in named:
        if not operator and job.user != actor.get_username():
            raise PermissionDenied("Access/permission denied")
        if job.state != JobState.PENDING:
            skipped = "Job is no longer pending execution"
        elif job.priority == 0 or job.hold:
            skipped = "Job is in held state, pending scheduler release"
        elif all(job.pk != m.pk for m in moved):
            moved.append(job)
    if not moved:
        raise ServiceError(skipped)
    first = moved[0]
    others = list(
        Job.objects.select_for_update()
        .filter(
            state=JobState.PENDING,
            user=first.user,
            account=first.account,
            partition=first.partition,
            qos=first.qos,
            priority__gt=1,
            hold="",
        )
        .exclude(pk__in=[m.pk for m in moved])
        .order_by("id")
    )
    order = top_order(
        [Ranked(j.pk, j.priority, j.nice) for j in moved],
        [Ranked(j.pk, j.priority, j.nice) for j in others],
    )
    who = actor.get_username()
    moved_ids = [m.pk for m in moved][:_SHOWN_IDS]
    changed = []
    for job in [*moved, *others]:
        before = (job.priority, job.nice)
        job.priority, job.nice = order[job.pk]
        if (job.priority, job.nice) == before:
            continue
        job.save(update_fields=["priority", "nice"])
        record_transition(
            job,
            job.state,
            why="top",
            user=who,
            detail={
                "before": {"priority": before[0], "nice": before[1]},
                "after": {"priority": job.priority, "nice": job.nice},
                "moved": moved_ids,  # the jobs put first (this one among them, or below them)
            },
        )
        changed.append(job)
    if changed:
        publish.console_changed("jobs")
        triggers.schedule_after_commit()
    return changed
