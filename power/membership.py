"""Which partitions each node is in, as the power-save cycle and its hooks read them (a node's
SuspendTime, ResumeTimeout and SuspendTimeout are its partitions' when it has none of its
own)."""

from __future__ import annotations

from collections.abc import Iterable

from ClusterShell.NodeSet import NodeSet, NodeSetParseError

from cluster.models import Partition
from cluster.services import pass_snapshot

_membership: tuple[tuple[tuple[str, str], ...], dict[str, tuple[str, ...]]] | None = None


def partition_membership() -> dict[str, tuple[str, ...]]:
    """Node → its partitions (shared: not to be changed). Kept while the partitions' node
    lists are what they were: expanding them was a tenth of a power-save cycle at 10,000
    nodes; inside ``pass_snapshot.keep()`` not even read until the partition table is
    written (every power-save cycle that reads nodes asked for it)."""
    return pass_snapshot.kept_value("power.partition_membership", (Partition,), _read_membership)


def _read_membership() -> dict[str, tuple[str, ...]]:
    global _membership  # noqa: PLW0603 - one copy per process, checked at every call
    rows = tuple(Partition.objects.values_list("name", "nodes"))
    kept = _membership
    if kept is not None and kept[0] == rows:
        return kept[1]
    out = _expand_membership(rows)
    _membership = (rows, out)
    return out


def _expand_membership(rows: Iterable[tuple[str, str]]) -> dict[str, tuple[str, ...]]:
    out: dict[str, list[str]] = {}
    for name, nodes in rows:
        if not nodes:
            continue
        try:
            for n in NodeSet(nodes):
                out.setdefault(n, []).append(name)
        except NodeSetParseError:
            continue
    return {k: tuple(v) for k, v in out.items()}
