"""The API's side of job credentials (:mod:`cluster.services.job_credentials`).

``Authorization: Job <credential>`` authenticates as the job's user, acting on that job
only: the job itself and everything under it (``/api/jobs/N/...``: show, cancel, signal,
steps), ``squeue -j N`` (``GET /api/jobs/?job_id=N``), ``scancel N`` (the bulk cancel with
``job_ids`` naming N only) and ``whoami``.  Anything else answers 403 saying so, before
the view reads anything: a job's processes cannot act for their user elsewhere.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from rest_framework import authentication, exceptions
from rest_framework.request import Request

from cluster.services.job_credentials import CredentialError, check

KEYWORD = b"job"
_UNDER_JOB = re.compile(r"^/api/jobs/([0-9]+)/")


class JobCredentialAuth(NamedTuple):
    """``request.auth`` of a request authenticated by a job credential."""

    job_id: int


def _names_only(values: list[Any], job_id: int) -> bool:
    """Whether a job id list names this job only (``N``, its steps ``N.S``)."""
    texts = [str(v).strip() for v in values]
    return bool(texts) and all(t.split(".", 1)[0] == str(job_id) for t in texts)


def in_scope(request: Request, job_id: int) -> bool:
    path = request._request.path_info
    if match := _UNDER_JOB.match(path):
        return int(match.group(1)) == job_id
    if path == "/api/whoami/":
        return request.method == "GET"
    if path == "/api/jobs/" and request.method == "GET":
        ids = request.query_params.get("job_id", "")
        return _names_only([v for v in ids.split(",") if v], job_id)
    if path == "/api/jobs/cancel/" and request.method == "POST":
        data = request.data if isinstance(request.data, dict) else {}
        ids = data.get("job_ids")
        return isinstance(ids, list) and _names_only(ids, job_id)
    return False


class JobCredentialAuthentication(authentication.BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[Any, JobCredentialAuth] | None:
        auth = authentication.get_authorization_header(request).split()
        if not auth or auth[0].lower() != KEYWORD:
            return None
        if len(auth) != 2:
            raise exceptions.AuthenticationFailed(
                "Invalid job credential header: expected 'Job <credential>'."
            )
        try:
            text = auth[1].decode("ascii")
        except UnicodeError:
            raise exceptions.AuthenticationFailed("Invalid job credential.") from None
        try:
            user, job_id = check(text)
        except CredentialError as exc:
            raise exceptions.AuthenticationFailed(str(exc)) from None
        if not in_scope(request, job_id):
            raise exceptions.PermissionDenied(
                f"A job credential acts on its own job only (job {job_id}): "
                f"name it (squeue -j {job_id}), or use your own token (fsched login)."
            )
        return user, JobCredentialAuth(job_id)

    def authenticate_header(self, request: Request) -> str:
        return "Job"
