"""What a limit change would release or block, before it is made.

The change is made by the one service (``record_modify``, as ``sacctmgr modify``) in a
transaction that is always rolled back, so the preview validates exactly what the change
would: the new rows are read into a policy, and the limits core (``LimitState.explain``,
the same the scheduler's pass and the job page's explainer use) says which pending jobs
each limit holds, with the usage in force.  Comparing that with the same reading of the
current rows gives the jobs the change releases and those it blocks.  Nothing is kept:
no row, no audit entry, no console notice (those wait for a commit that never comes).

Running jobs are not blocked by a lowered limit (Slurm lets them run on and counts them);
they appear in the usage a newly blocked pending job is checked against.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from cluster.core.states import JobState
from cluster.models import ClusterConfig, Job
from limits import reports, selectors, services
from limits.core.policy import Policy


@dataclass(frozen=True)
class JobEffect:
    job_id: int
    user: str
    account: str
    before: tuple[str, ...]
    after: tuple[str, ...]


@dataclass
class Preview:
    lines: list[str] = field(default_factory=list)  # what sacctmgr would print
    released: list[JobEffect] = field(default_factory=list)
    blocked: list[JobEffect] = field(default_factory=list)
    enforced: bool = True


class _Discard(Exception):
    """Ends the preview's transaction: everything it wrote is rolled back."""


def _policy() -> Policy:
    cfg = ClusterConfig.current()
    return selectors.build_policy(cluster=cfg.cluster_name or "cluster", options=cfg.options or {})


def _limit_reasons(policy: Policy, pending: list[Job]) -> dict[int, tuple[str, ...]]:
    """Pending job id -> the reasons of the limits that hold it (as reports.explain)."""
    state = reports.limit_state(policy, selectors.usage_records())
    reasons = {}
    for job in pending:
        reasons[job.id] = tuple(b.reason for b in state.explain(reports.job_request(policy, job)))
    return reasons


def limit_change_preview(
    *, actor: AbstractBaseUser, entity: str, where: Sequence[str], options: Sequence[str]
) -> Preview:
    """Raises ServiceError (the service's refusal) when the change itself would be refused."""
    preview = Preview(enforced=selectors.context().enforce.associations)
    # Read once: the change writes limits, never jobs, so the pending jobs are the same after.
    pending = list(Job.objects.filter(state=JobState.PENDING).order_by("id"))
    jobs = {j.id: j for j in pending}
    before = _limit_reasons(_policy(), pending)
    try:
        with transaction.atomic():
            change = services.record_modify(actor=actor, entity=entity, where=where, options=options)
            preview.lines = list(change.lines)
            after = _limit_reasons(_policy(), pending)
            raise _Discard
    except _Discard:
        pass
    if not preview.enforced:
        return preview
    for job_id, was in before.items():
        now = after.get(job_id, ())
        job = jobs.get(job_id)
        if job is None:
            continue
        effect = JobEffect(job_id, job.user, job.account, was, now)
        if was and not now:
            preview.released.append(effect)
        elif now and not was:
            preview.blocked.append(effect)
    return preview
