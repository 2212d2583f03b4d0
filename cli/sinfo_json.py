"""``sinfo --json``: sinfo's lines as Slurm 23.11 prints them in JSON (data_parser v0.0.40's
OPENAPI_SINFO_RESP: a ``sinfo`` list of SINFO_DATA).

Slurm builds the list as it builds its lines: one entry per partition and node state
(with ``--json`` also per GresUsed, sinfo's opts.c setting gres_used_flag), or per node
with ``-N``; sorted as the lines are (partition order, then decreasing state; by node name
with ``-N``). Each entry carries its nodes' counts and ranges and its whole partition."""

from __future__ import annotations

from cli.scontrol_json import cpu_load, hostname, nested, node_state, partition
from cli.sinfo import _aio, state_number
from slurmwords import data_parser as dp
from slurmwords.hostlists import natural_key


def _groups(partitions: list[dict], nodes: list[dict], per_node: bool) -> list[tuple[dict, list[dict]]]:
    nodes = sorted(nodes, key=lambda n: natural_key(n.get("name", "")))
    groups: dict[tuple, tuple[dict, list[dict]]] = {}
    for index, part in enumerate(partitions):
        mine = [n for n in nodes if part.get("name") in (n.get("partitions") or [])]
        if not mine and not per_node:
            groups[(index,)] = (part, [])  # a partition without nodes still has its entry
        for node in mine:
            line = (node.get("name"),) if per_node else (node.get("state_short"), node.get("gres_used"))
            key = (index, *line)
            groups.setdefault(key, (part, []))[1].append(node)
    ordered = list(groups.items())
    if per_node:
        ordered.sort(key=lambda kv: natural_key(kv[1][1][0].get("name", "")))
    else:
        ordered.sort(key=lambda kv: -state_number(kv[1][1][0]) if kv[1][1] else 0)
        ordered.sort(key=lambda kv: kv[0][0])
    return [value for _, value in ordered]


def _span(nodes: list[dict], key: str) -> tuple[int, int]:
    values = [int(n.get(key) or 0) for n in nodes] or [0]
    return min(values), max(values)


def _free(nodes: list[dict]) -> tuple[dict, dict]:
    values = [n["free_mem"] for n in nodes if n.get("free_mem") is not None]
    if not values:
        return dp.no_val(None if nodes else 0), dp.no_val(None if nodes else 0)
    return dp.no_val(min(values)), dp.no_val(max(values))


def _per_node_max(limit: str, has_nodes: bool) -> dict:
    """The partition's MaxCPUsPerNode, which sinfo copies with a line's first node; a
    partition's entry without nodes keeps its zeroed 0."""
    if not has_nodes:
        return dp.no_val(0)
    return dp.no_val(int(limit)) if limit.isdigit() else dp.no_val(None, infinite=True)


def entry(part: dict, nodes: list[dict], port: int = 0) -> dict:
    """One SINFO_DATA: the nodes of one line of sinfo, and their partition."""
    first = nodes[0] if nodes else {}
    counts = {"A": 0, "I": 0, "O": 0}
    cpus = {"A": 0, "I": 0, "O": 0}
    for node in nodes:
        kind = _aio(node)
        counts[kind] += 1
        total, used = node.get("cpus") or 0, node.get("cpus_alloc") or 0
        if kind == "O":
            cpus["O"] += total
        else:
            cpus["A"] += used
            cpus["I"] += total - used
    free_min, free_max = _free(nodes)
    loads = [cpu_load(n.get("cpu_load")) for n in nodes] or [0]
    extra = part.get("extra") or {}
    per_node = str(extra.get("MaxCPUsPerNode") or "")
    return nested(
        [
            ("port", port if nodes else 0),
            ("node/state", node_state(first) if nodes else ["UNKNOWN"]),
            ("nodes/allocated", counts["A"]),
            ("nodes/idle", counts["I"]),
            ("nodes/other", counts["O"]),
            ("nodes/total", len(nodes)),
            ("cpus/allocated", cpus["A"]),
            ("cpus/idle", cpus["I"]),
            ("cpus/other", cpus["O"]),
            ("cpus/total", sum(n.get("cpus") or 0 for n in nodes)),
            ("cpus/minimum", _span(nodes, "cpus")[0]),
            ("cpus/maximum", _span(nodes, "cpus")[1]),
            ("sockets/minimum", _span(nodes, "sockets")[0]),
            ("sockets/maximum", _span(nodes, "sockets")[1]),
            ("cores/minimum", _span(nodes, "cores_per_socket")[0]),
            ("cores/maximum", _span(nodes, "cores_per_socket")[1]),
            ("threads/minimum", _span(nodes, "threads_per_core")[0]),
            ("threads/maximum", _span(nodes, "threads_per_core")[1]),
            ("disk/minimum", _span(nodes, "tmp_disk")[0]),
            ("disk/maximum", _span(nodes, "tmp_disk")[1]),
            ("memory/minimum", _span(nodes, "real_memory")[0]),
            ("memory/maximum", _span(nodes, "real_memory")[1]),
            ("weight/minimum", _span(nodes, "weight")[0]),
            ("weight/maximum", _span(nodes, "weight")[1]),
            ("cpus/load/minimum", min(loads)),
            ("cpus/load/maximum", max(loads)),
            ("memory/free/minimum", free_min),
            ("memory/free/maximum", free_max),
            ("cpus/per_node/max", _per_node_max(per_node, bool(nodes))),
            ("memory/allocated", sum(n.get("alloc_memory") or 0 for n in nodes)),
            ("features/total", dp.text(first.get("features"))),
            ("features/active", dp.text(first.get("active_features"))),
            ("gres/total", dp.text(first.get("gres"))),
            ("gres/used", dp.text(first.get("gres_used"))),
            ("cluster", ""),
            ("comment", ""),
            ("extra", dp.text(first.get("extra"))),
            ("reason/description", dp.text(first.get("reason"))),
            ("reason/time", dp.epoch(first.get("reason_time"))),
            ("reservation", ""),
            ("reason/user", dp.text(first.get("reason_user"))),
            ("nodes/hostnames", [hostname(n) for n in nodes]),
            ("nodes/addresses", [n.get("name") for n in nodes]),
            ("nodes/nodes", [n.get("name") for n in nodes]),
            ("partition", partition(part)),
        ]
    )


def render(partitions: list[dict], nodes: list[dict], context, *, per_node: bool = False) -> str:
    """OPENAPI_SINFO_RESP: the entries, then meta, errors, warnings. ``context``:
    cli.json_meta.Context, the command and the controller's configuration."""
    groups = _groups(partitions, nodes, per_node)
    entries = [entry(part, group, context.slurmd_port) for part, group in groups]
    return dp.dumps(dp.answer({"sinfo": entries}, context.meta()))
