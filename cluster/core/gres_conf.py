"""``GresTypes``, the nodes' ``Gres=`` and ``gres.conf`` (next to slurm.conf), checked together.

Pure: no Django.  Called by the slurm.conf parser once the nodes are known; every problem
is a ``file:line`` :class:`~cluster.core.slurmconf.ConfigProblem`.

gres.conf as Slurm reads it (gres.conf(5)):

* ``AutoDetect=off`` (alone, or on a node's line).  The other values (``nvml``, ``rsmi``,
  ``oneapi``, ``nrt``, ``nvidia``) ask a library to find the devices: fsched has none, so
  they are refused rather than silently ignored;
* ``[NodeName=<hostlist>] Name=<gres> [Type=<type>] [File=<path or path[0-3]>] [Count=N]``;
  a line without ``NodeName`` is for every node that has that GRES.  ``File`` names one
  device per file (ranges expand as hostlists do; a relative path, which Slurm does not
  take, is read from slurm.conf's directory, as an Include is); ``Count`` defaults to the files'
  number and must agree with it.  ``Cores``, ``Links``, ``Flags`` and ``CPUs`` are
  accepted and not used;
* each node's count of a GRES in gres.conf must be what its ``Gres=`` says (Slurm marks
  such a node invalid; here the configuration is refused, naming the line).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from cluster.core.gres import DEVICE_NAMES, GresItem, parse_node_gres
from slurmwords.hostlists import split_top

_KEYS = {
    k.lower(): k
    for k in (
        "NodeName",
        "Name",
        "Type",
        "File",
        "Count",
        "AutoDetect",
        "Cores",
        "CPUs",
        "Links",
        "Flags",
        "MultipleFiles",
    )
}
_UNUSED = frozenset({"Cores", "CPUs", "Links", "Flags"})


@dataclass(frozen=True, slots=True)
class GresDevice:
    """One device of a node: its GRES, type, index (per name, from 0) and file."""

    name: str
    type: str
    index: int
    file: str = ""


@dataclass(frozen=True)
class NodeGresConf:
    """A node's GRES in device order (gres.conf's when it describes the node)."""

    items: tuple[GresItem, ...] = ()
    devices: tuple[GresDevice, ...] = ()


def parse_gres_types(value: str) -> frozenset[str]:
    names = [n.strip() for n in value.split(",") if n.strip()]
    for name in names:
        if not name.replace("_", "").replace("-", "").isalnum():
            raise ValueError(f"bad GRES name {name!r}")
    return frozenset(names)


def check_node_gres(text: str, gres_types: frozenset[str]) -> tuple[GresItem, ...]:
    """A node's ``Gres=`` against ``GresTypes``; ``ValueError`` naming the problem."""
    items = parse_node_gres(text)
    for item in items:
        if item.name not in gres_types:
            raise ValueError(f"{item.name} is not in GresTypes")
    return items


@dataclass
class _Record:
    source: object  # ConfLine: .problem(), .source
    nodes: list[str] | None  # None: every node
    name: str
    type: str
    files: list[str]
    count: int


def load_gres_conf(
    lines: Iterable,  # ConfLine of gres.conf
    node_gres: Mapping[str, tuple[GresItem, ...]],
    gres_types: frozenset[str],
    *,
    expand: Callable[[str], list[str]],
    errors: list,
    known: frozenset[str] | None = None,
    base: Path | None = None,
) -> dict[str, NodeGresConf]:
    """Every node's GRES in device order, with the files gres.conf names; problems are
    appended to ``errors`` (each names its gres.conf line)."""
    records: list[_Record] = []
    for line in lines:
        values: dict[str, str] = {}
        bad = False
        for key, value in line.pairs:
            canon = _KEYS.get(key.lower())
            if canon is None:
                errors.append(line.problem(f"{key}={value}: unknown gres.conf parameter"))
                bad = True
                continue
            values[canon] = value
        if bad:
            continue
        auto = values.get("AutoDetect")
        if auto is not None and auto.strip().lower() != "off":
            errors.append(
                line.problem(
                    f"AutoDetect={auto}: not supported (fsched detects no devices; use AutoDetect=off)"
                )
            )
            continue
        if "Name" not in values:
            if set(values) - {"AutoDetect", "NodeName"}:
                errors.append(line.problem("Name= is required"))
            continue
        record = _record(line, values, gres_types, expand, errors, base=base)
        if record is not None:
            records.append(record)
    return _per_node(records, node_gres, errors, frozenset(node_gres) if known is None else known)


def _record(
    line, values: dict[str, str], gres_types: frozenset[str], expand, errors: list, *, base: Path | None
) -> _Record | None:
    name = values["Name"].strip()
    if name not in gres_types:
        errors.append(line.problem(f"Name={name}: not in slurm.conf's GresTypes"))
        return None
    nodes = None
    if "NodeName" in values:
        try:
            nodes = expand(values["NodeName"])
        except ValueError as exc:
            errors.append(line.problem(f"NodeName={values['NodeName']}: {exc}"))
            return None
    files: list[str] = []
    if "File" in values:
        try:
            files = _expand_file(values["File"], expand)
            if base is not None:  # fsched: a relative File is in the configuration directory
                files = [str(base / f) if not f.startswith("/") else f for f in files]
        except ValueError as exc:
            errors.append(line.problem(f"File={values['File']}: {exc}"))
            return None
    count = len(files) if files else 1
    if "Count" in values:
        try:
            items = parse_node_gres(f"{name}:{values['Count']}")
        except ValueError:
            errors.append(line.problem(f"Count={values['Count']}: not a count"))
            return None
        given = items[0].count
        if files and given != len(files):
            errors.append(line.problem(f"Count={given} does not match the {len(files)} devices of File="))
            return None
        count = given
    if name in DEVICE_NAMES and not files and "Count" not in values:
        errors.append(line.problem(f"Name={name}: needs File= (or Count=)"))
        return None
    return _Record(line, nodes, name, values.get("Type", "").strip(), files, count)


def _expand_file(value: str, expand: Callable[[str], list[str]]) -> list[str]:
    """``/dev/nvidia[0-3]`` or ``/dev/nvidia0,/dev/nvidia1``: the files, one per device."""
    out: list[str] = []
    for part in [p.strip() for p in split_top(value) if p.strip()]:
        head, sep, tail = part.rpartition("/")
        if not tail:
            raise ValueError("no file name")
        out += [f"{head}{sep}{name}" for name in expand(tail)] if "[" in tail else [part]
    return out


def _per_node(
    records: list[_Record], node_gres: Mapping[str, tuple[GresItem, ...]], errors: list, known: frozenset[str]
) -> dict[str, NodeGresConf]:
    out: dict[str, NodeGresConf] = {}
    for rec in records:
        if rec.nodes is not None:
            unknown = [n for n in rec.nodes if n not in known]
            if unknown:
                errors.append(
                    rec.source.problem(f"NodeName: {', '.join(unknown[:3])} not defined in slurm.conf")
                )
    for node, items in node_gres.items():
        mine = [
            r
            for r in records
            if (r.nodes is None and any(i.name == r.name for i in items))
            or (r.nodes is not None and node in r.nodes)
        ]
        if not mine:
            out[node] = NodeGresConf(items, devices_of(items, []))
            continue
        ordered: list[GresItem] = []
        files: list[tuple[GresItem, list[str]]] = []
        for rec in mine:
            ordered.append(GresItem(rec.name, rec.type, rec.count))
            files.append((ordered[-1], rec.files))
        problem = _mismatch(items, ordered)
        if problem:
            errors.append(mine[0].source.problem(f"{problem} for node {node}"))
            continue
        # Names gres.conf does not describe keep their Gres= order, after the described ones.
        described = {i.name for i in ordered}
        ordered += [i for i in items if i.name not in described]
        out[node] = NodeGresConf(tuple(_merge(ordered)), devices_of(ordered, files))
    return out


def _mismatch(configured: tuple[GresItem, ...], described: list[GresItem]) -> str:
    names = {i.name for i in described}
    for name in sorted(names):
        want = sum(i.count for i in configured if i.name == name)
        got = sum(i.count for i in described if i.name == name)
        if want != got:
            return f"gres.conf has {name}:{got} but Gres= says {name}:{want}"
        typed = {i.type for i in configured if i.name == name and i.type}
        for kind in sorted(typed):
            want_t = sum(i.count for i in configured if i.key == (name, kind))
            got_t = sum(i.count for i in described if i.key == (name, kind))
            if want_t != got_t:
                return f"gres.conf has {name}:{kind}:{got_t} but Gres= says {name}:{kind}:{want_t}"
    return ""


def _merge(items: list[GresItem]) -> list[GresItem]:
    """Adjacent lines of the same name and type as one item (two File lines of a100)."""
    out: list[GresItem] = []
    for item in items:
        if out and out[-1].key == item.key:
            out[-1] = GresItem(item.name, item.type, out[-1].count + item.count)
        else:
            out.append(item)
    return out


def devices_of(
    items: Iterable[GresItem], files: list[tuple[GresItem, list[str]]] | None = None
) -> tuple[GresDevice, ...]:
    by_item = {id(item): f for item, f in files or ()}
    counter: dict[str, int] = {}
    out: list[GresDevice] = []
    for item in items:
        if item.name not in DEVICE_NAMES:
            continue
        names = by_item.get(id(item), [])
        for k in range(item.count):
            index = counter.get(item.name, 0)
            counter[item.name] = index + 1
            out.append(GresDevice(item.name, item.type, index, names[k] if k < len(names) else ""))
    return tuple(out)


def gres_conf_path(conf_dir: str | Path) -> Path:
    return Path(conf_dir) / "gres.conf"
