"""What the cluster core asks of the load thresholds, as a cluster extension (fsched's
own feature: docs/load-thresholds.md).

Built so far: the ``LoadSched*``/``LoadStop*`` keys of every ``PartitionName`` line are
checked when a configuration is loaded (a bad threshold refuses the start and the
reconfigure with its file:line and reason before anything changes); the indices the
agents' heartbeats carry are kept, and the node objects of the API show them with the
thresholds in force; the ``load`` cycle drains and undrains nodes (load/services.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from django.conf import settings

from cluster.extensions import ClusterExtension, ConfigCheck, Cycle, PageSection, PendingCause
from load import explainer, services
from load.models import NodeLoad
from load.selectors import thresholds_by_node, thresholds_in_force
from load.views import node_section

_FIELDS = ("mem", "ut", "r15s", "r1m", "r15m", "run_queue")


class LoadExtension(ClusterExtension):
    name = "load"

    def check_config(self, conf: Any, *, path: Path, node_names: set[str]) -> ConfigCheck:
        return ConfigCheck(thresholds_by_node(conf))

    def cycles(self) -> Sequence[Cycle]:
        return (
            Cycle(
                "load",
                services.load_check,
                settings.FSCHED_LOAD_INTERVAL,
                setting="FSCHED_LOAD_INTERVAL",
            ),
        )

    def node_heartbeat(self, load: Mapping[str, Mapping[str, Any]], *, now: datetime) -> None:
        rows = [
            NodeLoad(node=name, at=now, **{f: info["indices"][f] for f in _FIELDS})
            for name, info in load.items()
            if isinstance(info.get("indices"), Mapping)
        ]
        if rows:
            NodeLoad.objects.bulk_create(
                rows, update_conflicts=True, unique_fields=["node"], update_fields=[*_FIELDS, "at"]
            )

    def node_details(self, names: Sequence[str]) -> Mapping[str, Mapping[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for row in NodeLoad.objects.filter(node__in=names):
            out[row.node] = {"load_indices": {**row.indices(), "at": row.at}}
        for name, found in thresholds_in_force(names).items():
            if found:
                out.setdefault(name, {})["load_thresholds"] = dict(found.keys())
        return out

    def node_page_sections(self, name: str) -> Sequence[PageSection]:
        return (node_section(name),)

    def pending_causes(self, job: Any) -> list[PendingCause]:
        return explainer.pending_causes(job)
