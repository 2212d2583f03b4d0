"""What the cluster core asks of the load thresholds, as a cluster extension (fsched's
own feature: docs/load-thresholds.md).

Built so far: the ``LoadSched*``/``LoadStop*`` keys of every ``PartitionName`` line are
checked when a configuration is loaded (a bad threshold refuses the start and the
reconfigure with its file:line and reason before anything changes); the indices the
agents' heartbeats carry are kept, and the node objects of the API show them with the
thresholds in force.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from cluster import selectors
from cluster.core.hostlists import expand
from cluster.core.slurmconf import ConfigError, ConfigProblem, SlurmConfig
from cluster.extensions import ClusterExtension, ConfigCheck
from cluster.models import Partition
from load.core import thresholds
from load.models import NodeLoad

_FIELDS = ("mem", "ut", "r15s", "r1m", "r15m", "run_queue")


def _line_of(conf: SlurmConfig, source: str) -> tuple[str, int]:
    """The full file name and line of a partition's ``file:line`` source."""
    for line in conf.lines:
        if line.source == source:
            return line.file, line.line
    name, _, number = source.rpartition(":")
    return name, int(number) if number.isdigit() else 0


def thresholds_by_node(conf: SlurmConfig) -> dict[str, thresholds.Thresholds]:
    """Every node's thresholds, or ConfigError naming each partition line at fault."""
    problems: list[ConfigProblem] = []
    partitions = []
    for part in conf.partitions:
        try:
            parsed = thresholds.parse(part.extra)
        except ValueError as exc:
            problems.append(ConfigProblem(*_line_of(conf, part.source), f"PartitionName={part.name}: {exc}"))
            continue
        partitions.append((part.name, part.nodes, parsed))
    if problems:
        raise ConfigError(problems)
    return thresholds.by_node(partitions)


def thresholds_in_force(names: Sequence[str]) -> dict[str, thresholds.Thresholds]:
    """The thresholds of the configuration in force (checked when it was loaded), by node."""
    wanted = set(names)
    partitions = []
    limit = selectors.hostlist_limit()
    for part in Partition.objects.order_by("position", "name"):
        extra = {k: v for k, v in (part.extra or {}).items() if k in thresholds.KEYS}
        members = [n for n in expand(part.nodes or "", limit=limit) if n in wanted]
        if members:
            partitions.append((part.name, members, thresholds.parse(extra)))
    return thresholds.by_node(partitions)


class LoadExtension(ClusterExtension):
    name = "load"

    def check_config(self, conf: Any, *, path: Path, node_names: set[str]) -> ConfigCheck:
        return ConfigCheck(thresholds_by_node(conf))

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
