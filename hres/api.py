"""REST endpoints of hierarchical resources: each validates, calls one service, answers.

* ``GET /api/licenses/[?name=NAME]``: ``scontrol show license`` (cluster licenses and one
  entry per HRES layer);
* ``POST /api/hres/`` and ``POST /slurm/v0.0.46/hres/``: a runtime update, JSON body
  ``hres_name``, ``layer_name`` and any of ``nodes``, ``count``, ``base``,
  ``disable_hres``, ``disable_layer`` (spec "Runtime Updates"; staff only).
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster.services.errors import ServiceError
from hres import services
from hres.layers import UNSET

_KEYS = {"hres_name", "layer_name", *services.UPDATE_KEYS}


class LicenseList(APIView):
    @extend_schema(responses=dict, operation_id="licenses_list")
    def get(self, request: Request) -> Response:
        name = request.query_params.get("name") or None
        return Response({"licenses": services.license_entries(name)})


class HresUpdate(APIView):
    @extend_schema(request=dict, responses=dict, operation_id="hres_update")
    def post(self, request: Request) -> Response:
        data = request.data
        if not isinstance(data, dict):
            raise ServiceError("The request body must be a JSON object")
        unknown = sorted(set(data) - _KEYS)
        if unknown:
            raise ServiceError(f"Unknown field(s): {', '.join(unknown)}", field=unknown[0])
        entries = services.hres_update(
            actor=request.user,
            hres_name=str(data.get("hres_name") or ""),
            layer_name=str(data.get("layer_name") or ""),
            nodes=None if data.get("nodes") is None else str(data["nodes"]),
            count=data["count"] if data.get("count") is not None else UNSET,
            base=data.get("base", UNSET),
            disable_hres=data.get("disable_hres"),
            disable_layer=data.get("disable_layer"),
        )
        return Response({"licenses": entries})
