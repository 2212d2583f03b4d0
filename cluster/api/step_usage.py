"""``GET /api/jobs/{id}/usage/``: the job's running steps and their tasks' use, for sstat
(cluster/services/step_usage.py).

``{"job_id", "state", "steps": [{"step": "batch"|"0"..., "node_list", "ntasks", "nodes":
[{"node", "sampled_at", "tasks": [...]}]}]}``, each task as the agent reported it
(slurmwords.agent_messages.TaskUsage). A user who may see the job but not its figures gets
403 ``{"error": "Invalid user id", "steps": [...]}``, the steps without ``nodes``."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster.services.step_usage import job_step_usage


class JobStepUsage(APIView):
    @extend_schema(responses=dict, operation_id="jobs_usage")
    def get(self, request: Request, job_id: int) -> Response:
        usage = job_step_usage(actor=request.user, job_id=job_id)
        steps = [{"step": s.step, "node_list": s.node_list, "ntasks": s.ntasks} for s in usage.steps]
        if usage.refused:
            return Response({"error": usage.refused, "job_id": usage.job_id, "steps": steps}, status=403)
        for shown, s in zip(steps, usage.steps, strict=True):
            shown["nodes"] = s.nodes
        return Response({"job_id": usage.job_id, "state": usage.state, "steps": steps})
