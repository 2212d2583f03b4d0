"""Reading the load thresholds: from a configuration being loaded, and from the one in
force (its partitions' rows)."""

from __future__ import annotations

from collections.abc import Sequence

from cluster import selectors
from cluster.core.hostlists import expand
from cluster.core.slurmconf import ConfigError, ConfigProblem, SlurmConfig
from cluster.models import Partition
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
