"""``POST /api/jobs/top/`` ``{"job_ids": "12,13_2"}``: ``scontrol top`` (cluster/services/job_top.py).

The answer lists the jobs whose priority or nice changed, moved ones first."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster.api.parsers import JSONParser
from cluster.services.errors import ServiceError
from cluster.services.job_top import job_top

MAX_TEXT = 65536


class JobTop(APIView):
    parser_classes = [JSONParser]

    @extend_schema(request=dict, responses=dict, operation_id="jobs_top")
    def post(self, request: Request) -> Response:
        data = request.data
        ids = data.get("job_ids") if isinstance(data, dict) else None
        if not isinstance(ids, str) or len(ids) > MAX_TEXT:
            raise ServiceError("job_ids: the job ids as scontrol top takes them, a string", field="job_ids")
        changed = job_top(actor=request.user, job_ids=ids)
        return Response({"jobs": [{"job_id": j.pk, "priority": j.priority, "nice": j.nice} for j in changed]})
