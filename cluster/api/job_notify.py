"""``POST /api/jobs/{id}/notify/`` ``{"message": "..."}``: ``scontrol notify``
(cluster/services/job_notify.py); answers ``{"delivered_to": "holder"|"batch"}``."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster.api.parsers import JSONParser
from cluster.services.errors import ServiceError
from cluster.services.job_notify import job_notify


class JobNotify(APIView):
    parser_classes = [JSONParser]

    @extend_schema(request=dict, responses=dict, operation_id="jobs_notify")
    def post(self, request: Request, job_id: int) -> Response:
        if not isinstance(request.data, dict):
            raise ServiceError("The request body must be a JSON object")
        where = job_notify(actor=request.user, job_id=job_id, message=request.data.get("message"))
        return Response({"delivered_to": where})
