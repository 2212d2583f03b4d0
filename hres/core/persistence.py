"""A node's layers as saved across restarts (Slurm's hres.html, "Runtime Updates"), pure.

Slurm saves each node's layers in its node state file.  Here a node's *membership* is the
set of (resource, layer) pairs it sits in directly: every layer listing it in Mode 1/2, its
leaf layer in Mode 3 (parents follow from the leaves).  A saved membership replaces the
node's place in every layer of resources.yaml when it is recovered.

The database side (which nodes keep theirs, when they return to their configured layers)
is in ``hres.services``; this module only computes and applies memberships.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ClusterShell.NodeSet import RESOLVER_NOGROUP, NodeSet

from cluster.core.slurmconf import parse_nodeset
from hres.core.layers import HresState, Layer, update_layer
from slurmwords.licenses import Mode

Membership = frozenset[tuple[str, str]]


def _direct_layers(state: HresState) -> Iterator[tuple[str, Layer]]:
    """(resource, layer) of every layer that lists nodes itself (Mode 3: the leaves)."""
    for res in state.resources:
        st = res.structure
        for la in st.layers:
            if st.mode == Mode.MODE_3 and la.children:
                continue
            yield res.name, la


def membership(state: HresState, node: str) -> Membership:
    return frozenset((r, la.name) for r, la in _direct_layers(state) if node in la.nodes)


def memberships(state: HresState, nodes: Iterable[str]) -> dict[str, Membership]:
    wanted = set(nodes)
    out: dict[str, set[tuple[str, str]]] = {n: set() for n in wanted}
    for r, la in _direct_layers(state):
        for n in la.nodes & wanted:
            out[n].add((r, la.name))
    return {n: frozenset(m) for n, m in out.items()}


def changed(in_force: HresState, configured: HresState, nodes: Iterable[str]) -> dict[str, Membership]:
    """The nodes whose layers in force differ from their configured layers, with the
    layers in force: what a restart may keep."""
    nodes = list(nodes)
    now = memberships(in_force, nodes)
    conf = memberships(configured, nodes)
    return {n: now[n] for n in nodes if now[n] != conf[n]}


def check(state: HresState, layers: Iterable[tuple[str, str]]) -> None:
    """ValueError unless every saved layer still exists and, in Mode 3, is still a leaf."""
    for resource, layer in layers:
        res = state.get(resource)
        if res is None:
            raise ValueError(f"resource {resource} no longer exists")
        st = res.structure
        if layer not in st.index:
            raise ValueError(f"resource {resource} has no layer {layer} any more")
        if st.mode == Mode.MODE_3 and st.layer(layer).children:
            raise ValueError(f"resource {resource}: layer {layer} is no longer a leaf layer")


def apply_membership(state: HresState, node: str, layers: Iterable[tuple[str, str]]) -> HresState:
    """The node leaves every layer, then joins exactly ``layers`` (ValueError: refused,
    and the caller keeps its state).  Leaving first lets a Mode 3 node change leaf."""
    wanted = {(str(r), str(la)) for r, la in layers}
    check(state, wanted)
    if node not in state.node_index:
        raise ValueError(f"node {node} is not in the cluster")
    current = membership(state, node)
    for resource, layer in sorted(current - wanted):
        state = update_layer(state, resource, layer, nodes=f"-{node}")
    for resource, layer in sorted(wanted - current):
        state = update_layer(state, resource, layer, nodes=f"+{node}")
    return state


def without_node(changes: Mapping[str, Any], node: str) -> dict[str, Any] | None:
    """A runtime update's ``changes`` once ``node`` is deleted: the node is taken out of
    its ``Nodes`` list and every other node of the list stays (Slurm's hres.html, "Dynamic
    Nodes": a deleted node leaves every layer, and only that node does).  None when
    nothing is left to replay; ``changes`` itself when it does not name the node."""
    text = str(changes.get("nodes", ""))
    op = text[:1] if text[:1] in "+-" else ""
    try:
        listed = parse_nodeset(text[1:] if op else text) if text.strip(" +-") else []
    except ValueError:
        return dict(changes)  # unreadable: replayed (and refused) as it was stored
    if node not in listed:
        return dict(changes)
    kept = [n for n in listed if n != node]
    out = dict(changes)
    if kept or not op:
        # A replacing list keeps its meaning even when empty: the layer has no node left.
        out["nodes"] = op + (str(NodeSet.fromlist(kept, resolver=RESOLVER_NOGROUP)) if kept else "")
    else:
        del out["nodes"]
    return out if set(out) - {"node"} else None


def as_json(layers: Membership) -> list[list[str]]:
    return [list(p) for p in sorted(layers)]


def from_json(data: object) -> Membership:
    if not isinstance(data, list):
        raise ValueError(f"saved layers: expected a list, not {data!r}")
    out = set()
    for item in data:
        if not isinstance(item, list | tuple) or len(item) != 2:
            raise ValueError(f"saved layers: expected [resource, layer] pairs, not {item!r}")
        out.add((str(item[0]), str(item[1])))
    return frozenset(out)


__all__ = [
    "Membership",
    "apply_membership",
    "as_json",
    "changed",
    "check",
    "from_json",
    "membership",
    "without_node",
]
