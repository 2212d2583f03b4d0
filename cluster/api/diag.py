"""Read views of the scheduler's own figures: the pending jobs' priority factors (sprio)
and the controller's statistics (sdiag, and its reset)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster.api.permissions import StaffOnly
from cluster.core import jobspec
from cluster.extensions import JobPriorityFactors
from cluster.services import diagnostics, priorities
from cluster.services.errors import ServiceError

MAX_VALUES = 1000
# config.http puts the number of requests its process has in hand (this one included)
# in the request's environment: Slurm's "Server thread count".
REQUESTS_IN_HAND = "fsched.requests_in_hand"


def _values(request: Request, name: str) -> list[str]:
    text = jobspec.check_text(request.query_params.get(name, ""), name, name, max_len=MAX_VALUES * 64)
    values = [v for v in text.split(",") if v]
    if len(values) > MAX_VALUES:
        raise ServiceError(f"Too many values for {name}: at most {MAX_VALUES}", field=name)
    return values


def _job_ids(values: list[str]) -> set[int]:
    out = set()
    for value in values:
        if not (value.isascii() and value.isdigit() and len(value) <= 19 and int(value) > 0):
            raise ServiceError(f"Invalid job id: {jobspec.quoted(value)}", field="job_id")
        out.add(int(value))
    return out


def _factors(job_id: int, user: str, partition: str, f: JobPriorityFactors) -> dict[str, Any]:
    return {
        "job_id": job_id,
        "user": user,
        "partition": partition,
        "priority": f.priority,
        "site": f.site,
        "age": f.age,
        "fairshare": f.fairshare,
        "jobsize": f.jobsize,
        "partition_factor": f.partition,
        "qos": f.qos,
        "tres": dict(f.tres),
        "nice": f.nice,
    }


class PriorityFactors(APIView):
    """GET: the pending jobs' priority factors, weighted (``?job_id=&user=&partition=``)."""

    @extend_schema(responses=dict)
    def get(self, request: Request) -> Response:
        try:
            ids = _job_ids(_values(request, "job_id"))
            users = set(_values(request, "user"))
            partitions = set(_values(request, "partition"))
        except jobspec.SpecError as exc:
            raise ServiceError(str(exc)) from None
        report, owners = priorities.priority_report()
        if report is None:
            return Response({"priority_type": "priority/basic", "weights": None, "jobs": []})
        jobs = [
            _factors(job_id, *owners[job_id], factors)
            for job_id, factors in sorted(report.jobs.items())
            if (not ids or job_id in ids)
            and (not users or owners[job_id][0] in users)
            and (not partitions or owners[job_id][1] in partitions)
        ]
        return Response({"priority_type": report.plugin, "weights": dict(report.weights), "jobs": jobs})


class Diagnostics(APIView):
    """GET: sdiag's statistics."""

    @extend_schema(responses=dict)
    def get(self, request: Request) -> Response:
        # Without config.http (the test client, another server) this request is the one.
        threads = str(request.META.get(REQUESTS_IN_HAND, "1"))
        return Response(diagnostics.statistics(server_threads=int(threads) if threads.isdigit() else 1))


class DiagnosticsReset(APIView):
    """POST: sdiag --reset, for administrators (Slurm: operators and administrators)."""

    permission_classes = [StaffOnly]

    @extend_schema(request=None, responses=dict)
    def post(self, request: Request) -> Response:
        return Response({"message": "Reset scheduling statistics", "since": diagnostics.reset()})
