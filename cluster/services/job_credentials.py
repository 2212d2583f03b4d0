"""Job credentials: what a running job's processes authenticate with (issue #16 point 2).

Slurm's srun, inside a job, is authenticated by munge and authorized by the job's
credential; fsched's counterpart is a secret minted by the controller each time it
launches a job, handed by the agent to the job's processes as ``FSCHED_JOB_CREDENTIAL``,
and never the user's own API token.  It reads ``<job id>.<secret>`` (32 random bytes);
the database keeps only the SHA-256 of the whole text (:mod:`cluster.services.api_tokens`
says why a plain digest suffices for 256 random bits).  It is valid only while its job
runs (RUNNING, SUSPENDED, STOPPED or CONFIGURING) in the run it was minted for, and only
for that job (cluster/api/job_credential_auth.py checks the scope).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from typing import Any

from cluster.core.states import JobState
from cluster.models import Job, JobCredential
from cluster.services import rows
from cluster.services.api_tokens import digest, matches

SECRET_BYTES = 32
# The states in which a job's processes exist (or are about to): COMPLETING is left out,
# its processes are gone and only its Epilog runs.
VALID_STATES = frozenset({JobState.RUNNING, JobState.SUSPENDED, JobState.STOPPED, JobState.CONFIGURING})


class CredentialError(Exception):
    """Why a credential is refused; the message is the API's answer."""


def mint_many(jobs: Iterable[Job]) -> dict[int, str]:
    """A new credential for each job's current run, replacing any earlier one: one statement
    run for every job, without a model instance each (a pass may start thousands)."""
    texts = {job.id: f"{job.id}.{secrets.token_urlsafe(SECRET_BYTES)}" for job in jobs}
    runs = {job.id: job.restart_count for job in jobs}
    rows.upsert_values(JobCredential, ("digest", "run"), [(i, digest(t), runs[i]) for i, t in texts.items()])
    return texts


def mint(job: Job) -> str:
    return mint_many([job])[job.id]


def check(text: str) -> tuple[Any, int]:
    """(the job's user, the job id) for a valid credential, else :class:`CredentialError`."""
    job_part, dot, secret = text.partition(".")
    if not dot or not secret or not (job_part.isascii() and job_part.isdigit()) or len(job_part) > 19:
        raise CredentialError("Invalid job credential.")
    row = JobCredential.objects.select_related("job", "job__submitter").filter(pk=int(job_part)).first()
    # An unknown job and a wrong secret answer alike.
    if row is None or not matches(text, row.digest):
        raise CredentialError("Invalid job credential.")
    job = row.job
    if job.state not in VALID_STATES or job.restart_count != row.run:
        raise CredentialError(f"Job credential expired: job {job.id} is not running.")
    user = job.submitter
    if user is None or not user.is_active:
        raise CredentialError("Invalid job credential: the job's user is inactive or deleted.")
    return user, job.id
