"""REST endpoints of power saving (the CLI's ``scontrol power ...`` goes through here)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import permissions
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster.services.errors import ServiceError
from power import services
from power.models import PowerRun


class PowerRequest(APIView):
    """``POST /api/power/`` ``{"args": ["down", "asap", "node[01-02]", "Reason=x"]}`` (the
    words after ``scontrol power``), or ``{"op": "POWER_DOWN", "nodes": "...", "action":
    ..., "reason": ...}``.  Staff only."""

    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(request=dict, responses=dict)
    def post(self, request: Request) -> Response:
        data = request.data
        if "args" in data:
            args = data.get("args")
            if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
                raise ServiceError("args: a list of words is expected")
            answer = services.power_command(actor=request.user, words=args)
        else:
            answer = services.power_request(
                actor=request.user,
                nodes=str(data.get("nodes", "")),
                op=str(data.get("op", "")),
                action=data.get("action") or None,
                reason=data.get("reason"),
            )
        return Response({"nodes": answer.nodes, "messages": answer.messages})


class PowerSettings(APIView):
    """``POST /api/power/settings/`` ``{"SuspendExcNodes": ..., "SuspendExcParts": ...,
    "SuspendExcStates": ...}`` (``scontrol update SuspendExc*=``; staff only).  ``GET``
    shows the values in force."""

    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(responses=dict)
    def get(self, request: Request) -> Response:
        values = services.exclusions_text(services.exclusions_in_force(services.settings_in_force()))
        return Response({services.EXC_KEYS[k]: v for k, v in values.items()})

    @extend_schema(request=dict, responses=dict)
    def post(self, request: Request) -> Response:
        given = {k.lower(): v for k, v in request.data.items()}

        def value(key: str) -> str | None:
            v = given.get(key.lower())
            return None if v is None else str(v)

        values = services.suspend_exc_update(
            actor=request.user,
            nodes=value("SuspendExcNodes"),
            parts=value("SuspendExcParts"),
            states=value("SuspendExcStates"),
        )
        return Response({services.EXC_KEYS[k]: v for k, v in values.items()})


class PowerRuns(APIView):
    """``GET /api/power/runs/``: the latest program runs (newest first)."""

    @extend_schema(responses=dict)
    def get(self, request: Request) -> Response:
        runs = PowerRun.objects.all()[:200]
        return Response(
            {
                "runs": [
                    {
                        "id": r.pk,
                        "kind": r.kind,
                        "program": r.program,
                        "argv": r.argv,
                        "nodes": r.nodes,
                        "host": r.host or None,
                        "jobs": r.jobs,
                        "started": r.started,
                        "ended": r.ended,
                        "duration": r.duration,
                        "exit_code": r.exit_code,
                        "failure": r.failure,
                    }
                    for r in runs
                ]
            }
        )
