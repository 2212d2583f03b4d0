"""Changeable node features (``NodeFeaturesPlugins=node_features/helpers``): pure core.

Slurm's power_save.html, "Node Features": features named in ``helpers.conf`` are
*changeable*.  A powered-down node has them available but not active; a job asking for
them gets powered-down nodes that have them available, and they become active at
allocation.  They stay active until the node powers down, when they are reset.  Every
other feature is always active.

``helpers.conf`` (read from the directory of ``slurm.conf``)::

    NodeName=cloud[1-5] Feature=f1,f2 Helper=/bin/true
    Feature=f9 Helper=/usr/sbin/f9_helper        # every node
    BootTime=300
    ExecTime=10
    MutuallyExclusive=f1,f2
    AllowUserBoot=alice,bob

Problems are :class:`ConfigProblem` with the file and line, all reported at once.
No Django and no clock: the adapter (``power.services``) calls these functions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from cluster.core.scheduler import split_features
from cluster.core.slurmconf import (
    ConfigError,
    ConfigProblem,
    ConfLine,
    SlurmConfig,
    parse_nodeset,
    read_conf_lines,
)

PLUGIN = "node_features/helpers"  # the only NodeFeaturesPlugins value power_save.html names
HELPERS_FILE = "helpers.conf"
_FEATURE = re.compile(r"^[A-Za-z0-9_.:+\-]+$")  # what --constraint can name


@dataclass(frozen=True)
class HelperLine:
    """One ``[NodeName=] Feature= Helper=`` line; ``nodes`` None means every node."""

    nodes: frozenset[str] | None
    features: frozenset[str]
    helper: str
    source: str


@dataclass(frozen=True)
class NodeFeatures:
    """A loaded helpers.conf."""

    lines: tuple[HelperLine, ...] = ()
    boot_time: int | None = None
    exec_time: int | None = None
    mutually_exclusive: frozenset[str] = frozenset()
    allow_user_boot: tuple[str, ...] = ()

    def changeable(self, node: str) -> frozenset[str]:
        out: set[str] = set()
        for line in self.lines:
            if line.nodes is None or node in line.nodes:
                out |= line.features
        return frozenset(out)


def join_features(features: Iterable[str], order: str = "") -> str:
    """Comma-joined, in the order of ``order`` (the node's Feature= list) then sorted."""
    ranked = [f for f in order.split(",") if f]
    fs = set(features)
    return ",".join([f for f in ranked if f in fs] + sorted(fs - set(ranked)))


# --------------------------------------------------------------------------- loading


def _plugin_line(conf: SlurmConfig) -> ConfLine | None:
    found = None
    for line in conf.lines:
        if line.key.lower() == "nodefeaturesplugins":
            found = line
    return found


def load_node_features(
    conf: SlurmConfig, *, program_check: Callable[[str], str | None] | None = None
) -> NodeFeatures | None:
    """The changeable features of ``conf``: None when no NodeFeaturesPlugins is set.

    :class:`ConfigError` for an unknown plugin, a missing or bad helpers.conf, or nodes in
    helpers.conf that slurm.conf does not define.
    """
    value = conf.option("NodeFeaturesPlugins")
    if value is None or not value.strip():
        return None
    plugins = [p.strip() for p in value.split(",") if p.strip()]
    bad = [p for p in plugins if p != PLUGIN]
    if bad:
        line = _plugin_line(conf)
        where = (line.file, line.line) if line else (conf.files[0] if conf.files else "slurm.conf", 0)
        raise ConfigError(
            [ConfigProblem(*where, f"NodeFeaturesPlugins: unsupported plugin {','.join(bad)} (use {PLUGIN})")]
        )
    path = Path(conf.conf_dir or ".") / HELPERS_FILE
    problems: list[ConfigProblem] = []
    lines = list(read_conf_lines(path, problems=problems))
    result = parse_helpers_lines(
        lines, problems, known_nodes={n.name for n in conf.nodes}, program_check=program_check
    )
    if problems:
        raise ConfigError(problems)
    return result


def parse_helpers_lines(
    lines: Iterable[ConfLine],
    problems: list[ConfigProblem],
    *,
    known_nodes: Iterable[str] | None = None,
    program_check: Callable[[str], str | None] | None = None,
) -> NodeFeatures:
    """helpers.conf lines to :class:`NodeFeatures`; problems appended to ``problems``."""
    known = set(known_nodes) if known_nodes is not None else None
    helper_lines: list[HelperLine] = []
    boot_time = exec_time = None
    exclusive: frozenset[str] = frozenset()
    users: tuple[str, ...] = ()
    owner: dict[tuple[str | None, str], str] = {}  # (node or None, feature) -> source
    for line in lines:
        key = line.key.lower()
        if key in ("nodename", "feature"):
            item = _helper_line(line, problems, known, program_check)
            if item is None:
                continue
            for node in sorted(item.nodes) if item.nodes is not None else [None]:
                for f in sorted(item.features):
                    first = owner.get((node, f)) or owner.get((None, f))
                    if first is not None:
                        who = f" of {node}" if node else ""
                        problems.append(line.problem(f"feature {f}{who} already has a helper ({first})"))
                    owner[(node, f)] = line.source
            helper_lines.append(item)
        elif key in ("boottime", "exectime"):
            if len(line.pairs) > 1:
                problems.append(line.problem(f"{line.key}: one Key=Value per line"))
            elif not re.fullmatch(r"[0-9]+", line.value.strip()):
                problems.append(line.problem(f"{line.key}={line.value}: not a number of seconds"))
            elif key == "boottime":
                boot_time = int(line.value)
            else:
                exec_time = int(line.value)
        elif key == "mutuallyexclusive":
            exclusive = split_features(line.value)
            if len(exclusive) < 2:
                problems.append(line.problem("MutuallyExclusive needs at least two features"))
        elif key == "allowuserboot":
            users = tuple(u.strip() for u in line.value.split(",") if u.strip())
        else:
            problems.append(line.problem(f"unknown key {line.key}"))
    return NodeFeatures(tuple(helper_lines), boot_time, exec_time, exclusive, users)


def _helper_line(
    line: ConfLine,
    problems: list[ConfigProblem],
    known: set[str] | None,
    program_check: Callable[[str], str | None] | None,
) -> HelperLine | None:
    allowed = {"nodename", "feature", "helper", "flags"}
    before = len(problems)
    for k, _ in line.pairs:
        if k.lower() not in allowed:
            problems.append(line.problem(f"unknown key {k}"))
    nodes: frozenset[str] | None = None
    if line.key.lower() == "nodename":
        try:
            nodes = frozenset(parse_nodeset(line.value))
        except ValueError as exc:
            problems.append(line.problem(f"NodeName={line.value}: {exc}"))
        else:
            missing = nodes - known if known is not None else set()
            if missing:
                problems.append(
                    line.problem(
                        f"NodeName={line.value}: nodes not in slurm.conf: {','.join(sorted(missing))}"
                    )
                )
    features = split_features(line.get("Feature"))
    if not features:
        problems.append(line.problem("Feature= is required"))
    bad = sorted(f for f in features if not _FEATURE.match(f))
    if bad:
        problems.append(line.problem(f"invalid feature name {','.join(bad)}"))
    helper = (line.get("Helper") or "").strip()
    if not helper:
        problems.append(line.problem("Helper= is required"))
    elif not helper.startswith("/"):
        problems.append(line.problem(f"Helper={helper}: must be an absolute path"))
    elif program_check is not None and (why := program_check(helper)):
        problems.append(line.problem(f"Helper={helper}: {why}"))
    if len(problems) > before:
        return None
    return HelperLine(nodes, features, helper, line.source)


# --------------------------------------------------------------------------- decisions


def active_when_powered_down(available: frozenset[str], changeable: frozenset[str]) -> frozenset[str]:
    """Powered down, a node's changeable features are available but not active."""
    return available - changeable


def active_at_load(
    available: frozenset[str], active: frozenset[str], changeable: frozenset[str], *, powered_down: bool
) -> frozenset[str]:
    """After a (re)configure: non-changeable features are active; changeable ones stay
    active only on a powered-up node that had them and still has them available."""
    if powered_down:
        return active_when_powered_down(available, changeable)
    return (available - changeable) | (active & changeable & available)


def constraint_features(
    available: frozenset[str], active: frozenset[str], *, powered_down: bool
) -> frozenset[str]:
    """What ``--constraint`` is matched against: available features on a powered-down
    node (they are made active when it is allocated), active features otherwise."""
    return available if powered_down else active


def active_at_allocation(
    alternatives: tuple[frozenset[str], ...] | None,
    available: frozenset[str],
    active: frozenset[str],
    changeable: frozenset[str],
) -> frozenset[str]:
    """A powered-down node allocated to a job with this constraint (``parse_constraint``
    alternatives): the changeable features of the first alternative it can satisfy become
    active.  An alternative already active wins (no change).  Mutual exclusion is not
    checked here: the node boots fresh, with nothing changeable active."""
    if not alternatives:
        return active
    if any(alt <= active for alt in alternatives):
        return active
    for alt in alternatives:
        if alt <= available:
            return active | (alt & changeable)
    return active


def reported_features_problem(
    reported: frozenset[str], active: frozenset[str], changeable: frozenset[str]
) -> str | None:
    """The reason an invalid registration gets when a Helper's reported active features
    miss some of the node's active changeable ones (worded as slurmctld words it), or None."""
    if reported_features_ok(reported, active, changeable):
        return None
    return (
        f"Reported active features ({','.join(sorted(reported))}) are not a superset of "
        f"currently active changeable features ({','.join(sorted(active & changeable))})"
    )


def reported_features_ok(
    reported: frozenset[str], active: frozenset[str], changeable: frozenset[str]
) -> bool:
    """A Helper that reports active features must report at least the node's active
    changeable features (Slurm's power_save.html); /bin/true reports nothing, and the
    controller decides."""
    return not reported or (active & changeable) <= reported
