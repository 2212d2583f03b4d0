"""``fsched sinfo``: partitions and nodes (``GET /api/partitions/``, ``GET /api/nodes/``).

As Slurm's sinfo, a line stands for the nodes whose printed attributes are the
same: rows are (partition, node) pairs (or nodes alone when the format shows
no partition field), grouped by the rendered values of every non-aggregate
field, then node lists folded.  ``format_sinfo`` is pure and takes the API's
objects; the tests drive it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from cli import clusters, fastargs
from cli.fmt import (
    Field,
    make_parser,
    pad,
    parse_format,
    slurm_time,
)
from slurmwords.durations import format_minutes
from slurmwords.hostlists import fold_hostlist, natural_key
from slurmwords.node_state_filter import VALID_STATES, parse_node_states
from slurmwords.version import VERSION_LINE

PROG = "sinfo"
DEFAULT_FORMAT = "%#P %.5a %.10l %.6D %.6t %N"
LONG_FORMAT = "%#P %.5a %.10l %.10s %.4r %.8h %.10g %.6D %.11T %N"
NODE_FORMAT = "%#N %.6D %#P %6t"
LONG_NODE_FORMAT = "%#N %.6D %#P %.11T %.4c %.8z %.6m %.8d %.6w %.8f %20E"
REASON_FORMAT = "%20E %9u %19H %N"
LONG_REASON_FORMAT = "%20E %12U %19H %6t %N"
SUMMARIZE_FORMAT = "%#P %.5a %.10l %.16F %N"
MIN_FIELD = 9  # Slurm's MIN_PART_FIELD_SIZE / MIN_NODE_FIELD_SIZE for "%#P" / "%#N"

# Slurm's node state numbers and flag bits: the "t" sort orders by their sum.
_BASE_NUMBER = {"UNKNOWN": 0, "DOWN": 1, "IDLE": 2, "ALLOCATED": 3, "ERROR": 4, "MIXED": 5, "FUTURE": 6}
_FLAG_BITS = {
    "CLOUD": 0x80,
    "DRAIN": 0x200,
    "COMPLETING": 0x400,
    "NOT_RESPONDING": 0x800,
    "POWERED_DOWN": 0x1000,
    "POWERING_UP": 0x4000,
    "MAINTENANCE": 0x8000,
    "REBOOT_REQUESTED": 0x10000,
    "POWER_DOWN": 0x20000,
    "POWER_UP": 0x40000,
    "POWERING_DOWN": 0x80000,
    "REBOOT_ISSUED": 0x100000,
    "PLANNED": 0x200000,
    "INVALID_REG": 0x400000,
}


def _aio(node: dict) -> str:
    """Which of sinfo's A/I/O counts a node joins: allocated (ALLOCATED, MIXED or
    COMPLETING), other (DRAIN or DOWN) or idle, from its base state and flags as Slurm
    counts them (a short state such as ``boot^`` or ``maint`` does not say)."""
    base, flags = node.get("base_state") or "", node.get("flags") or []
    if base in ("ALLOCATED", "MIXED") or "COMPLETING" in flags:
        return "A"
    if "DRAIN" in flags or base == "DOWN":
        return "O"
    return "I"


_NO_NODE = {"state_short": "n/a", "state_sinfo": "n/a"}


def state_number(node: dict) -> int:
    return _BASE_NUMBER.get(node.get("base_state") or "", 0) + sum(
        _FLAG_BITS.get(f, 0) for f in node.get("flags") or []
    )


class Row:
    """One (partition, node) pair, or a node alone; several fold into a line."""

    __slots__ = ("node", "part", "part_index")

    def __init__(self, part: dict | None, part_index: int, node: dict) -> None:
        self.part = part
        self.part_index = part_index
        self.node = node


def _part_name(row: Row, width: int, star: bool = True) -> str:
    if row.part is None:
        return "n/a"
    name = row.part.get("name", "")
    if star and row.part.get("default"):
        # Slurm cuts the name rather than the star when it does not fit.
        name = name + "*" if not width or len(name) < width else name[: width - 1] + "*"
    return name


def _avail(row: Row) -> str:
    if row.part is None:
        return "n/a"
    return str(row.part.get("state") or "UP").lower()


def _part_limit(key: str, unlimited: str = "infinite") -> Callable[[Row], str]:
    def value(row: Row) -> str:
        if row.part is None:
            return "n/a"
        return format_minutes(row.part.get(key), unlimited)

    return value


def _job_size(row: Row) -> str:
    if row.part is None:
        return "n/a"
    low = row.part.get("min_nodes") or 1
    high = row.part.get("max_nodes")
    if high is None:
        return f"{low}-infinite"
    return str(low) if low == high else f"{low}-{high}"


def _reason(row: Row) -> str:
    return row.node.get("reason") or "none"


def _reason_user(row: Row, with_uid: bool = False) -> str:
    return row.node.get("reason_user") or "Unknown"


def _n(key: str, empty: str = "") -> Callable[[Row], str]:
    return lambda row: str(row.node.get(key)) if row.node.get(key) not in (None, "") else empty


def _sct(row: Row) -> str:
    node = row.node
    sockets = node.get("sockets") or node.get("cpus") or 1
    return f"{sockets}:{node.get('cores_per_socket') or 1}:{node.get('threads_per_core') or 1}"


# type -> (header, per-row value, aggregate?) : aggregate fields are computed
# over a group of rows and are not part of the grouping key.
ROW_FIELDS: dict[str, tuple[str, Callable[[Row], str]]] = {
    "a": ("AVAIL", _avail),
    "c": ("CPUS", _n("cpus", "0")),
    "d": ("TMP_DISK", lambda r: str(r.node.get("tmp_disk") or 0)),
    "E": ("REASON", _reason),
    "f": ("AVAIL_FEATURES", _n("features", "(null)")),
    "b": ("ACTIVE_FEATURES", _n("active_features", "(null)")),
    "g": ("GROUPS", lambda r: "all" if r.part is not None else "n/a"),
    "G": ("GRES", _n("gres", "(null)")),
    "h": ("OVERSUBSCRIBE", lambda r: "NO" if r.part is not None else "n/a"),
    "H": ("TIMESTAMP", lambda r: slurm_time(r.node.get("reason_time"), "Unknown")),
    "l": ("TIMELIMIT", _part_limit("max_time")),
    "L": (
        "DEFAULTTIME",
        lambda r: (
            "n/a"
            if r.part is None or r.part.get("default_time") is None
            else format_minutes(r.part["default_time"], "infinite")
        ),
    ),
    "m": ("MEMORY", _n("real_memory", "0")),
    "O": (
        "CPU_LOAD",
        lambda r: "N/A" if r.node.get("cpu_load") is None else f"{float(r.node['cpu_load']):.2f}",
    ),
    "e": ("FREE_MEM", _n("free_mem", "N/A")),
    "p": ("PRIO_TIER", lambda r: str((r.part or {}).get("priority_tier") or 1)),
    "r": ("ROOT", lambda r: "no" if r.part is not None else "n/a"),
    "R": ("PARTITION", lambda r: _part_name(r, 0, star=False)),
    "s": ("JOB_SIZE", _job_size),
    "t": ("STATE", lambda r: r.node.get("state_short") or "unk"),
    "T": ("STATE", lambda r: r.node.get("state_sinfo") or "unknown"),
    "u": ("USER", _reason_user),
    "U": ("USER", _reason_user),
    "w": ("WEIGHT", _n("weight", "1")),
    "z": ("S:C:T", _sct),
    "X": ("SOCKETS", lambda r: _sct(r).split(":")[0]),
    "Y": ("CORES", lambda r: _sct(r).split(":")[1]),
    "Z": ("THREADS", lambda r: _sct(r).split(":")[2]),
    "I": ("PRIO_JOB_FACTOR", lambda r: str((r.part or {}).get("priority_job_factor") or 1)),
}
# sinfo -O fields without an -o letter (cli.sinfo_long_format.LONG_ONLY's kinds), as sinfo's
# print.c prints them.
ROW_FIELDS.update(
    {
        "\ue000": ("ALLOCMEM", lambda r: str(r.node.get("alloc_memory") or 0)),
        "\ue001": ("ALLOCNODES", lambda r: "all" if r.part is not None else "n/a"),
        "\ue002": ("MAX_CPUS_PER_NODE", lambda r: "UNLIMITED"),
        "\ue003": ("PREEMPT_MODE", lambda r: "OFF"),
        "\ue004": ("STATECOMPLETE", lambda r: (r.node.get("state") or "").lower() or "n/a"),
        "\ue005": ("VERSION", lambda r: r.node.get("slurmd_version") or "N/A"),
        # glibc's printf of a NULL string, as sinfo's print.c prints a node without one.
        "\ue006": ("EXTRA", lambda r: r.node.get("extra") or "(null)"),
        "\ue007": ("GRES_USED", lambda r: r.node.get("gres_used") or "(null)"),
    }
)
AGGREGATE = frozenset("NDCFAnoP")  # P is keyed separately (the partition itself)


def _cpus_aiot(rows: list[Row]) -> str:
    alloc = idle = other = total = 0
    for row in rows:
        cpus, used = int(row.node.get("cpus") or 0), int(row.node.get("cpus_alloc") or 0)
        total += cpus
        alloc += used
        if "DRAIN" in (row.node.get("flags") or []) or row.node.get("base_state") == "DOWN":
            other += cpus - used
        else:
            idle += cpus - used
    return f"{alloc}/{idle}/{other}/{total}"


def _nodes_aiot(rows: list[Row]) -> str:
    counts = {"A": 0, "I": 0, "O": 0}
    for row in rows:
        if row.node.get("name"):
            counts[_aio(row.node)] += 1
    alloc, idle, other = counts["A"], counts["I"], counts["O"]
    return f"{alloc}/{idle}/{other}/{alloc + idle + other}"


def _host(node: dict) -> str:
    """NodeHostName: the host its agent runs on (scontrol show node's), else its name."""
    return (node.get("agent") or "").split(":")[0] or node.get("name") or ""


def _aggregate(kind: str, rows: list[Row], width: int) -> str:
    names = [row.node["name"] for row in rows if row.node.get("name")]
    if kind == "n":
        return fold_hostlist(list(dict.fromkeys(_host(row.node) for row in rows if row.node.get("name"))))
    if kind in ("N", "o"):
        return fold_hostlist(names)
    if kind == "D":
        return str(len(set(names)))
    if kind == "C":
        return _cpus_aiot(rows)
    if kind == "F":
        return _nodes_aiot(rows)
    if kind == "A":
        a, i, _o, _t = _nodes_aiot(rows).split("/")
        return f"{a}/{i}"
    if kind == "P":
        return _part_name(rows[0], width)
    raise KeyError(kind)


HEADERS = {
    "N": "NODELIST",
    "n": "HOSTNAMES",
    "o": "NODE_ADDR",
    "D": "NODES",
    "C": "CPUS(A/I/O/T)",
    "F": "NODES(A/I/O/T)",
    "A": "NODES(A/I)",
    "P": "PARTITION",
}
PARTITION_KINDS = frozenset("PRalLghrspI\ue001\ue002\ue003")  # fields that need the partition dimension


def _trouble(node: dict) -> bool:
    """sinfo -R: a node with a reason, or DOWN, DRAINED/DRAINING (FAIL has no flag here)."""
    return bool(node.get("reason")) or _aio(node) == "O" or "DRAIN" in (node.get("flags") or [])


def _known(token: Field | str) -> Field | str:
    """A field of a letter sinfo does not know is printed as it was written, after sinfo's
    own line about it (src/sinfo/opts.c, _parse_format: fprintf, and sinfo goes on)."""
    if isinstance(token, str) or token.kind in ROW_FIELDS or token.kind in HEADERS:
        return token
    return f"%{'.' if token.right else ''}{'#' if token.auto else ''}{token.width or ''}{token.kind}"


def unknown_letters(fmt: str) -> list[str]:
    """The letters of ``fmt`` sinfo does not know, in their order."""
    kinds = [t.kind for t in parse_format(fmt) if isinstance(t, Field)]
    return [k for k in kinds if k not in ROW_FIELDS and k not in HEADERS]


def format_sinfo(
    partitions: list[dict],
    nodes: list[dict],
    fmt: str = DEFAULT_FORMAT,
    *,
    header: bool = True,
    per_node: bool = False,
    reasons: bool = False,
    only_partitions: list[str] | None = None,
    show_empty: bool = True,
) -> list[str]:
    """The lines ``sinfo`` prints for these API partition and node objects."""
    tokens = [_known(t) for t in parse_format(fmt)]
    fields = [t for t in tokens if isinstance(t, Field)]
    kinds = {f.kind for f in fields}
    wanted = set(only_partitions or [])
    parts = [p for p in partitions if not wanted or p.get("name") in wanted]
    if reasons:
        nodes = [n for n in nodes if _trouble(n)]
    nodes = sorted(nodes, key=lambda n: natural_key(n.get("name", "")))

    rows: list[Row] = []
    if kinds & PARTITION_KINDS:
        for index, part in enumerate(parts):
            mine = [Row(part, index, n) for n in nodes if part.get("name") in (n.get("partitions") or [])]
            if not mine and show_empty and not per_node:
                # Slurm still prints a node-less partition: 0 nodes, state n/a.
                mine = [Row(part, index, _NO_NODE)]
            rows.extend(mine)
    else:
        rows = [Row(None, 0, n) for n in nodes]

    # Group by the rendered value of every non-aggregate field (and partition).
    groups: dict[tuple, list[Row]] = {}
    for row in rows:
        key: tuple = (row.part_index if row.part is not None else -1,)
        if per_node:
            key += (row.node.get("name"),)
        key += tuple(ROW_FIELDS[f.kind][1](row) for f in fields if f.kind in ROW_FIELDS)
        if "n" in kinds:  # sinfo's hostnames_flag: a line's nodes share their host
            key += (_host(row.node),)
        groups.setdefault(key, []).append(row)
    ordered = list(groups.values())
    if per_node:
        ordered.sort(key=lambda g: natural_key(g[0].node.get("name", "")))  # Slurm's -N sort: "N"
    else:
        # Slurm's default sort "#P,-t": partition order, then decreasing state.
        ordered.sort(key=lambda g: -state_number(g[0].node))
        ordered.sort(key=lambda g: g[0].part_index)

    def value(field: Field, group: list[Row]) -> str:
        if field.kind in ROW_FIELDS:
            return ROW_FIELDS[field.kind][1](group[0])
        return _aggregate(field.kind, group, field.width)

    # "%#P" / "%#N": width of the longest value, at least 9 (Slurm's minimum).
    auto: dict[str, int] = {}
    for field in fields:
        if field.auto:
            longest = max((len(value(Field(field.kind), g)) for g in ordered), default=0)
            auto[field.kind] = max(MIN_FIELD, longest)

    lines = []
    if header:
        lines.append(_line(tokens, auto, lambda f: HEADERS.get(f.kind) or ROW_FIELDS[f.kind][0], header=True))
    for group in ordered:
        lines.append(_line(tokens, auto, lambda f, g=group: value(Field(f.kind, _width(f, auto)), g)))
    return lines


def _width(field: Field, auto: dict[str, int]) -> int:
    return auto.get(field.kind, field.width) if field.auto else field.width


def _line(tokens: list, auto: dict[str, int], value: Callable[[Field], str], header: bool = False) -> str:
    out = []
    for token in tokens:
        if isinstance(token, str):
            out.append(token)
            continue
        # Slurm never cuts the NODELIST/HOSTNAMES/NODE_ADDR titles.
        cut = not (header and token.kind in "Nno")
        out.append(pad(value(token), _width(token, auto), token.right, cut))
    return "".join(out)


# sinfo's options in --help order, as ``cli.fastargs`` reads them.
OPTIONS: tuple[fastargs.Row, ...] = (
    (("-a", "--all"), "all", "store_true", None, "show all partitions (including hidden)"),
    (("-d", "--dead"), "dead", "store_true", None, "show only non-responding nodes"),
    (("-e", "--exact"), "exact", "store_true", None, "group nodes only on exact match of configuration"),
    (("-h", "--noheader"), "noheader", "store_true", None, "no headers on output"),
    (("--help",), "help", "help", None, "show this help message and exit"),
    (("--json",), "json", "store_true", None, "produce JSON output"),
    (("-l", "--long"), "long", "store_true", None, "long output - displays more information"),
    clusters.ROW,
    (("-N", "--Node"), "Node", "store_true", None, "Node-centric format"),
    (("-n", "--nodes"), "nodes", str, "NODES", "report on specific node(s)"),
    (("-o", "--format"), "format", str, "format", "format specification"),
    (("-O", "--Format"), "format_long", str, "format", "long format specification"),
    (("-p", "--partition"), "partition", str, "PARTITION", "report on specific partition"),
    (("-r", "--responding"), "responding", "store_true", None, "report only responding nodes"),
    (("-R", "--list-reasons"), "list_reasons", "store_true", None, "list reason nodes are down or drained"),
    (("-s", "--summarize"), "summarize", "store_true", None, "report state summary only"),
    (("-t", "--states"), "states", str, "node_state", "specify the what states of nodes to view"),
    (("-V", "--version"), "version", "store_true", None, "output version information and exit"),
)


def build_parser():
    p = make_parser(PROG, usage="%(prog)s [OPTIONS]", add_help=False)
    fastargs.add_rows(p, OPTIONS)
    return p


def parse_args(argv: list[str]) -> fastargs.Namespace:
    """What ``build_parser().parse_args(argv)`` gives, without argparse when ``cli.fastargs`` can."""
    fast = fastargs.parse(argv, OPTIONS)
    return fastargs.Namespace(vars(build_parser().parse_args(argv)) if fast is None else fast)


def choose_format(ns, argv: list[str] | None = None) -> str:
    if ns.format_long is not None and (ns.format is None or _last_is_long(argv or [])):
        from cli.sinfo_long_format import to_format  # noqa: PLC0415 - only -O pays for it

        fmt, unknown = to_format(ns.format_long)
        for name in unknown:
            sys.stderr.write(f"{PROG}: error: Invalid job format specification: {name}\n")
        return fmt
    if ns.format:
        return ns.format
    if ns.list_reasons:
        return LONG_REASON_FORMAT if ns.long else REASON_FORMAT
    if ns.Node:
        return LONG_NODE_FORMAT if ns.long else NODE_FORMAT
    if ns.summarize:
        return SUMMARIZE_FORMAT
    return LONG_FORMAT if ns.long else DEFAULT_FORMAT


def _last_is_long(argv: list[str]) -> bool:
    """-o and -O set the same format in sinfo: the one given last stands."""
    long_at = max((i for i, w in enumerate(argv) if w.startswith(("-O", "--F"))), default=-1)
    short_at = max((i for i, w in enumerate(argv) if w.startswith(("-o", "--fo"))), default=-1)
    return long_at > short_at


def main(argv: list[str]) -> int:
    ns = parse_args(argv)
    if ns.version:
        sys.stdout.write(VERSION_LINE)
        return 0
    if ns.states:
        try:
            parse_node_states(ns.states)
        except ValueError as exc:
            sys.stderr.write(f"{PROG}: error: {exc}\n{PROG}: error: valid states: {VALID_STATES}\n")
            return 1
    try:
        fmt = choose_format(ns, argv)
        format_sinfo([], [], fmt)
    except ValueError as exc:
        sys.stderr.write(f"{PROG}: error: {exc}\n")
        return 1
    for letter in unknown_letters(fmt):
        sys.stderr.write(f"Invalid node format specification: {letter}\n")
    from cli.client import ApiError, Client  # noqa: PLC0415

    client = Client()
    cluster = clusters.local_cluster(client, ns.clusters, PROG) if ns.clusters else None
    # sinfo loads every partition and keeps those of -p itself (src/sinfo/sinfo.c): a name
    # no partition has shows nothing, no error.
    params = {"name": ns.nodes, "state": ns.states}
    try:
        partitions = client.get_all("/api/partitions/")
        nodes = client.get_all("/api/nodes/", params)
    except ApiError as exc:
        sys.stderr.write(f"slurm_load_partitions: {exc.message}\n")
        return 1
    only = ns.partition.split(",") if ns.partition else None
    if only:
        nodes = [n for n in nodes if set(n.get("partitions") or []) & set(only)]
    if ns.dead or ns.responding:
        # sinfo's --dead / --responding: by the NOT_RESPONDING flag, after the other filters.
        nodes = [n for n in nodes if ("NOT_RESPONDING" in (n.get("flags") or [])) == bool(ns.dead)]
        if ns.dead and ns.responding:
            nodes = []
    if ns.json:
        from cli import json_meta, sinfo_json  # noqa: PLC0415 - only --json output pays for it

        kept = [p for p in partitions if not only or p.get("name") in only]
        context = json_meta.Context(client, ["sinfo", *argv])
        sys.stdout.write(sinfo_json.render(kept, nodes, context, per_node=bool(ns.Node)))
        return 0
    lines = format_sinfo(
        partitions,
        nodes,
        fmt,
        header=not ns.noheader,
        per_node=ns.Node,
        reasons=ns.list_reasons,
        only_partitions=only,
        show_empty=not (ns.nodes or ns.states or ns.list_reasons or ns.dead or ns.responding),
    )
    if cluster:  # sinfo prints it even with --noheader, unlike squeue
        lines.insert(0, f"CLUSTER: {cluster}")
    if ns.long and not ns.noheader:  # sinfo's print_date()
        import time  # noqa: PLC0415

        lines.insert(0, time.strftime("%a %b %d %H:%M:%S %Y"))
    sys.stdout.write("".join(line + "\n" for line in lines))
    return 0
