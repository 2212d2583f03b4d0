"""``POST /api/config/debug/ {"level": "debug2"}``: scontrol setdebug (administrators;
the rules are cluster/services/debug_level.py's)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster.services.debug_level import debug_level_set


class DebugLevel(APIView):
    @extend_schema(request=dict, responses=dict, operation_id="config_debug_level")
    def post(self, request: Request) -> Response:
        level = request.data.get("level") if isinstance(request.data, dict) else None
        return Response({"level": debug_level_set(actor=request.user, level=level)})
