"""The REST API of job steps: srun creates them, squeue -s / scontrol show step / scancel
read and end them. Authenticated (the project's defaults); who may do what is the
services' check."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster import visibility
from cluster.api.parsers import JSONParser
from cluster.core.states import JobState
from cluster.models import Job
from cluster.services.errors import NotFound, ServiceError
from slurmwords.step_ids import step_label
from steps import services
from steps.models import Step

PARSERS = [JSONParser]
MAX_LISTED = 10_000


def step_data(step: Step, job: Job) -> dict[str, Any]:
    return {
        "id": f"{job.id}.{step_label(step.step_id)}",
        "job_id": job.id,
        "step_id": step.step_id,
        "name": step.name,
        "state": services.shown_state(step),
        "exit_code": step.exit_code,
        "exit_signal": step.exit_signal,
        "user": job.user,
        "partition": job.partition,
        "node_list": step.node_list,
        "num_nodes": step.num_nodes,
        "num_tasks": step.num_tasks,
        "cpus_per_task": step.cpus_per_task,
        "num_cpus": step.num_tasks * step.cpus_per_task,
        "tasks_per_node": step.tasks_per_node,
        "nodes": [{"name": n, "tasks": t} for n, t, _c in step.layout],
        "overlap": step.overlap,
        "start_time": step.start_time.isoformat(),
        "end_time": step.end_time.isoformat() if step.end_time else None,
        "time_limit": job.time_limit,
        "error": step.error,
    }


def _body(request: Request) -> dict[str, Any]:
    if not isinstance(request.data, dict):
        raise ServiceError("The request body must be a JSON object")
    return request.data


def _visible_job(request: Request, job_id: int) -> Job:
    job = Job.objects.filter(pk=job_id).first()
    if job is None or not visibility.may_see(request.user, job):
        raise NotFound("Invalid job id specified")
    return job


class JobSteps(APIView):
    """GET/POST /api/jobs/{id}/steps/: the job's srun steps; srun's new step."""

    parser_classes = PARSERS

    @extend_schema(responses=dict)
    def get(self, request: Request, job_id: int) -> Response:
        job = _visible_job(request, job_id)
        rows = Step.objects.filter(job=job).order_by("step_id")[:MAX_LISTED]
        return Response({"steps": [step_data(s, job) for s in rows]})

    @extend_schema(request=dict, responses=dict)
    def post(self, request: Request, job_id: int) -> Response:
        step = services.create_step(actor=request.user, job_id=job_id, data=_body(request))
        return Response(step_data(step, step.job), status=status.HTTP_201_CREATED)


class StepDetail(APIView):
    """GET /api/jobs/{id}/steps/{step}/."""

    @extend_schema(responses=dict)
    def get(self, request: Request, job_id: int, step_id: int) -> Response:
        job = _visible_job(request, job_id)
        step = Step.objects.filter(job=job, step_id=step_id).first()
        if step is None:
            raise NotFound(f"Job step {job_id}.{step_id} not found")
        return Response(step_data(step, job))


class StepAction(APIView):
    """POST /api/jobs/{id}/steps/{step}/cancel/ and .../signal/ {"signal": "INT"}."""

    parser_classes = PARSERS
    action = ""

    @extend_schema(request=dict, responses=dict)
    def post(self, request: Request, job_id: int, step_id: int) -> Response:
        if self.action == "cancel":
            sig = _body(request).get("signal")
            step = services.cancel_step(actor=request.user, job_id=job_id, step_id=step_id, signal=sig)
        else:
            sig = _body(request).get("signal")
            step = services.signal_step(actor=request.user, job_id=job_id, step_id=step_id, signal=sig)
        return Response(step_data(step, step.job))


class RunningSteps(APIView):
    """GET /api/steps/: the steps of the running jobs the user may see (squeue -s)."""

    @extend_schema(responses=dict)
    def get(self, request: Request) -> Response:
        live = [JobState.RUNNING.value, JobState.SUSPENDED.value]
        jobs = Job.objects.filter(visibility.visible_jobs(request.user), state__in=live)
        rows = (
            Step.objects.filter(state=services.RUNNING, job__in=jobs)
            .select_related("job")
            .order_by("job_id", "step_id")[:MAX_LISTED]
        )
        batch = [
            batch_data(job)
            for job in jobs.exclude(batch_host="").exclude(script="").order_by("id")[:MAX_LISTED]
        ]
        return Response({"steps": [*batch, *(step_data(s, s.job) for s in rows)]})


def batch_data(job: Job) -> dict[str, Any]:
    """A running job's ``batch`` step, as squeue -s lists it."""
    cpus = job.alloc.get(job.batch_host, [1])[0] if job.alloc else 1
    return {
        "id": f"{job.id}.batch",
        "job_id": job.id,
        "step_id": "batch",
        "name": "batch",
        "state": job.state,
        "user": job.user,
        "partition": job.partition,
        "node_list": job.batch_host,
        "num_nodes": 1,
        "num_tasks": 1,
        "num_cpus": cpus,
        "start_time": job.start_time.isoformat() if job.start_time else None,
        "end_time": None,
        "time_limit": job.time_limit,
    }
