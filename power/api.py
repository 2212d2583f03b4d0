"""REST endpoints of power saving (the CLI's ``scontrol power ...`` goes through here)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster.api.permissions import StaffOnly, StaffWrites
from cluster.core import hostlists
from cluster.models import Node
from cluster.services import inputs
from cluster.services.errors import ServiceError
from power import services
from power.instances import instances
from power.models import CloudInstance, PowerRun

# More words than ``scontrol power down asap <nodes> Action= Reason=`` has.
WORDS_MAX = 16
REQUEST_FIELDS = ("op", "nodes", "action", "reason")
# SuspendExcNodes=nid[10-20]:4,tux5: the counts after the lists.
_EXC_COUNT = re.compile(r":([0-9]*)(?=,|$)")


def _node_limit() -> int:
    return max(Node.objects.count(), 1)


def _nodes(value: object, field: str) -> str:
    """A hostlist (or ALL), sized before the power service expands it."""
    text = inputs.text(value, field, max_length=hostlists.MAX_TEXT)
    if text.strip().upper() != "ALL":
        inputs.hostlist_size(text, field, limit=_node_limit())
    return text


def _words(args: object) -> list[str]:
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ServiceError("args: a list of words is expected", field="args")
    if len(args) > WORDS_MAX:
        raise ServiceError(f"args: more than {WORDS_MAX} words", field="args")
    for word in args:
        key, eq, value = word.partition("=")
        if eq:
            inputs.text(value, key.lower() or "args", max_length=256)
        else:
            # A bare word is a keyword or the node list: neither may name more than the cluster.
            _nodes(word, "args")
    return args


def _exc_nodes(value: str) -> str:
    text = inputs.text(value, "SuspendExcNodes", max_length=hostlists.MAX_TEXT)
    for digits in _EXC_COUNT.findall(text):
        if digits and inputs.integer(digits, "SuspendExcNodes") > _node_limit():
            raise ServiceError(f"Invalid SuspendExc value: count {digits} is above the node count")
    inputs.hostlist_size(_EXC_COUNT.sub("", text), "SuspendExcNodes", limit=_node_limit())
    return text


class PowerRequest(APIView):
    """``POST /api/power/`` ``{"args": ["down", "asap", "node[01-02]", "Reason=x"]}`` (the
    words after ``scontrol power``), or ``{"op": "POWER_DOWN", "nodes": "...", "action":
    ..., "reason": ...}``.  Staff only."""

    permission_classes = [StaffOnly]

    @extend_schema(request=dict, responses=dict)
    def post(self, request: Request) -> Response:
        data = inputs.body_object(request.data)
        if "args" in data:
            inputs.known_fields(data, ("args",))
            answer = services.power_command(actor=request.user, words=_words(data["args"]))
        else:
            inputs.known_fields(data, REQUEST_FIELDS)
            action, reason = data.get("action"), data.get("reason")
            answer = services.power_request(
                actor=request.user,
                nodes=_nodes(data.get("nodes", ""), "nodes"),
                op=inputs.text(data.get("op", ""), "op", max_length=32),
                action=inputs.text(action, "action", max_length=64) if action else None,
                reason=None if reason is None else inputs.text(reason, "reason", max_length=256),
            )
        return Response({"nodes": answer.nodes, "messages": answer.messages})


class PowerSettings(APIView):
    """``POST /api/power/settings/`` ``{"SuspendExcNodes": ..., "SuspendExcParts": ...,
    "SuspendExcStates": ...}`` (``scontrol update SuspendExc*=``; staff only).  ``GET``
    shows the values in force."""

    permission_classes = [StaffWrites]

    @extend_schema(responses=dict)
    def get(self, request: Request) -> Response:
        values = services.exclusions_text(services.exclusions_in_force(services.settings_in_force()))
        return Response({services.EXC_KEYS[k]: v for k, v in values.items()})

    @extend_schema(request=dict, responses=dict)
    def post(self, request: Request) -> Response:
        keys = {k.lower(): k for k in services.EXC_KEYS.values()}
        given = {str(k).lower(): v for k, v in inputs.body_object(request.data).items()}
        inputs.known_fields(given, keys)

        def value(key: str) -> str | None:
            v = given.get(key.lower())
            return None if v is None else inputs.text(v, key, max_length=4096)

        nodes = value("SuspendExcNodes")
        values = services.suspend_exc_update(
            actor=request.user,
            nodes=None if nodes is None else _exc_nodes(nodes),
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


INSTANCE_FILTERS = ("nodes", "instance_id", "instance_type", "extra", "start", "end")


class Instances(APIView):
    """``GET /api/power/instances/``: the cloud instances nodes ran on, past and current
    (slurmrestd's ``/instances``; ``sacctmgr show instance``), as ``{"instances": [...]}``.
    Filters: ``nodes`` (hostlist), ``instance_id``, ``instance_type``, ``extra`` (comma
    lists), ``start`` and ``end`` (epoch seconds: records active at some time between)."""

    @extend_schema(responses=dict)
    def get(self, request: Request) -> Response:
        given = request.query_params
        inputs.known_fields(given, INSTANCE_FILTERS)
        limit = max(Node.objects.count(), CloudInstance.objects.count(), 1)

        def listed(key: str) -> list[str] | None:
            if key not in given:
                return None
            return [w.strip() for w in inputs.text(given[key], key, max_length=4096).split(",") if w.strip()]

        def moment(key: str) -> datetime | None:
            if key not in given:
                return None
            return datetime.fromtimestamp(inputs.integer(given[key], key), UTC)

        found = instances(
            nodes=inputs.hostlist(given["nodes"], "nodes", limit=limit) if "nodes" in given else None,
            instance_ids=listed("instance_id"),
            instance_types=listed("instance_type"),
            extras=listed("extra"),
            start=moment("start"),
            end=moment("end"),
        )
        return Response({"instances": found})
