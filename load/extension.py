"""What the cluster core asks of the load thresholds, as a cluster extension (fsched's
own feature: docs/load-thresholds.md).

Today: the ``LoadSched*``/``LoadStop*`` keys of every ``PartitionName`` line are checked
when a configuration is loaded, so a bad threshold refuses the start and the reconfigure
with its file:line and reason before anything changes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cluster.core.slurmconf import ConfigError, ConfigProblem, SlurmConfig
from cluster.extensions import ClusterExtension, ConfigCheck
from load.core import thresholds


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


class LoadExtension(ClusterExtension):
    name = "load"

    def check_config(self, conf: Any, *, path: Path, node_names: set[str]) -> ConfigCheck:
        return ConfigCheck(thresholds_by_node(conf))
