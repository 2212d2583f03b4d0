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
    rows = list(Partition.objects.order_by("position", "name").values_list("name", "nodes", "extra"))
    keys = [{k: v for k, v in (extra or {}).items() if k in thresholds.KEYS} for _, _, extra in rows]
    # Every node listing (sinfo, the console) asks: a cluster without thresholds pays one read.
    if not any(keys):
        return {}
    wanted = set(names)
    limit = selectors.hostlist_limit()
    partitions = []
    for (name, nodes, _), extra in zip(rows, keys, strict=True):
        members = [n for n in expand(nodes or "", limit=limit) if n in wanted]
        if members:
            partitions.append((name, members, thresholds.parse(extra)))
    return thresholds.by_node(partitions)
