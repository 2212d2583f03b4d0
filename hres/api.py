"""REST endpoints of hierarchical resources: each validates, calls one service, answers.

* ``GET /api/licenses/[?name=NAME]``: ``scontrol show license`` (cluster licenses and one
  entry per HRES layer);
* ``POST /api/hres/`` and ``POST /slurm/v0.0.46/hres/``: a runtime update, JSON body
  ``hres_name``, ``layer_name`` and any of ``nodes``, ``count``, ``base``,
  ``disable_hres``, ``disable_layer`` (Slurm's hres.html, "Runtime Updates"; staff only).
"""

from __future__ import annotations

import re

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster.api.permissions import StaffOnly
from cluster.core import hostlists
from cluster.models import Node
from cluster.services import inputs
from cluster.services.errors import ServiceError
from hres import services
from hres.core.layers import UNSET

_KEYS = {"hres_name", "layer_name", *services.UPDATE_KEYS}
_NUMBER = re.compile(r"[0-9]+")
# More Base= entries than any resource has layers' worth of consumers.
_BASE_MAX = 256


def _count(value: object) -> object:
    """Count=: an integer within the column's range is the service's to judge (-1, below
    BaseUsage); anything else too, with its message, unless it is an integer out of range."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        return value
    if isinstance(value, str) and not _NUMBER.fullmatch(value.strip().removeprefix("-")):
        return value
    # Negative counts other than -1 are the service's to refuse, in its words.
    return inputs.integer(value, "count", low=-inputs.INT_MAX)


def _base(value: object) -> object:
    """Base=: the text scontrol passes, or ``[[name, value], ...]`` / ``[{"name", "value"}]``."""
    if value is None:
        return value
    if isinstance(value, str):
        text = inputs.text(value, "base", max_length=4096)
        if any(len(n) > 10 or int(n) > inputs.INT_MAX for n in _NUMBER.findall(text)):
            raise ServiceError("Invalid base value: a value out of range", field="base")
        return text
    if not isinstance(value, list) or len(value) > _BASE_MAX:
        raise ServiceError("Base: expected name:value text or a list of [name, value]", field="base")
    out = []
    for item in value:
        pair = (item.get("name"), item.get("value")) if isinstance(item, dict) else item
        if not isinstance(pair, list | tuple) or len(pair) != 2:
            raise ServiceError(f"Base: expected name:value pairs, not {str(item)[:40]}", field="base")
        out.append([inputs.name(pair[0], "base"), inputs.integer(pair[1], "base")])
    return out


def _nodes(value: object) -> str | None:
    """Nodes=, +list or -list: sized before the layer code expands it."""
    if value is None:
        return None
    text = inputs.text(value, "nodes", max_length=hostlists.MAX_TEXT)
    inputs.hostlist_size(text.strip().lstrip("+-"), "nodes", limit=max(Node.objects.count(), 1))
    return text


class LicenseList(APIView):
    @extend_schema(responses=dict, operation_id="licenses_list")
    def get(self, request: Request) -> Response:
        name = request.query_params.get("name") or None
        return Response({"licenses": services.license_entries(name)})


class HresUpdate(APIView):
    permission_classes = [StaffOnly]

    @extend_schema(request=dict, responses=dict, operation_id="hres_update")
    def post(self, request: Request) -> Response:
        data = inputs.body_object(request.data)
        inputs.known_fields(data, _KEYS)
        resource, layer = data.get("hres_name") or "", data.get("layer_name") or ""
        entries = services.hres_update(
            actor=request.user,
            hres_name=inputs.name(resource, "hres_name") if resource else "",
            layer_name=inputs.name(layer, "layer_name") if layer else "",
            nodes=_nodes(data.get("nodes")),
            count=_count(data["count"]) if data.get("count") is not None else UNSET,
            base=_base(data["base"]) if "base" in data else UNSET,
            disable_hres=data.get("disable_hres"),
            disable_layer=data.get("disable_layer"),
        )
        return Response({"licenses": entries})
