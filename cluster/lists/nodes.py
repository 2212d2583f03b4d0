"""The node table: one row per node with sinfo's node-oriented long columns, in pages.

The grid stays whole (an overview of the cluster at a glance); this table is the list that
pages, sorts and exports.  Filters after sinfo's ``-n`` (hostlist), ``-p`` and ``-t``.
Rows are built from one read of every node, as the grid's are, then filtered and sorted
here: a node's sinfo state is made from its base state and flags, which no column holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from django.urls import reverse

from cluster import selectors, visibility
from cluster.core import hostlists
from cluster.lists import params
from cluster.lists.params import PageSpan, ParamError, Sort
from cluster.lists.table import Cell, Row
from cluster.models import Node
from slurmwords.hostlists import natural_key

SORT_KEYS = ("name", "partition", "state", "cpus", "memory", "free_mem", "load", "reason")
# sinfo -N -l's column names (and %C's CPUS(A/I/O/T), %O's CPU_LOAD, %e's FREE_MEM).
HEADERS = ("NODELIST", "PARTITION", "STATE", "CPUS(A/I/O/T)", "MEMORY", "FREE_MEM", "CPU_LOAD", "REASON")
COLUMNS = (
    ("name", "NODELIST", ""),
    ("partition", "PARTITION", ""),
    ("state", "STATE", ""),
    ("cpus", "CPUS(A/I/O/T)", "num"),
    ("memory", "MEMORY", "num"),
    ("free_mem", "FREE_MEM", "num"),
    ("load", "CPU_LOAD", "num"),
    ("reason", "REASON", ""),
)
# CPUs of nodes in these sinfo states count as "other" in %C, not idle.
_OTHER = ("drain", "drng", "down", "futr", "unk", "inval", "maint", "boot")


@dataclass(frozen=True)
class NodeQuery(params.PagedQuery):
    name: str = ""
    names: frozenset[str] | None = None
    partition: str = ""
    states: tuple[str, ...] = ()
    sort: Sort = field(default_factory=Sort)
    page: int = 1
    per_page: int = params.DEFAULT_PER_PAGE

    def filter_pairs(self) -> list[tuple[str, str]]:
        return [
            ("view", "table"),
            ("name", self.name),
            ("partition", self.partition),
            ("state", ",".join(self.states)),
        ]


def parse(query: Mapping[str, str]) -> NodeQuery:
    name = params.text(query, "name", max_len=1024)
    try:
        names = frozenset(hostlists.expand(name, limit=100_000, what="name")) if name else None
    except ValueError as exc:
        raise ParamError("name", str(exc)) from None
    known = {c for c, _ in selectors.NODE_COLOURS}
    states = tuple(s.lower() for s in params.comma_list(query, "state"))
    for state in states:
        if state.rstrip("".join(c for c, _ in selectors.NODE_SUFFIXES)) not in known:
            raise ParamError("state", f"Invalid node state specified: {state}")
    return NodeQuery(
        name=name,
        names=names,
        partition=params.text(query, "partition", max_len=64),
        states=states,
        sort=params.sort(query, SORT_KEYS),
        page=params.positive_int(query, "page", 1),
        per_page=params.per_page(query),
    )


@dataclass(frozen=True)
class NodeLine:
    tile: selectors.NodeTile
    partitions: str
    memory: int
    free_mem: int | None
    load: float | None

    @property
    def cpus(self) -> str:
        t = self.tile
        other = t.cpus - t.alloc_cpus if t.colour in _OTHER else 0
        idle = t.cpus - t.alloc_cpus - other
        return f"{t.alloc_cpus}/{idle}/{other}/{t.cpus}"

    def row(self) -> Row:
        t = self.tile
        return Row(
            key=t.name,
            cells=[
                Cell(t.name, reverse("node", args=[t.name])),
                Cell(self.partitions),
                Cell(t.state, css=f"nstate s-{t.colour}", title=t.state_full),
                Cell(self.cpus, css="num"),
                Cell(self.memory, css="num"),
                Cell("N/A" if self.free_mem is None else self.free_mem, css="num"),
                Cell("N/A" if self.load is None else f"{self.load:.2f}", css="num"),
                Cell(t.reason),
            ],
            data={"state": t.state},
        )


_SORTS = {
    "name": lambda n: natural_key(n.tile.name),
    "partition": lambda n: n.partitions,
    "state": lambda n: n.tile.state,
    "cpus": lambda n: (n.tile.alloc_cpus, n.tile.cpus),
    "memory": lambda n: n.memory,
    "free_mem": lambda n: -1 if n.free_mem is None else n.free_mem,
    "load": lambda n: -1.0 if n.load is None else n.load,
    "reason": lambda n: n.tile.reason,
}


def lines(query: NodeQuery) -> list[NodeLine]:
    """Every node matching the filters, in the query's order (two queries)."""
    members = selectors.partition_members()
    extra = {
        name: (mem, free, load)
        for name, mem, free, load in Node.objects.values_list("name", "real_memory", "free_mem", "cpu_load")
    }
    out = []
    for tile in selectors.node_tiles(partition=query.partition):
        if query.names is not None and tile.name not in query.names:
            continue
        if query.states and tile.state not in query.states and tile.colour not in query.states:
            continue
        mem, free, load = extra.get(tile.name, (0, None, None))
        parts = ",".join(p for p, names in members.items() if tile.name in names)
        out.append(NodeLine(tile, parts, mem, free, load))
    # Sorted by name first, so equal keys keep the name order (sorted() is stable).
    out.sort(key=_SORTS["name"])
    if query.sort.key and query.sort.key != "name":
        out.sort(key=_SORTS[query.sort.key], reverse=query.sort.descending)
    elif query.sort.descending:
        out.reverse()
    return out


def _seen(user: object, query: NodeQuery) -> list[NodeLine]:
    # PrivateData=nodes: no node state for regular users (the slurm.conf man page).
    return [] if visibility.hides(user, "nodes") else lines(query)


def node_page(user: object, query: NodeQuery) -> tuple[list[Row], PageSpan]:
    found = _seen(user, query)
    span = params.page_span(query.page, query.per_page, len(found))
    return [n.row() for n in found[span.offset : span.offset + span.per_page]], span


def export_rows(user: object, query: NodeQuery) -> Iterable[list[object]]:
    return (n.row().values() for n in _seen(user, query))
