"""Power-saving configuration read from a parsed ``slurm.conf`` (Slurm's power_save.html).

Pure module: no Django, no clock.  :func:`power_config` takes the
:class:`cluster.core.slurmconf.SlurmConfig` the controller already parsed, validates every
power key, and returns a frozen :class:`PowerConfig`; all problems are raised together
as one :class:`cluster.core.slurmconf.ConfigError` with ``file:line: reason`` each, so a bad
file is refused before anything changes.

What is read (power_save.html, "Configuration"):

* ``SuspendProgram``, ``ResumeProgram``, ``ResumeFailProgram``: an absolute path to a
  program, or the name of a ``PowerAction=<name> Location=slurmctld|slurmd
  Program="<path> [args]"`` line.  A power-up action (ResumeProgram) and
  ResumeFailProgram must run on the controller: a powered-down node runs no slurmd.
* ``SuspendTime`` (global, partition, node; ``INFINITE`` or a negative number disables),
  ``SuspendTimeout`` (default 30) and ``ResumeTimeout`` (default 60), global or per
  partition; ``ResumeRate`` (default 300) and ``SuspendRate`` (default 60) per minute,
  0 = unlimited.
* ``SuspendExcNodes`` (with ``nid[10-20]:4`` counts), ``SuspendExcParts``,
  ``SuspendExcStates``; ``ReconfigFlags=KeepPowerSaveSettings``.
* Partition ``PowerDownOnIdle``; ``SlurmctldParameters`` ``power_save_interval``,
  ``power_save_min_interval``, ``idle_on_node_suspend``, ``fast_power_up_launch``,
  ``node_reg_mem_percent``, ``cloud_dns``; ``DebugFlags=Power``.

Enabling (power_save.html, "Overview"): automatic power saving is on when both programs
are defined and valid, the rates are >= 0 and some finite SuspendTime exists (global,
partition or node).  The timeouts always have a value (their defaults count as "defined":
the Hybrid Cluster example of power_save.html sets neither).  A finite SuspendTime without
both programs is refused, as are negative rates, unknown PowerAction names and a slurmd
power-up action.
Manual power saving needs none of this: :attr:`PowerConfig.ready` says whether the
programs exist, and a manual request without them only changes node states.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cluster.core.hostlists import fold
from cluster.core.slurmconf import (
    OTHER_LINE_KEYS,
    ConfigError,
    ConfigProblem,
    ConfLine,
    SlurmConfig,
    parse_nodeset,
    split_hostlist,
)
from power.core.features import NodeFeatures

INFINITE = -1  # SuspendTime disabled

DEFAULT_SUSPEND_TIME = INFINITE
DEFAULT_SUSPEND_TIMEOUT = 30
DEFAULT_RESUME_TIMEOUT = 60
DEFAULT_RESUME_RATE = 300
DEFAULT_SUSPEND_RATE = 60
DEFAULT_POWER_SAVE_INTERVAL = 10
DEFAULT_POWER_SAVE_MIN_INTERVAL = 0
DEFAULT_NODE_REG_MEM_PERCENT = 100
DEFAULT_CLOUD_NODE_REG_MEM_PERCENT = 90  # State=CLOUD nodes, when not configured

LOCATIONS = ("slurmctld", "slurmd")

# SuspendExcStates words (Slurm's power_save.html, "SuspendExcStates").
EXC_STATES = (
    "CLOUD", "DEGRADED", "DOWN", "DRAIN", "DYNAMIC_FUTURE", "DYNAMIC_NORM", "FAIL", "INVALID_REG",
    "MAINTENANCE", "NOT_RESPONDING", "PLANNED", "RESERVED",
)  # fmt: skip

_POWER_ACTION_KEYS = {"poweraction": "PowerAction", "location": "Location", "program": "Program"}
_INFINITE_WORDS = frozenset({"INFINITE", "UNLIMITED"})


# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class PowerProgram:
    """A program to run for a power operation: a path, or a named PowerAction.

    ``argv`` is the configured command split like a shell would (``Program="/x -h now"``
    gives ``("/x", "-h", "now")``); Slurm appends the node names after it.
    """

    argv: tuple[str, ...]
    location: str = "slurmctld"
    action: str | None = None  # PowerAction name, None for a plain path
    source: str = ""  # file:line where it was defined

    @property
    def path(self) -> str:
        return self.argv[0]

    @property
    def label(self) -> str:
        return self.action or self.path

    def invocations(self, nodes: Sequence[str]) -> tuple[Invocation, ...]:
        """How to run it for ``nodes`` (the table under "PowerAction" in Slurm's power_save.html).

        On the controller: once, with the nodes as one hostlist argument.  On slurmd:
        once per node, on that node, with its name as the argument and in
        ``SLURM_NODE_NAME``.
        """
        if not nodes:
            return ()
        if self.location == "slurmd":
            return tuple(
                Invocation(host=n, argv=(*self.argv, n), env=(("SLURM_NODE_NAME", n),)) for n in nodes
            )
        return (Invocation(host=None, argv=(*self.argv, fold(nodes))),)


@dataclass(frozen=True)
class Invocation:
    """One process to start: ``host=None`` on the controller, else on that node's agent."""

    host: str | None
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class ExcNodeSet:
    """One ``SuspendExcNodes`` element: ``count=None`` excludes every node of the set;
    a count keeps at least that many usable nodes of it powered up."""

    nodes: frozenset[str]
    count: int | None = None


@dataclass(frozen=True)
class Exclusions:
    """SuspendExcNodes / SuspendExcParts / SuspendExcStates (updatable with scontrol)."""

    node_sets: tuple[ExcNodeSet, ...] = ()
    parts: frozenset[str] = frozenset()
    states: frozenset[str] = frozenset()

    @property
    def nodes(self) -> frozenset[str]:
        """Nodes excluded outright (the sets without a count)."""
        out: set[str] = set()
        for s in self.node_sets:
            if s.count is None:
                out |= s.nodes
        return frozenset(out)

    @property
    def counted(self) -> tuple[ExcNodeSet, ...]:
        return tuple(s for s in self.node_sets if s.count is not None)


@dataclass(frozen=True)
class PartitionPower:
    """A partition's power settings; ``None`` = not set there."""

    name: str
    suspend_time: int | None = None  # seconds, INFINITE = -1
    suspend_timeout: int | None = None
    resume_timeout: int | None = None
    power_down_on_idle: bool = False


@dataclass(frozen=True)
class PowerConfig:
    suspend_program: PowerProgram | None = None
    resume_program: PowerProgram | None = None
    resume_fail_program: PowerProgram | None = None
    actions: Mapping[str, PowerProgram] = field(default_factory=dict, hash=False)
    suspend_time: int = DEFAULT_SUSPEND_TIME
    suspend_timeout: int = DEFAULT_SUSPEND_TIMEOUT
    resume_timeout: int = DEFAULT_RESUME_TIMEOUT
    resume_rate: int = DEFAULT_RESUME_RATE
    suspend_rate: int = DEFAULT_SUSPEND_RATE
    exclusions: Exclusions = field(default_factory=Exclusions)
    keep_power_save_settings: bool = False
    partitions: Mapping[str, PartitionPower] = field(default_factory=dict, hash=False)
    # Per-node SuspendTime from NodeName lines (seconds, INFINITE = -1); absent = not set.
    node_suspend_time: Mapping[str, int] = field(default_factory=dict, hash=False)
    power_save_interval: int = DEFAULT_POWER_SAVE_INTERVAL
    power_save_min_interval: int = DEFAULT_POWER_SAVE_MIN_INTERVAL
    idle_on_node_suspend: bool = False
    fast_power_up_launch: bool = False
    node_reg_mem_percent: int | None = None  # None: 100, or 90 for CLOUD nodes
    # SlurmdParameters=config_overrides: nodes are taken as configured, whatever they report.
    config_overrides: bool = False
    cloud_dns: bool = False
    debug_power: bool = False
    warnings: tuple[ConfigProblem, ...] = ()
    # helpers.conf when NodeFeaturesPlugins=node_features/helpers (power.core.features).
    node_features: NodeFeatures | None = None

    @property
    def ready(self) -> bool:
        """The "rest of the power save configuration" is valid: both programs exist.

        (Rates and intervals are validated at load, so a loaded config has valid ones.)
        A runtime per-node SuspendTime needs this (Slurm's power_save.html, "Overview").
        """
        return self.suspend_program is not None and self.resume_program is not None

    @property
    def auto_enabled(self) -> bool:
        """Automatic power saving is on at load / reconfigure (power_save.html, "Overview")."""
        return self.ready and self.any_finite_suspend_time

    @property
    def any_finite_suspend_time(self) -> bool:
        values = [self.suspend_time]
        values += [p.suspend_time for p in self.partitions.values() if p.suspend_time is not None]
        values += list(self.node_suspend_time.values())
        return any(v >= 0 for v in values)

    def action(self, name: str) -> PowerProgram | None:
        return self.actions.get(name)

    def _part_values(self, partitions: Iterable[str], attr: str) -> list[int]:
        out = []
        for name in partitions:
            p = self.partitions.get(name)
            value = getattr(p, attr) if p is not None else None
            if value is not None:
                out.append(value)
        return out

    def effective_suspend_time(self, node_value: int | None, partitions: Iterable[str]) -> int:
        """SuspendTime for a node: the node's own value, else the highest of its
        partitions' (INFINITE is highest), else the global one.  -1 = INFINITE.

        ``node_value`` is the node's current per-node value (from its NodeName line or
        ``scontrol update``); None means not set.
        """
        if node_value is not None:
            return INFINITE if node_value < 0 else node_value
        values = self._part_values(partitions, "suspend_time")
        if values:
            return INFINITE if any(v < 0 for v in values) else max(values)
        return self.suspend_time

    def effective_resume_timeout(self, partitions: Iterable[str]) -> int:
        """The highest ResumeTimeout of the node's partitions, else the global one."""
        values = self._part_values(partitions, "resume_timeout")
        return max(values) if values else self.resume_timeout

    def effective_suspend_timeout(self, partitions: Iterable[str]) -> int:
        values = self._part_values(partitions, "suspend_timeout")
        return max(values) if values else self.suspend_timeout

    def reg_mem_percent(self, *, cloud: bool) -> int:
        if self.node_reg_mem_percent is not None:
            return self.node_reg_mem_percent
        return DEFAULT_CLOUD_NODE_REG_MEM_PERCENT if cloud else DEFAULT_NODE_REG_MEM_PERCENT


# --------------------------------------------------------------------------- helpers


def parse_seconds(value: str, *, allow_infinite: bool) -> int:
    """Whole seconds; with ``allow_infinite``, INFINITE or any negative number is -1."""
    v = value.strip()
    if allow_infinite and v.upper() in _INFINITE_WORDS:
        return INFINITE
    if not re.fullmatch(r"-?[0-9]+", v):
        raise ValueError("not a number of seconds" + (" or INFINITE" if allow_infinite else ""))
    n = int(v)
    if n < 0:
        if allow_infinite:
            return INFINITE
        raise ValueError("must be at least 0")
    return n


def parse_rate(value: str) -> int:
    v = value.strip()
    if not re.fullmatch(r"-?[0-9]+", v):
        raise ValueError("not an integer")
    n = int(v)
    if n < 0:
        raise ValueError("must be >= 0 (0 = no limit)")
    return n


def parse_exc_nodes(value: str, known: Iterable[str] | None = None) -> tuple[ExcNodeSet, ...]:
    """``nid[10-20]:4,nid[80-90]:2,tux5``: hostlists with an optional ``:count`` each.

    The count applies to the hostlist element it follows.  ``ValueError`` for a bad
    hostlist or count, or (when ``known`` is given) nodes that do not exist.  Also what
    ``scontrol update SuspendExcNodes=`` uses.
    """
    known_set = set(known) if known is not None else None
    out: list[ExcNodeSet] = []
    if not value.strip() or value.strip().upper() == "NONE":
        return ()
    for part in split_hostlist(value):
        if not part:
            raise ValueError("empty element")
        expr, count = part, None
        m = re.fullmatch(r"(.*?):([^:\]]*)", part)
        if m is not None:
            expr, raw = m.group(1), m.group(2)
            if not re.fullmatch(r"[0-9]+", raw) or int(raw) < 1:
                raise ValueError(f"{part}: count must be a positive integer")
            count = int(raw)
        nodes = frozenset(parse_nodeset(expr))
        if not nodes:
            raise ValueError(f"{part}: no node name")
        if known_set is not None:
            missing = nodes - known_set
            if missing:
                raise ValueError(f"{part}: nodes not defined: {fold(missing)}")
        out.append(ExcNodeSet(nodes, count))
    return tuple(out)


def parse_exc_parts(value: str, known: Iterable[str] | None = None) -> frozenset[str]:
    names = [p.strip() for p in value.split(",") if p.strip()]
    if len(names) == 1 and names[0].upper() == "NONE":
        return frozenset()
    if known is not None:
        missing = sorted(set(names) - set(known))
        if missing:
            raise ValueError(f"no such partition: {','.join(missing)}")
    return frozenset(names)


def parse_exc_states(value: str) -> frozenset[str]:
    words = [w.strip().upper() for w in value.split(",") if w.strip()]
    if len(words) == 1 and words[0] == "NONE":
        return frozenset()
    bad = [w for w in words if w not in EXC_STATES]
    if bad:
        raise ValueError(f"invalid state {','.join(bad)} (valid: {', '.join(EXC_STATES)})")
    return frozenset(words)


def exclusions_after_reconfigure(current: Exclusions, new: PowerConfig) -> Exclusions:
    """ReconfigFlags=KeepPowerSaveSettings keeps the running SuspendExc* (perhaps changed
    with scontrol); otherwise the file's values replace them."""
    return current if new.keep_power_save_settings else new.exclusions


def executable_check(path: str) -> str | None:
    """A filesystem check for :func:`power_config` (the adapter passes it; tests may not):
    the reason ``path`` cannot be run, or None."""
    p = Path(path)
    if not p.is_file():
        return "no such file"
    if not os.access(p, os.X_OK):
        return "not executable"
    return None


# --------------------------------------------------------------------------- building


class _Problems:
    def __init__(self, config: SlurmConfig) -> None:
        self.errors: list[ConfigProblem] = []
        self.warnings: list[ConfigProblem] = []
        self.by_source: dict[str, ConfLine] = {}
        self.option_line: dict[str, ConfLine] = {}
        records = {"nodename", "partitionname", *(k.lower() for k in OTHER_LINE_KEYS)}
        for line in config.lines:
            self.by_source.setdefault(line.source, line)
            if line.key.lower() in records:
                continue
            for key, _ in line.pairs:
                self.option_line[key.lower()] = line  # the last one wins, as for the value
        self.top = config.files[0] if config.files else "slurm.conf"

    def at_option(self, key: str, message: str, *, warning: bool = False) -> None:
        line = self.option_line.get(key.lower())
        problem = line.problem(message) if line else ConfigProblem(self.top, 0, message)
        (self.warnings if warning else self.errors).append(problem)

    def at_source(self, source: str, message: str, *, warning: bool = False) -> None:
        line = self.by_source.get(source)
        if line is not None:
            problem = line.problem(message)
        else:
            name, _, number = source.rpartition(":")
            problem = ConfigProblem(name or self.top, int(number) if number.isdigit() else 0, message)
        (self.warnings if warning else self.errors).append(problem)


def _power_actions(config: SlurmConfig, probs: _Problems) -> dict[str, PowerProgram]:
    actions: dict[str, PowerProgram] = {}
    for line in config.other_lines:
        if line.key.lower() != "poweraction":
            continue
        name = line.value.strip()
        prefix = f"PowerAction={name}"
        seen: dict[str, str] = {}
        ok = True
        for key, value in line.pairs:
            canon = _POWER_ACTION_KEYS.get(key.lower())
            if canon is None:
                probs.errors.append(line.problem(f"{prefix}: unknown parameter {key}"))
                ok = False
            else:
                seen[canon] = value
        if not name:
            probs.errors.append(line.problem("PowerAction=: an action needs a name"))
            continue
        if name in actions:
            probs.errors.append(
                line.problem(f"{prefix}: duplicate PowerAction (first defined at {actions[name].source})")
            )
            continue
        location = seen.get("Location", "").strip().lower()
        if location not in LOCATIONS:
            probs.errors.append(
                line.problem(f"{prefix}: Location={seen.get('Location', '')} must be slurmctld or slurmd")
            )
            ok = False
        program = seen.get("Program", "")
        try:
            argv = tuple(shlex.split(program))
        except ValueError as exc:
            probs.errors.append(line.problem(f"{prefix}: Program={program}: {exc}"))
            continue
        if not argv:
            probs.errors.append(line.problem(f"{prefix}: Program= is required"))
            ok = False
        elif not argv[0].startswith("/"):
            probs.errors.append(line.problem(f"{prefix}: Program={program}: not an absolute path"))
            ok = False
        if ok:
            actions[name] = PowerProgram(argv, location, name, line.source)
    return actions


def _program(
    key: str,
    config: SlurmConfig,
    actions: Mapping[str, PowerProgram],
    probs: _Problems,
    check: Callable[[str], str | None] | None,
) -> PowerProgram | None:
    value = config.option(key)
    if value is None or not value.strip():
        return None
    value = value.strip()
    source = probs.option_line[key.lower()].source if key.lower() in probs.option_line else ""
    if value in actions:
        prog = actions[value]
        if key != "SuspendProgram" and prog.location != "slurmctld":
            what = "a power up action" if key == "ResumeProgram" else "ResumeFailProgram"
            probs.at_option(
                key,
                f"{key}={value}: PowerAction {value} has Location=slurmd; {what} must use "
                "Location=slurmctld (a powered down node cannot run a slurmd action)",
            )
            return None
        # A Location=slurmd program runs on the nodes, whose files the controller cannot
        # see: each node's agent checks it and reports at registration (agent/power.py).
        if check is not None and prog.location == "slurmctld":
            reason = check(prog.path)
            if reason:
                probs.at_source(prog.source, f"PowerAction={value}: Program={prog.path}: {reason}")
                return None
        return prog
    if not value.startswith("/"):
        probs.at_option(key, f"{key}={value}: neither an absolute path nor a PowerAction name")
        return None
    if check is not None:
        reason = check(value)
        if reason:
            probs.at_option(key, f"{key}={value}: {reason}")
            return None
    # A plain path: Slurm runs it as is (no arguments); spaces in it are part of the name.
    return PowerProgram((value,), "slurmctld", None, source)


def _option(
    config: SlurmConfig, probs: _Problems, key: str, parse: Callable[[str], int], default: int
) -> int:
    value = config.option(key)
    if value is None:
        return default
    try:
        return parse(value)
    except ValueError as exc:
        probs.at_option(key, f"{key}={value}: {exc}")
        return default


def _ctld_params(config: SlurmConfig, probs: _Problems) -> dict[str, object]:
    """The power options of SlurmctldParameters (others are not ours and are left alone)."""
    out: dict[str, object] = {}
    raw = config.option("SlurmctldParameters") or ""
    for item in (i.strip() for i in raw.split(",")):
        if not item:
            continue
        name, eq, value = item.partition("=")
        name = name.strip().lower()
        if name in ("idle_on_node_suspend", "fast_power_up_launch", "cloud_dns"):
            if eq:
                probs.at_option("SlurmctldParameters", f"SlurmctldParameters: {name} takes no value")
            out[name] = True
        elif name in ("power_save_interval", "power_save_min_interval", "node_reg_mem_percent"):
            minimum = 1 if name == "power_save_interval" else 0
            if not re.fullmatch(r"[0-9]+", value.strip()) or int(value) < minimum:
                probs.at_option(
                    "SlurmctldParameters",
                    f"SlurmctldParameters: {name}={value}: must be an integer >= {minimum}",
                )
                continue
            number = int(value)
            if name == "node_reg_mem_percent" and number > 100:
                probs.at_option(
                    "SlurmctldParameters", f"SlurmctldParameters: {name}={value}: must be at most 100"
                )
                continue
            out[name] = number
    return out


def _partitions(config: SlurmConfig, probs: _Problems) -> dict[str, PartitionPower]:
    out: dict[str, PartitionPower] = {}
    for part in config.partitions:
        values: dict[str, object] = {}
        extra = {k.lower(): (k, v) for k, v in part.extra.items()}
        for key, attr, infinite in (
            ("suspendtime", "suspend_time", True),
            ("suspendtimeout", "suspend_timeout", False),
            ("resumetimeout", "resume_timeout", False),
        ):
            if key in extra:
                k, v = extra[key]
                try:
                    values[attr] = parse_seconds(v, allow_infinite=infinite)
                except ValueError as exc:
                    probs.at_source(part.source, f"PartitionName={part.name}: {k}={v}: {exc}")
        if "powerdownonidle" in extra:
            k, v = extra["powerdownonidle"]
            if v.strip().upper() not in ("YES", "NO"):
                probs.at_source(part.source, f"PartitionName={part.name}: {k}={v}: must be YES or NO")
            values["power_down_on_idle"] = v.strip().upper() == "YES"
        out[part.name] = PartitionPower(part.name, **values)  # type: ignore[arg-type]
    return out


def _first_finite_suspend_time(
    config: SlurmConfig, suspend_time: int, parts: Mapping[str, PartitionPower]
) -> str | None:
    """Where a finite SuspendTime is set (file:line), global first; None if nowhere."""
    if suspend_time >= 0:
        return "global"
    for part in config.partitions:
        p = parts.get(part.name)
        if p is not None and p.suspend_time is not None and p.suspend_time >= 0:
            return part.source
    for node in config.nodes:
        if node.suspend_time is not None and node.suspend_time >= 0:
            return node.source
    return None


def power_config(
    config: SlurmConfig, *, program_check: Callable[[str], str | None] | None = None
) -> PowerConfig:
    """Validate the power keys of ``config``; raise :class:`ConfigError` with every problem.

    ``program_check(path)`` returns why a program path cannot be run (or None); pass
    :func:`executable_check` in the controller.  Without it only the spelling is checked
    (absolute path or PowerAction name), which keeps this function pure for tests and
    for previews of a configuration meant for another host.
    """
    probs = _Problems(config)
    actions = _power_actions(config, probs)
    suspend_program = _program("SuspendProgram", config, actions, probs, program_check)
    resume_program = _program("ResumeProgram", config, actions, probs, program_check)
    resume_fail_program = _program("ResumeFailProgram", config, actions, probs, program_check)

    def seconds(v: str) -> int:
        return parse_seconds(v, allow_infinite=True)

    def timeout(v: str) -> int:
        n = parse_seconds(v, allow_infinite=False)
        if n < 1:
            raise ValueError("must be at least 1")
        return n

    suspend_time = _option(config, probs, "SuspendTime", seconds, DEFAULT_SUSPEND_TIME)
    suspend_timeout = _option(config, probs, "SuspendTimeout", timeout, DEFAULT_SUSPEND_TIMEOUT)
    resume_timeout = _option(config, probs, "ResumeTimeout", timeout, DEFAULT_RESUME_TIMEOUT)
    resume_rate = _option(config, probs, "ResumeRate", parse_rate, DEFAULT_RESUME_RATE)
    suspend_rate = _option(config, probs, "SuspendRate", parse_rate, DEFAULT_SUSPEND_RATE)
    parts = _partitions(config, probs)
    for part in config.partitions:
        p = parts[part.name]
        for key, value in (("SuspendTimeout", p.suspend_timeout), ("ResumeTimeout", p.resume_timeout)):
            if value == 0:
                probs.at_source(part.source, f"PartitionName={part.name}: {key}=0: must be at least 1")

    node_names = [n.name for n in config.nodes]
    node_sets: tuple[ExcNodeSet, ...] = ()
    exc_parts: frozenset[str] = frozenset()
    exc_states: frozenset[str] = frozenset()
    for key in ("SuspendExcNodes", "SuspendExcParts", "SuspendExcStates"):
        value = config.option(key)
        if value is None:
            continue
        try:
            if key == "SuspendExcNodes":
                node_sets = parse_exc_nodes(value, node_names)
            elif key == "SuspendExcParts":
                exc_parts = parse_exc_parts(value, [p.name for p in config.partitions])
            else:
                exc_states = parse_exc_states(value)
        except ValueError as exc:
            probs.at_option(key, f"{key}={value}: {exc}")

    flags = {f.strip().lower() for f in (config.option("ReconfigFlags") or "").split(",")}
    debug = {f.strip().lower() for f in (config.option("DebugFlags") or "").split(",")}
    params = _ctld_params(config, probs)

    for node in config.nodes:
        for key in ("ResumeTimeout", "SuspendTimeout"):
            if key in node.extra:
                probs.at_source(
                    node.source,
                    f"NodeName={node.name}: {key} is set globally or per partition; ignored on a node",
                    warning=True,
                )

    finite_at = _first_finite_suspend_time(config, suspend_time, parts)
    if finite_at is not None:
        missing = [
            k
            for k, prog in (("SuspendProgram", suspend_program), ("ResumeProgram", resume_program))
            if prog is None and not any(p.message.startswith(f"{k}=") for p in probs.errors)
        ]
        if missing:
            message = (
                f"SuspendTime enables automatic power saving, which needs {' and '.join(missing)} "
                "(a program path or a PowerAction name)"
            )
            if finite_at == "global":
                probs.at_option("SuspendTime", f"SuspendTime={config.option('SuspendTime')}: {message}")
            else:
                probs.at_source(finite_at, message)

    if probs.errors:
        raise ConfigError(_in_order(probs.errors, config))
    node_suspend = {n.name: n.suspend_time for n in config.nodes if n.suspend_time is not None}
    return PowerConfig(
        suspend_program=suspend_program,
        resume_program=resume_program,
        resume_fail_program=resume_fail_program,
        actions=actions,
        suspend_time=suspend_time,
        suspend_timeout=suspend_timeout,
        resume_timeout=resume_timeout,
        resume_rate=resume_rate,
        suspend_rate=suspend_rate,
        exclusions=Exclusions(node_sets, exc_parts, exc_states),
        keep_power_save_settings="keeppowersavesettings" in flags,
        partitions=parts,
        node_suspend_time=node_suspend,
        power_save_interval=int(params.get("power_save_interval", DEFAULT_POWER_SAVE_INTERVAL)),  # type: ignore[call-overload]
        power_save_min_interval=int(
            params.get("power_save_min_interval", DEFAULT_POWER_SAVE_MIN_INTERVAL)  # type: ignore[call-overload]
        ),
        idle_on_node_suspend=bool(params.get("idle_on_node_suspend", False)),
        fast_power_up_launch=bool(params.get("fast_power_up_launch", False)),
        node_reg_mem_percent=params.get("node_reg_mem_percent"),  # type: ignore[arg-type]
        config_overrides="config_overrides"
        in {p.strip().lower() for p in (config.option("SlurmdParameters") or "").split(",")},
        cloud_dns=bool(params.get("cloud_dns", False)),
        debug_power="power" in debug,
        warnings=tuple(_in_order(probs.warnings, config)),
    )


def _in_order(problems: list[ConfigProblem], config: SlurmConfig) -> list[ConfigProblem]:
    order = {Path(f).name: i for i, f in reversed(list(enumerate(config.files)))}
    return sorted(problems, key=lambda p: (order.get(Path(p.file).name, len(order)), p.line))


# --------------------------------------------------------------------------- runtime SuspendTime


@dataclass(frozen=True)
class SuspendTimeVerdict:
    """What to do with a runtime per-node SuspendTime (Slurm's power_save.html, "Overview")."""

    accepted: bool
    enables_auto: bool = False  # turn automatic power saving on now (sticky until reconfigure)
    message: str = ""  # the error (refused) or the warning to log (accepted)


def node_suspend_time_change(config: PowerConfig, value: int | None, *, how: str) -> SuspendTimeVerdict:
    """A per-node SuspendTime set at runtime.

    ``how`` is ``"update"`` (``scontrol update node`` / REST), ``"create"`` (``scontrol
    create node`` / REST) or ``"register"`` (a dynamic node, ``slurmd -Z``).  ``value`` is
    seconds, -1 for INFINITE, None for NONE (unset).  When the rest of the power
    configuration is not valid (:attr:`PowerConfig.ready`): an update is refused for any
    value, a creation for a finite value, a registration accepted with a warning (its
    SuspendTime has no effect until power saving is configured and reconfigured).  When it
    is valid, a finite value turns automatic power saving on without a reconfigure.
    """
    if how not in ("update", "create", "register"):
        raise ValueError(f"unknown origin {how!r}")
    finite = value is not None and value >= 0
    if config.ready:
        return SuspendTimeVerdict(True, enables_auto=finite)
    needs = "SuspendProgram and ResumeProgram are needed"
    why = f"power save is not configured ({needs})"
    if how == "update":
        return SuspendTimeVerdict(False, message=f"SuspendTime cannot be set: {why}")
    if how == "create":
        if finite:
            return SuspendTimeVerdict(False, message=f"SuspendTime={value} cannot be set: {why}")
        return SuspendTimeVerdict(True)
    return SuspendTimeVerdict(
        True,
        message=(
            f"SuspendTime has no effect until power save is configured ({needs}) "
            "and slurmctld is reconfigured"
            if finite
            else ""
        ),
    )


def auto_enabled_at_load(config: PowerConfig, runtime_suspend_times: Iterable[int | None] = ()) -> bool:
    """Automatic power saving at start / reconfigure: the file's rule, or a finite
    per-node SuspendTime kept from runtime (nodes from ``scontrol create``, ``slurmd -Z``)."""
    if config.auto_enabled:
        return True
    return config.ready and any(v is not None and v >= 0 for v in runtime_suspend_times)


def cycle_due(config: PowerConfig, *, now: float, last_run: float | None, state_changed: bool) -> bool:
    """Whether the power-save cycle should run now: every ``power_save_interval``, sooner
    (but not more often than ``power_save_min_interval``) when node states changed."""
    if last_run is None:
        return True
    elapsed = now - last_run
    if elapsed >= config.power_save_interval:
        return True
    return state_changed and elapsed >= config.power_save_min_interval


def registration_memory_ok(config: PowerConfig, *, configured_mb: int, reported_mb: int, cloud: bool) -> bool:
    """``node_reg_mem_percent``: a node may register with this share of its RealMemory."""
    return reported_mb * 100 >= configured_mb * config.reg_mem_percent(cloud=cloud)


def low_memory_reason(
    config: PowerConfig, *, configured_mb: int, reported_mb: int, cloud: bool
) -> str | None:
    """The reason an invalid registration gets for too little memory, worded as slurmctld
    words it ("Low RealMemory (reported:N < P.PP% of configured:M)"), or None when the
    node reports enough of its RealMemory (``node_reg_mem_percent``)."""
    # Slurm skips the check with SlurmdParameters=config_overrides (nodes sharing a host).
    if (
        config.config_overrides
        or configured_mb <= 0
        or registration_memory_ok(config, configured_mb=configured_mb, reported_mb=reported_mb, cloud=cloud)
    ):
        return None
    percent = config.reg_mem_percent(cloud=cloud)
    return f"Low RealMemory (reported:{reported_mb} < {percent:.2f}% of configured:{configured_mb})"


__all__ = [
    "DEFAULT_RESUME_RATE",
    "DEFAULT_RESUME_TIMEOUT",
    "DEFAULT_SUSPEND_RATE",
    "DEFAULT_SUSPEND_TIMEOUT",
    "EXC_STATES",
    "INFINITE",
    "ConfigError",
    "ExcNodeSet",
    "Exclusions",
    "Invocation",
    "PartitionPower",
    "PowerConfig",
    "PowerProgram",
    "SuspendTimeVerdict",
    "auto_enabled_at_load",
    "cycle_due",
    "exclusions_after_reconfigure",
    "executable_check",
    "fold",
    "low_memory_reason",
    "node_suspend_time_change",
    "parse_exc_nodes",
    "parse_exc_parts",
    "parse_exc_states",
    "parse_rate",
    "parse_seconds",
    "power_config",
    "registration_memory_ok",
]
