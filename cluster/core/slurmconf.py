"""``slurm.conf`` (and the files it includes) read into plain dataclasses.

Pure module: no Django, no clock.  The controller calls :func:`load_slurm_conf`
at start and on ``scontrol reconfigure``; the configuration is validated
completely before anything uses it, and every problem found is reported with
its ``file:line: reason`` in one :class:`ConfigError` (not only the first).

The syntax is Slurm's:

* ``Key=Value`` pairs separated by whitespace; keys are case-insensitive
  (kept with their canonical spelling); ``Key = Value`` is accepted too, as
  Slurm's own parser does.
* Values may be double-quoted to hold spaces (``Program="/x y"``).
* ``#`` starts a comment, also after values (``\\#`` is a literal ``#``; a
  ``#`` inside double quotes is kept).
* A line ending in ``\\`` continues on the next one (joined without a space,
  as Slurm does); problems are reported at the first physical line.
* ``Include <path>`` reads another file; relative paths are relative to the
  directory of the including file, glob patterns are expanded (sorted).
* ``NodeName=...`` and ``PartitionName=...`` lines define nodes and
  partitions; ``NodeName=DEFAULT`` / ``PartitionName=DEFAULT`` set defaults
  for the lines that follow.  Other line types (``PowerAction=``,
  ``NodeSet=``, ``DownNodes=``, ``FrontendName=``) are kept as raw
  :class:`ConfLine` records in :attr:`SlurmConfig.other_lines` for the
  modules that own them; ``NodeSet`` names may be used in a partition's
  ``Nodes=``.

Unknown keys are warnings (kept, with their spelling, in ``options`` /
``extra``), malformed values are errors.  Hostlists are ClusterShell's
``NodeSet``.
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ClusterShell.NodeSet import RESOLVER_NOGROUP, NodeSet, NodeSetParseError

from cluster.core.dependencies import parse_dependency_parameters
from cluster.core.gres import format_gres
from cluster.core.gres_conf import (
    GresDevice,
    check_node_gres,
    devices_of,
    gres_conf_path,
    load_gres_conf,
    parse_gres_types,
)
from cluster.core.hostlists import HostlistError, HostlistTooLarge
from cluster.core.hostlists import count as hostlist_size
from cluster.core.private_data import parse_private_data
from cluster.core.prolog_conf import PARSERS as PROLOG_PARSERS
from cluster.core.sched_params import parse_scheduler_parameters
from slurmwords.debug_levels import config_level
from slurmwords.durations import parse_time_limit
from slurmwords.hostlists import split_top
from slurmwords.memory import parse_memory_mb

# --- known keys --------------------------------------------------------------
# Canonical spellings; lookups are case-insensitive.  A key not listed here is
# accepted with a warning, so a site's newer Slurm options do not stop the
# controller.

GLOBAL_KEYS: tuple[str, ...] = (
    "AccountingStorageBackupHost", "AccountingStorageEnforce", "AccountingStorageExternalHost",
    "AccountingStorageHost", "AccountingStorageParameters", "AccountingStoragePass",
    "AccountingStoragePort", "AccountingStorageTRES", "AccountingStorageType", "AccountingStorageUser",
    "AccountingStoreFlags", "AcctGatherEnergyType", "AcctGatherFilesystemType",
    "AcctGatherInterconnectType", "AcctGatherNodeFreq", "AcctGatherProfileType",
    "AllowSpecResourcesUsage", "AuthAltParameters", "AuthAltTypes", "AuthInfo", "AuthType",
    "BackupAddr", "BackupController", "BatchStartTimeout", "BcastExclude", "BcastParameters",
    "BurstBufferType", "CertgenParameters", "CertgenType", "CertmgrParameters", "CertmgrType",
    "CliFilterParameters", "CliFilterPlugins", "ClusterName", "CommunicationParameters",
    "CompleteWait", "ControlAddr", "ControlMachine", "CoreSpecPlugin", "CpuFreqDef",
    "CpuFreqGovernors", "CredType", "DataParserParameters", "DebugFlags", "DefCpuPerGPU",
    "DefMemPerCPU", "DefMemPerGPU", "DefMemPerNode", "DependencyParameters", "DisableRootJobs",
    "EioTimeout", "EnforcePartLimits", "Epilog", "EpilogMsgTime", "EpilogSlurmctld", "EpilogTimeout",
    "ExtSensorsFreq", "ExtSensorsType", "FairShareDampeningFactor", "FederationParameters",
    "FirstJobId", "GetEnvTimeout", "GpuFreqDef", "GresTypes", "GroupUpdateForce", "GroupUpdateTime",
    "HashPlugin", "HealthCheckInterval", "HealthCheckNodeState", "HealthCheckProgram",
    "HttpParserType", "InactiveLimit", "InteractiveStepOptions", "JobAcctGatherFrequency",
    "JobAcctGatherParams", "JobAcctGatherType", "JobCompHost", "JobCompLoc", "JobCompParams",
    "JobCompPass", "JobCompPort", "JobCompType", "JobCompUser", "JobContainerType", "JobDefaults",
    "JobFileAppend", "JobRequeue", "JobSubmitPlugins", "KeepAliveTime", "KillOnBadExit", "KillWait",
    "LaunchParameters", "LaunchType", "Licenses", "LogTimeFormat", "MailDomain", "MailProg",
    "MaxArraySize", "MaxBatchRequeue", "MaxDBDMsgs", "MaxJobCount", "MaxJobId", "MaxMemPerCPU",
    "MaxMemPerNode", "MaxNodeCount", "MaxStepCount", "MaxTasksPerNode", "MCSParameters",
    "MCSPlugin", "MessageTimeout", "MetricsType", "MinJobAge", "MpiDefault", "MpiParams",
    "NamespaceType", "NodeFeaturesPlugins", "OverTimeLimit", "PluginDir", "PlugStackConfig",
    "PowerParameters", "PowerPlugin", "PreemptExemptTime", "PreemptMode", "PreemptParameters",
    "PreemptType", "PrEpParameters", "PrEpPlugins", "PriorityCalcPeriod", "PriorityDecayHalfLife",
    "PriorityFavorSmall", "PriorityFlags", "PriorityMaxAge", "PriorityParameters",
    "PrioritySiteFactorParameters", "PrioritySiteFactorPlugin", "PriorityType",
    "PriorityUsageResetPeriod", "PriorityWeightAge", "PriorityWeightAssoc",
    "PriorityWeightFairshare", "PriorityWeightJobSize", "PriorityWeightPartition",
    "PriorityWeightQOS", "PriorityWeightTRES", "PrivateData", "ProctrackType", "Prolog",
    "PrologEpilogTimeout", "PrologFlags", "PrologSlurmctld", "PrologTimeout",
    "PropagatePrioProcess", "PropagateResourceLimits", "PropagateResourceLimitsExcept",
    "RebootProgram", "ReconfigFlags", "RequeueExit", "RequeueExitHold", "ResourcesFile",
    "ResumeFailProgram", "ResumeProgram", "ResumeRate", "ResumeTimeout", "ResvEpilog",
    "ResvOverRun", "ResvProlog", "ReturnToService", "SchedulerParameters", "SchedulerTimeSlice",
    "SchedulerType", "ScronParameters", "SelectType", "SelectTypeParameters", "SlurmctldAddr",
    "SlurmctldDebug", "SlurmctldHost", "SlurmctldLogFile", "SlurmctldParameters",
    "SlurmctldPidFile", "SlurmctldPort", "SlurmctldPrimaryOffProg", "SlurmctldPrimaryOnProg",
    "SlurmctldSyslogDebug", "SlurmctldTimeout", "SlurmdDebug", "SlurmdLogFile", "SlurmdParameters",
    "SlurmdPidFile", "SlurmdPort", "SlurmdSpoolDir", "SlurmdSyslogDebug", "SlurmdTimeout",
    "SlurmdUser", "SlurmSchedLogFile", "SlurmSchedLogLevel", "SlurmUser", "SrunEpilog",
    "SrunPortRange", "SrunProlog", "StateSaveLocation", "SuspendExcNodes", "SuspendExcParts",
    "SuspendExcStates", "SuspendProgram", "SuspendRate", "SuspendTime", "SuspendTimeout",
    "SwitchParameters", "SwitchType", "TaskEpilog", "TaskPlugin", "TaskPluginParam", "TaskProlog",
    "TCPTimeout", "TLSParameters", "TLSType", "TmpFS", "TopologyParam", "TopologyPlugin",
    "TrackWCKey", "TreeWidth", "UnkillableStepProgram", "UnkillableStepTimeout", "UrlParserType",
    "UsePAM", "VSizeFactor", "WaitTime", "X11Parameters",
)  # fmt: skip

NODE_KEYS: tuple[str, ...] = (
    "NodeName", "BcastAddr", "Boards", "CoreSpecCount", "CoresPerSocket", "CpuBind", "CPUs",
    "CpuSpecList", "Features", "Gres", "MemSpecLimit", "NodeAddr", "NodeHostname", "Port",
    "RealMemory", "Reason", "RestrictedCoresPerGPU", "ResumeTimeout", "Sockets", "SocketsPerBoard",
    "State", "SuspendTime", "SuspendTimeout", "ThreadsPerCore", "TmpDisk", "Topology",
    "TRESWeights", "Weight",
)  # fmt: skip

PARTITION_KEYS: tuple[str, ...] = (
    "PartitionName", "AllocNodes", "AllowAccounts", "AllowGroups", "AllowQos", "Alternate",
    "CpuBind", "Default", "DefaultTime", "DefCpuPerGPU", "DefMemPerCPU", "DefMemPerGPU",
    "DefMemPerNode", "DenyAccounts", "DenyQos", "DisableRootJobs", "ExclusiveTopo",
    "ExclusiveUser", "GraceTime", "Hidden", "LLN", "MaxCPUsPerNode", "MaxCPUsPerSocket",
    "MaxMemPerCPU", "MaxMemPerNode", "MaxNodes", "MaxTime", "MinNodes", "Nodes", "OverSubscribe",
    "OverTimeLimit", "PowerDownOnIdle", "PreemptMode", "Priority", "PriorityJobFactor",
    "PriorityTier", "QOS", "ReqResv", "ResumeTimeout", "RootOnly", "SelectTypeParameters",
    "State", "SuspendTime", "SuspendTimeout", "Topology", "TRESBillingWeights",
    # fsched's own load thresholds (not Slurm's)
    "LoadSchedMem", "LoadStopMem", "LoadSchedUt", "LoadStopUt", "LoadSchedR15s", "LoadStopR15s",
    "LoadSchedR1m", "LoadStopR1m", "LoadSchedR15m", "LoadStopR15m",
)  # fmt: skip

# Line types owned by other modules: kept as raw ConfLine records.
OTHER_LINE_KEYS: tuple[str, ...] = ("DownNodes", "FrontendName", "NodeSet", "PowerAction")

# Old spellings Slurm still accepts, mapped to the current key.
_ALIASES = {
    "feature": "Features",
    "procs": "CPUs",
    "shared": "OverSubscribe",
}

NODE_STATES = ("UNKNOWN", "CLOUD", "FUTURE", "DOWN", "IDLE")
PARTITION_STATES = ("UP", "DOWN", "DRAIN", "INACTIVE")
_UNLIMITED_WORDS = frozenset({"UNLIMITED", "INFINITE", "-1"})
_MAX_PRIORITY = 65533  # Slurm's largest PriorityTier / PriorityJobFactor

# Bounds: a value the database cannot hold, or a hostlist that would take the controller's
# memory to expand, is refused with its file:line before anything changes.
INT_MAX = 2**31 - 1  # the integer columns (PostgreSQL's integer) that hold these values
UINT16_MAX = 65535  # Slurm keeps CPUs and the topology counts in 16 bits
# MaxNodeCount when slurm.conf does not set it: above the Slurm clusters in production
# (tens of thousands of nodes), and a NodeName line of 65536 nodes parses in 0.6 s.
DEFAULT_MAX_NODE_COUNT = 65536
MAX_NODE_COUNT_CEILING = 1 << 18  # one NodeConf, one Node row and a console tile per node
MAX_CONF_FILE_BYTES = 16 << 20

DEFAULT_SLURMD_TIMEOUT = 300
DEFAULT_MAX_JOB_COUNT = 10000
DEFAULT_KILL_WAIT = 30
DEFAULT_RETURN_TO_SERVICE = 0
DEFAULT_SCHEDULER_TYPE = "sched/backfill"
DEFAULT_PRIORITY_TYPE = "priority/multifactor"  # Slurm's default since 23.11
_SCHEDULER_TYPES = ("sched/backfill", "sched/builtin")
_PRIORITY_TYPES = ("priority/basic", "priority/multifactor")


def _canon_table(keys: Iterable[str]) -> dict[str, str]:
    return {k.lower(): k for k in keys}


_GLOBAL = _canon_table(GLOBAL_KEYS)
_NODE = _canon_table(NODE_KEYS)
_PARTITION = _canon_table(PARTITION_KEYS)
_OTHER = _canon_table(OTHER_LINE_KEYS)
_RECORD = {"nodename": "NodeName", "partitionname": "PartitionName", **_OTHER}


def canonical_key(key: str, table: dict[str, str]) -> str | None:
    lower = key.lower()
    return table.get(lower) or _ALIASES.get(lower)


# --- problems ------------------------------------------------------------------


@dataclass(frozen=True)
class ConfigProblem:
    """One error or warning; ``file`` is the full path, ``str()`` shows its name."""

    file: str
    line: int
    message: str

    def __str__(self) -> str:
        name = Path(self.file).name
        return f"{name}:{self.line}: {self.message}" if self.line else f"{name}: {self.message}"


class ConfigError(Exception):
    """The configuration was refused; ``problems`` lists every error found."""

    def __init__(self, problems: Iterable[ConfigProblem]) -> None:
        self.problems: list[ConfigProblem] = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


# --- reading lines ------------------------------------------------------------


@dataclass(frozen=True)
class ConfLine:
    """One logical configuration line: its ``Key=Value`` pairs in order, as written."""

    file: str
    line: int
    pairs: tuple[tuple[str, str], ...]
    # Read from a file outside the configuration directory: its text is never quoted.
    private: bool = False

    @property
    def key(self) -> str:
        return self.pairs[0][0]

    @property
    def value(self) -> str:
        return self.pairs[0][1]

    @property
    def source(self) -> str:
        return f"{Path(self.file).name}:{self.line}"

    def get(self, key: str, default: str | None = None) -> str | None:
        """The value of ``key`` (case-insensitive; the last one if repeated)."""
        found = default
        for k, v in self.pairs:
            if k.lower() == key.lower():
                found = v
        return found

    def problem(self, message: str) -> ConfigProblem:
        if self.private:
            return ConfigProblem(self.file, self.line, withheld(self.keyword))
        return ConfigProblem(self.file, self.line, message)

    @property
    def keyword(self) -> str:
        """The line's first key if it is one of ours (fsched's words, not the file's)."""
        for table in (_RECORD, _GLOBAL):
            canon = canonical_key(self.key, table) if self.pairs else None
            if canon:
                return canon
        return "line"


def withheld(keyword: str = "line") -> str:
    """What a problem says about a line it must not quote: the caller of a reconfigure
    (staff, through the API) may not be allowed to read the file, the controller may."""
    return f"{keyword}: refused or ignored; not quoted, the file is outside the configuration directory"


_KEY_RE = re.compile(r"([A-Za-z0-9_]+)\s*=\s*")
_WORD_RE = re.compile(r"\S*")
_INCLUDE_RE = re.compile(r"\s*include\s+(\S.*?)\s*$", re.IGNORECASE)
_GLOB_CHARS = frozenset("*?[")


def tokenize(text: str) -> list[tuple[str, str]]:
    """Split a comment-free logical line into ``(key, value)`` pairs.

    Raises ``ValueError`` with a reason naming the offending text.
    """
    pairs: list[tuple[str, str]] = []
    pos, end = 0, len(text)
    while True:
        while pos < end and text[pos].isspace():
            pos += 1
        if pos >= end:
            return pairs
        m = _KEY_RE.match(text, pos)
        if m is None:
            word = _WORD_RE.match(text, pos).group()  # type: ignore[union-attr]
            raise ValueError(f"{word}: expected Key=Value")
        key, pos = m.group(1), m.end()
        if pos < end and text[pos] == '"':
            close = text.find('"', pos + 1)
            if close < 0:
                raise ValueError(f"{key}={text[pos:]}: unterminated quote")
            value, pos = text[pos + 1 : close], close + 1
            if pos < end and not text[pos].isspace():
                raise ValueError(f"{key}={text[m.end() : pos + 1]}...: text after closing quote")
        else:
            w = _WORD_RE.match(text, pos)
            value, pos = w.group(), w.end()  # type: ignore[union-attr]
        pairs.append((key, value))


def _strip_comment(raw: str) -> str:
    out: list[str] = []
    quoted = False
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\\" and raw[i + 1 : i + 2] == "#":
            out.append("#")
            i += 2
            continue
        if ch == '"':
            quoted = not quoted
        elif ch == "#" and not quoted:
            break
        out.append(ch)
        i += 1
    return "".join(out)


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """Yield ``(first physical line number, text)`` for each non-blank logical line."""
    parts: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        content = _strip_comment(raw).rstrip()
        if not parts:
            start = number
        if content.endswith("\\"):
            parts.append(content[:-1])
            continue
        parts.append(content)
        joined, parts = "".join(parts), []
        if joined.strip():
            yield start, joined
    if parts and "".join(parts).strip():
        yield start, "".join(parts)


@dataclass
class _ReadContext:
    problems: list[ConfigProblem]
    conf_dir: Path | None = None  # resolved; files outside it are private
    files: list[str] = field(default_factory=list)
    digests: dict[str, str] = field(default_factory=dict)  # path -> SHA-256 of the text read
    stack: list[str] = field(default_factory=list)

    def is_private(self, path: Path) -> bool:
        return self.conf_dir is not None and not path.resolve().is_relative_to(self.conf_dir)


def _read_text(
    text: str, file: str, base_dir: Path, ctx: _ReadContext, *, private: bool = False
) -> Iterator[ConfLine]:
    for number, content in _logical_lines(text):
        include = _INCLUDE_RE.match(content)
        if include:
            yield from _include(include.group(1), file, number, base_dir, ctx, private=private)
            continue
        try:
            pairs = tokenize(content)
        except ValueError as exc:
            ctx.problems.append(ConfigProblem(file, number, withheld() if private else str(exc)))
            continue
        yield ConfLine(file, number, tuple(pairs), private=private)


def _include(
    spec: str, file: str, number: int, base_dir: Path, ctx: _ReadContext, *, private: bool
) -> Iterator[ConfLine]:
    def problem(message: str) -> None:
        text = withheld("Include") if private else f"Include {spec}: {message}"
        ctx.problems.append(ConfigProblem(file, number, text))

    pattern = spec[1:-1] if len(spec) >= 2 and spec[0] == spec[-1] == '"' else spec
    target = Path(pattern).expanduser()
    if not target.is_absolute():
        target = base_dir / target
    if _GLOB_CHARS & set(pattern):
        paths = [Path(p) for p in sorted(glob.glob(str(target)))]
        if not paths:
            problem("no file matches")
            return
    else:
        paths = [target]
    for path in paths:
        resolved = str(path.resolve())
        if resolved in ctx.stack:
            chain = " -> ".join(Path(p).name for p in [*ctx.stack, resolved])
            problem(f"include cycle ({chain})")
            continue
        try:
            text = _read_conf_file(path)
        except FileNotFoundError:
            problem("no such file")
            continue
        except (OSError, UnicodeDecodeError) as exc:
            problem(f"cannot read: {exc}")
            continue
        except ValueError as exc:
            problem(str(exc))
            continue
        yield from _read_file_text(text, path, ctx)


def _read_conf_file(path: Path) -> str:
    """The text of a configuration file; ``ValueError`` for what cannot be one
    (``Include /dev/zero`` would otherwise be read until memory runs out)."""
    with path.open("rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise ValueError("not a regular file")
        data = f.read(MAX_CONF_FILE_BYTES + 1)
    if len(data) > MAX_CONF_FILE_BYTES:
        raise ValueError(f"larger than {MAX_CONF_FILE_BYTES // (1 << 20)} MiB")
    return data.decode("utf-8")


def _read_file_text(text: str, path: Path, ctx: _ReadContext) -> Iterator[ConfLine]:
    resolved = str(path.resolve())
    ctx.files.append(str(path))
    ctx.digests[str(path)] = hashlib.sha256(text.encode("utf-8")).hexdigest()
    ctx.stack.append(resolved)
    try:
        yield from _read_text(text, str(path), path.parent, ctx, private=ctx.is_private(path))
    finally:
        ctx.stack.pop()


def _read_top(path: Path, ctx: _ReadContext) -> Iterator[ConfLine]:
    try:
        text = _read_conf_file(path)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        ctx.problems.append(ConfigProblem(str(path), 0, f"cannot read: {exc}"))
        return
    yield from _read_file_text(text, path, ctx)


def read_conf_lines(path: str | Path, *, problems: list[ConfigProblem] | None = None) -> Iterator[ConfLine]:
    """Yield every logical line of a Slurm-style file, following ``Include`` lines.

    For modules that validate their own keys with ``file:line``.  Problems met
    while reading (bad syntax, a missing or cyclic Include) are appended to
    ``problems`` if given; otherwise they are raised together as a
    :class:`ConfigError` once the lines that could be read have been yielded.
    """
    sink: list[ConfigProblem] = [] if problems is None else problems
    path = Path(path)
    yield from _read_top(path, _ReadContext(sink, conf_dir=path.parent.resolve()))
    if problems is None and sink:
        raise ConfigError(sink)


# --- the configuration ----------------------------------------------------------


@dataclass(frozen=True)
class NodeConf:
    """A node as configured (``NodeName=`` line, after ``DEFAULT`` values)."""

    name: str
    cpus: int
    real_memory: int = 1  # MB
    weight: int = 1
    features: tuple[str, ...] = ()
    gres: str = ""
    state: str = "UNKNOWN"
    suspend_time: int | None = None  # seconds; -1 = INFINITE; None = not set
    sockets: int = 1
    cores_per_socket: int = 1
    threads_per_core: int = 1
    extra: dict[str, str] = field(default_factory=dict, hash=False)
    source: str = ""
    boards: int = 1
    tmp_disk: int = 0  # MB
    port: int | None = None
    node_addr: str = ""  # defaults to the node name
    node_hostname: str = ""  # defaults to the node name
    # Its devices (gres.conf's files, indices per GRES name): cluster/core/gres_conf.py.
    gres_devices: tuple[GresDevice, ...] = ()


@dataclass(frozen=True)
class PartitionConf:
    """A partition as configured (``PartitionName=`` line, after ``DEFAULT`` values).

    ``max_time``/``default_time`` are minutes; ``max_time=None`` is UNLIMITED,
    ``default_time=None`` means not set (jobs get ``max_time``).
    """

    name: str
    nodes: tuple[str, ...] = ()
    nodes_expr: str = ""
    default: bool = False
    max_time: int | None = None
    default_time: int | None = None
    max_nodes: int | None = None
    min_nodes: int = 0
    state: str = "UP"
    priority_tier: int = 1
    priority_job_factor: int = 1
    extra: dict[str, str] = field(default_factory=dict, hash=False)
    source: str = ""


@dataclass(frozen=True)
class SlurmConfig:
    cluster_name: str
    slurmctld_host: str
    nodes: tuple[NodeConf, ...] = ()
    partitions: tuple[PartitionConf, ...] = ()
    licenses: dict[str, int] = field(default_factory=dict, hash=False)
    slurmd_timeout: int = DEFAULT_SLURMD_TIMEOUT
    max_job_count: int = DEFAULT_MAX_JOB_COUNT
    kill_wait: int = DEFAULT_KILL_WAIT
    return_to_service: int = DEFAULT_RETURN_TO_SERVICE
    options: dict[str, str] = field(default_factory=dict, hash=False)
    warnings: tuple[ConfigProblem, ...] = ()
    files: tuple[str, ...] = ()
    digests: dict[str, str] = field(default_factory=dict, hash=False)  # file -> SHA-256 as read
    other_lines: tuple[ConfLine, ...] = ()
    slurmctld_hosts: tuple[str, ...] = ()
    scheduler_type: str = DEFAULT_SCHEDULER_TYPE
    priority_type: str = DEFAULT_PRIORITY_TYPE
    resources_file: str | None = None  # resolved against the configuration directory
    conf_dir: str = ""
    lines: tuple[ConfLine, ...] = ()  # every logical line read, in order
    _nodes_by_name: dict[str, NodeConf] = field(default_factory=dict, repr=False, compare=False, hash=False)
    _parts_by_name: dict[str, PartitionConf] = field(
        default_factory=dict, repr=False, compare=False, hash=False
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "_nodes_by_name", {n.name: n for n in self.nodes})
        object.__setattr__(self, "_parts_by_name", {p.name: p for p in self.partitions})

    def node(self, name: str) -> NodeConf | None:
        return self._nodes_by_name.get(name)

    def partition(self, name: str) -> PartitionConf | None:
        return self._parts_by_name.get(name)

    def default_partition(self) -> PartitionConf | None:
        return next((p for p in self.partitions if p.default), None)

    def option(self, key: str, default: str | None = None) -> str | None:
        """A global option by name, case-insensitively."""
        lower = key.lower()
        return next((v for k, v in self.options.items() if k.lower() == lower), default)


def load_slurm_conf(path: str | Path) -> SlurmConfig:
    """Read and validate ``slurm.conf`` and its Includes; raise :class:`ConfigError`."""
    path = Path(path)
    ctx = _ReadContext([], conf_dir=path.parent.resolve())
    lines = list(_read_top(path, ctx))
    return _Builder(ctx, path.parent).build(lines)


def parse_slurm_conf_text(
    text: str, *, filename: str = "slurm.conf", include_dir: str | Path | None = None
) -> SlurmConfig:
    """Parse configuration text (tests, the admin's edit preview).

    ``Include`` paths resolve against ``include_dir`` (default: the directory
    part of ``filename``).
    """
    base = Path(include_dir) if include_dir is not None else Path(filename).parent
    ctx = _ReadContext([], conf_dir=base.resolve())
    ctx.files.append(filename)
    lines = list(_read_text(text, filename, base, ctx))
    return _Builder(ctx, base).build(lines)


# --- value parsers -----------------------------------------------------------------
# Each takes the raw value and returns the parsed one or raises ValueError with
# the reason; the caller prefixes "Key=value: ".


def _int(minimum: int = 0, maximum: int = INT_MAX) -> Callable[[str], int]:
    def parse(value: str) -> int:
        text = value.strip()
        if not re.fullmatch(r"-?[0-9]+", text):
            raise ValueError("not an integer")
        if len(text.lstrip("-").lstrip("0")) > 19:  # int() of a long digit string is slow
            raise ValueError(
                f"must be at least {minimum}" if text[0] == "-" else f"must be at most {maximum}"
            )
        number = int(text)
        if number < minimum:
            raise ValueError(f"must be at least {minimum}")
        if number > maximum:
            raise ValueError(f"must be at most {maximum}")
        return number

    return parse


def _int_or_unlimited(value: str) -> int | None:
    return None if value.strip().upper() in _UNLIMITED_WORDS else _int(0)(value)


def _memory(minimum: int, maximum: int = INT_MAX) -> Callable[[str], int]:
    def parse(value: str) -> int:
        if len(value) > 24:  # longer than any size the column holds, in any unit
            raise ValueError(f"must be at most {maximum} MB")
        try:
            mb = parse_memory_mb(value)
        except ValueError:
            raise ValueError("not a memory size (MB, or with a K/M/G/T suffix)") from None
        if mb < minimum:
            raise ValueError(f"must be at least {minimum}")
        if mb > maximum:
            raise ValueError(f"must be at most {maximum} MB")
        return mb

    return parse


def _time_limit(value: str) -> int | None:
    try:
        minutes = parse_time_limit(value) if len(value) <= 32 else INT_MAX + 1
    except ValueError:
        raise ValueError("Invalid time limit specification") from None
    if minutes is not None and minutes > INT_MAX:
        raise ValueError(f"must be at most {INT_MAX} minutes")
    return minutes


def _seconds_or_infinite(value: str) -> int:
    return -1 if value.strip().upper() in _UNLIMITED_WORDS else _int(0)(value)


def _yes_no(value: str) -> bool:
    v = value.strip().upper()
    if v in ("YES", "NO"):
        return v == "YES"
    raise ValueError("must be YES or NO")


def _choice(choices: tuple[str, ...]) -> Callable[[str], str]:
    def parse(value: str) -> str:
        v = value.strip().upper()
        if v not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}")
        return v

    return parse


def _features(value: str) -> tuple[str, ...]:
    return tuple(f.strip() for f in value.split(",") if f.strip())


def _text(value: str) -> str:
    return value


_NODE_PARSERS: dict[str, Callable[[str], Any]] = {
    "CPUs": _int(1, UINT16_MAX),
    "Boards": _int(1, UINT16_MAX),
    "Sockets": _int(1, UINT16_MAX),
    "SocketsPerBoard": _int(1, UINT16_MAX),
    "CoresPerSocket": _int(1, UINT16_MAX),
    "ThreadsPerCore": _int(1, UINT16_MAX),
    "RealMemory": _memory(1),
    "TmpDisk": _memory(0),
    "Weight": _int(0),
    "Port": _int(1, 65535),
    "State": _choice(NODE_STATES),
    "SuspendTime": _seconds_or_infinite,
    "Features": _features,
    "Gres": _text,
    "NodeAddr": _text,
    "NodeHostname": _text,
}
_NODE_TYPED = frozenset(_NODE_PARSERS)

_PARTITION_PARSERS: dict[str, Callable[[str], Any]] = {
    "Nodes": _text,
    "Default": _yes_no,
    "MaxTime": _time_limit,
    "DefaultTime": _time_limit,
    "MaxNodes": _int_or_unlimited,
    "MinNodes": _int(0),
    "State": _choice(PARTITION_STATES),
    "PriorityTier": _int(0, _MAX_PRIORITY),
    "PriorityJobFactor": _int(0, _MAX_PRIORITY),
    "Priority": _int(0, _MAX_PRIORITY),
}
_PARTITION_TYPED = frozenset(_PARTITION_PARSERS)


def split_hostlist(expr: str) -> list[str]:
    """Split a hostlist at its top-level commas (not those inside brackets), each part stripped."""
    return [p.strip() for p in split_top(expr)]


def parse_nodeset(expr: str, *, limit: int = MAX_NODE_COUNT_CEILING) -> NodeSet:
    """A ClusterShell NodeSet from a Slurm hostlist; ``ValueError`` if malformed, or if
    it names more than ``limit`` nodes (counted before anything is expanded).

    Group syntax (``@group``) is not Slurm's and is refused.
    """
    _check_size(expr, limit)
    if any(not part for part in split_hostlist(expr)) and expr.strip():
        raise ValueError("bad hostlist: empty name")
    try:
        nodes = NodeSet(expr, resolver=RESOLVER_NOGROUP)
    except NodeSetParseError as exc:
        raise ValueError(f"bad hostlist: {exc}") from None
    for name in nodes:
        if not name or any(c.isspace() or c in "@=#\"'" for c in name):
            raise ValueError(f"bad hostlist: invalid node name {name!r}")
    return nodes


def expand_hostlist(expr: str, *, limit: int = MAX_NODE_COUNT_CEILING) -> list[str]:
    """Expand a hostlist keeping the written order of its comma-separated parts
    (Slurm pairs ``NodeName`` with ``NodeAddr``/``NodeHostname`` by position)."""
    _check_size(expr, limit)
    names: list[str] = []
    for part in split_hostlist(expr):
        if not part:
            raise ValueError("bad hostlist: empty name")
        names.extend(parse_nodeset(part, limit=limit))
    return names


def _check_size(expr: str, limit: int) -> None:
    try:
        size = hostlist_size(expr)
    except HostlistTooLarge as exc:
        raise ValueError(f"bad hostlist: {exc.detail}") from None
    except HostlistError:
        return  # malformed, not large: the parser says what is wrong with it
    if size > limit:
        raise ValueError(f"bad hostlist: {size} names, more than {limit}")


def parse_licenses(value: str) -> dict[str, int]:
    """``fluent:30,ansys:10`` (``name`` alone is 1; Slurm's old ``name*N`` too)."""
    licenses: dict[str, int] = {}
    for item in (i.strip() for i in value.split(",")):
        if not item:
            continue
        m = re.fullmatch(r"([A-Za-z0-9_.@/+-]+)(?:[:*]([0-9]+))?", item)
        if m is None:
            raise ValueError(f"bad license {item!r} (expected name or name:count)")
        name, digits = m.group(1), m.group(2) or "1"
        if len(digits.lstrip("0")) > 10 or int(digits) > INT_MAX:
            raise ValueError(f"license {name}: count must be at most {INT_MAX}")
        count = int(digits)
        if name in licenses:
            raise ValueError(f"license {name} given twice")
        licenses[name] = count
    return licenses


# --- building -----------------------------------------------------------------------


@dataclass
class _NodeLine:
    line: ConfLine
    attrs: dict[str, Any]  # canonical key -> parsed value (DEFAULTs merged in)
    raw: dict[str, str]  # canonical key -> value as written


@dataclass
class _PartLine:
    line: ConfLine
    name: str
    attrs: dict[str, Any]
    raw: dict[str, str]


class _Builder:
    def __init__(self, ctx: _ReadContext, conf_dir: Path) -> None:
        self.ctx = ctx
        self.errors = ctx.problems
        self.warnings: list[ConfigProblem] = []
        self.conf_dir = conf_dir

    def build(self, lines: list[ConfLine]) -> SlurmConfig:
        options: dict[str, str] = {}
        option_lines: dict[str, ConfLine] = {}
        ctld_hosts: list[str] = []
        node_lines: list[_NodeLine] = []
        part_lines: list[_PartLine] = []
        other: list[ConfLine] = []
        node_defaults: tuple[dict[str, Any], dict[str, str]] = ({}, {})
        part_defaults: tuple[dict[str, Any], dict[str, str]] = ({}, {})

        for line in lines:
            for key, value in line.pairs[1:]:
                if key.lower() in _RECORD:
                    self.errors.append(line.problem(f"{key}={value}: {key} must start its own line"))
            first = line.key.lower()
            if first == "nodename":
                parsed = self._attrs(line, _NODE, _NODE_PARSERS, "node")
                if line.value.upper() == "DEFAULT":
                    node_defaults[0].update(parsed[0])
                    node_defaults[1].update(parsed[1])
                else:
                    node_lines.append(
                        _NodeLine(line, {**node_defaults[0], **parsed[0]}, {**node_defaults[1], **parsed[1]})
                    )
            elif first == "partitionname":
                parsed = self._attrs(line, _PARTITION, _PARTITION_PARSERS, "partition")
                if line.value.upper() == "DEFAULT":
                    part_defaults[0].update(parsed[0])
                    part_defaults[1].update(parsed[1])
                elif not line.value:
                    self.errors.append(line.problem("PartitionName=: a partition needs a name"))
                else:
                    part_lines.append(
                        _PartLine(
                            line,
                            line.value,
                            {**part_defaults[0], **parsed[0]},
                            {**part_defaults[1], **parsed[1]},
                        )
                    )
            elif first in _OTHER:
                other.append(line)
            elif canonical_key(line.key, _GLOBAL) is None and len(line.pairs) > 1:
                self._unknown(line, f"{line.key}={line.value}: unknown line type, ignored")
                other.append(line)
            else:
                for key, value in line.pairs:
                    canon = canonical_key(key, _GLOBAL)
                    if canon is None:
                        self._unknown(line, f"{key}={value}: unknown parameter")
                        canon = key
                    if canon in ("SlurmctldHost", "ControlMachine"):
                        ctld_hosts.append(value)
                    elif canon in options:
                        earlier = option_lines[canon].source
                        self.warnings.append(
                            line.problem(f"{canon}={value}: also set at {earlier}, latest value used")
                        )
                    options[canon] = value
                    option_lines[canon] = line

        nodes = self._nodes(node_lines, self._max_node_count(options, option_lines))
        nodes = self._gres(nodes, options, option_lines)
        nodesets = self._nodesets(other, nodes)
        partitions = self._partitions(part_lines, nodes, nodesets)
        config = self._globals(options, option_lines, ctld_hosts)
        if self.errors:
            raise ConfigError(self._in_file_order(self.errors))
        return SlurmConfig(
            nodes=tuple(nodes.values()),
            partitions=tuple(partitions),
            options=options,
            warnings=tuple(self._in_file_order(self.warnings)),
            files=tuple(dict.fromkeys(self.ctx.files)),
            digests=dict(self.ctx.digests),
            other_lines=tuple(other),
            conf_dir=str(self.conf_dir),
            lines=tuple(lines),
            **config,
        )

    def _unknown(self, line: ConfLine, message: str) -> None:
        """An unknown key is a warning, but an error in a file outside the configuration
        directory: kept in ``options``, it would be shown to every user (``GET /api/config/``),
        so an ``Include`` of an arbitrary ``Key=Value`` file would publish it."""
        (self.errors if line.private else self.warnings).append(line.problem(message))

    def _in_file_order(self, problems: list[ConfigProblem]) -> list[ConfigProblem]:
        """Problems sorted by file (in reading order) then line; stable within a line."""
        order = {f: i for i, f in reversed(list(enumerate(self.ctx.files)))}
        return sorted(problems, key=lambda p: (order.get(p.file, len(order)), p.line))

    # -- one line's attributes

    def _attrs(
        self, line: ConfLine, table: dict[str, str], parsers: dict[str, Callable[[str], Any]], what: str
    ) -> tuple[dict[str, Any], dict[str, str]]:
        parsed: dict[str, Any] = {}
        raw: dict[str, str] = {}
        for key, value in line.pairs[1:]:
            canon = canonical_key(key, table)
            if canon is None:
                self._unknown(line, f"{key}={value}: unknown {what} parameter")
                canon = key
            if canon in raw:
                self.warnings.append(line.problem(f"{canon} given twice on this line, latest value used"))
            raw[canon] = value
            parser = parsers.get(canon)
            if parser is None:
                continue
            try:
                parsed[canon] = parser(value)
            except ValueError as exc:
                self.errors.append(line.problem(f"{key}={value}: {exc}"))
        return parsed, raw

    # -- nodes

    def _max_node_count(self, options: dict[str, str], option_lines: dict[str, ConfLine]) -> int:
        if "MaxNodeCount" not in options:
            return DEFAULT_MAX_NODE_COUNT
        try:
            return _int(1, MAX_NODE_COUNT_CEILING)(options["MaxNodeCount"])
        except ValueError as exc:
            line = option_lines["MaxNodeCount"]
            self.errors.append(line.problem(f"MaxNodeCount={options['MaxNodeCount']}: {exc}"))
            return DEFAULT_MAX_NODE_COUNT

    def _nodes(self, node_lines: list[_NodeLine], max_nodes: int) -> dict[str, NodeConf]:
        nodes: dict[str, NodeConf] = {}
        self._node_lines_by_source = {nl.line.source: nl.line for nl in node_lines}
        for nl in node_lines:
            line, a = nl.line, nl.attrs
            # Counted before expanding: a line past MaxNodeCount is refused in microseconds.
            try:
                size = hostlist_size(line.value)
            except HostlistTooLarge as exc:
                self.errors.append(line.problem(f"NodeName={line.value}: bad hostlist: {exc.detail}"))
                continue
            except HostlistError:
                size = 0  # malformed: expand_hostlist below says what is wrong with it
            if len(nodes) + size > max_nodes:
                shown = f"{size} nodes"
                before = f" ({len(nodes)} defined before)" if nodes else ""
                self.errors.append(
                    line.problem(
                        f"NodeName={line.value}: {shown}, more than MaxNodeCount={max_nodes}{before}"
                    )
                )
                continue
            try:
                names = expand_hostlist(line.value)
                if not names:
                    raise ValueError("bad hostlist: no node name")
                for name in names:
                    if name.upper() == "ALL":
                        raise ValueError("ALL is reserved (it means every node in Nodes=)")
            except ValueError as exc:
                self.errors.append(line.problem(f"NodeName={line.value}: {exc}"))
                continue
            addrs = self._per_node(line, "NodeAddr", nl.raw, names)
            hostnames = self._per_node(line, "NodeHostname", nl.raw, names)
            if addrs is None or hostnames is None:
                continue
            topology = self._topology(line, a)
            if topology is None:
                continue
            extra = {k: v for k, v in nl.raw.items() if k not in _NODE_TYPED}
            dups = [n for n in dict.fromkeys(names) if n in nodes]
            if dups or len(set(names)) != len(names):
                first = nodes[dups[0]].source if dups else line.source
                folded = str(NodeSet.fromlist(dups or names, resolver=RESOLVER_NOGROUP))
                self.errors.append(
                    line.problem(
                        f"NodeName={line.value}: duplicate node name {folded} (first defined at {first})"
                    )
                )
                continue
            cpus, boards, sockets, cores, threads = topology
            for i, name in enumerate(names):
                nodes[name] = NodeConf(
                    name=name,
                    cpus=cpus,
                    real_memory=a.get("RealMemory", 1),
                    weight=a.get("Weight", 1),
                    features=a.get("Features", ()),
                    gres=a.get("Gres", ""),
                    state=a.get("State", "UNKNOWN"),
                    suspend_time=a.get("SuspendTime"),
                    sockets=sockets,
                    cores_per_socket=cores,
                    threads_per_core=threads,
                    extra=dict(extra),
                    source=line.source,
                    boards=boards,
                    tmp_disk=a.get("TmpDisk", 0),
                    port=a.get("Port"),
                    node_addr=addrs[i],
                    node_hostname=hostnames[i],
                )
        return nodes

    def _gres(
        self, nodes: dict[str, NodeConf], options: dict[str, str], option_lines: dict[str, ConfLine]
    ) -> dict[str, NodeConf]:
        """``Gres=`` against ``GresTypes``, and gres.conf next to slurm.conf, if there is one
        (its lines give each node's devices and their order)."""
        types: frozenset[str] = frozenset()
        if "GresTypes" in options:
            try:
                types = parse_gres_types(options["GresTypes"])
            except ValueError as exc:
                line = option_lines["GresTypes"]
                self.errors.append(line.problem(f"GresTypes={options['GresTypes']}: {exc}"))
        parsed = {}
        reported: set[str] = set()
        for name, node in nodes.items():
            if not node.gres:
                continue
            try:
                parsed[name] = check_node_gres(node.gres, types)
            except ValueError as exc:
                line = self._node_lines_by_source.get(node.source)
                if line is not None and node.source not in reported:
                    reported.add(node.source)
                    self.errors.append(line.problem(f"Gres={node.gres}: {exc}"))
        path = gres_conf_path(self.conf_dir)
        described = {}
        if path.is_file():
            before = len(self.errors)
            lines = list(_read_top(path, self.ctx))
            if len(self.errors) == before:
                described = load_gres_conf(
                    lines,
                    parsed,
                    types,
                    expand=expand_hostlist,
                    errors=self.errors,
                    known=frozenset(nodes),
                    base=self.conf_dir.resolve(),
                )
        out = dict(nodes)
        for name, items in parsed.items():
            conf = described.get(name)
            gres = format_gres(conf.items if conf else items)
            out[name] = replace(
                nodes[name], gres=gres, gres_devices=conf.devices if conf else devices_of(items)
            )
        return out

    def _per_node(self, line: ConfLine, key: str, raw: dict[str, str], names: list[str]) -> list[str] | None:
        """NodeAddr / NodeHostname: one per node, paired with NodeName by position."""
        if key not in raw:
            return names
        try:
            values = expand_hostlist(raw[key])
        except ValueError as exc:
            self.errors.append(line.problem(f"{key}={raw[key]}: {exc}"))
            return None
        if len(values) != len(names):
            self.errors.append(
                line.problem(f"{key}={raw[key]}: {len(values)} names for {len(names)} nodes in NodeName")
            )
            return None
        return values

    def _topology(self, line: ConfLine, a: dict[str, Any]) -> tuple[int, int, int, int, int] | None:
        """CPUs, Boards, Sockets, CoresPerSocket, ThreadsPerCore as Slurm derives them."""
        if "Sockets" in a and "SocketsPerBoard" in a:
            self.errors.append(line.problem("Sockets and SocketsPerBoard are mutually exclusive"))
            return None
        boards = a.get("Boards", 1)
        sockets = a["Sockets"] if "Sockets" in a else boards * a.get("SocketsPerBoard", 1)
        cores = a.get("CoresPerSocket", 1)
        threads = a.get("ThreadsPerCore", 1)
        topology_given = any(
            k in a for k in ("Boards", "Sockets", "SocketsPerBoard", "CoresPerSocket", "ThreadsPerCore")
        )
        if sockets * cores * threads > UINT16_MAX:
            self.errors.append(
                line.problem(
                    f"Sockets*CoresPerSocket*ThreadsPerCore={sockets * cores * threads}: "
                    f"must be at most {UINT16_MAX}"
                )
            )
            return None
        if "CPUs" not in a:
            return sockets * cores * threads, boards, sockets, cores, threads
        cpus = a["CPUs"]
        if not topology_given:
            # Slurm: CPUs alone describes that many single-core sockets.
            return cpus, boards, cpus, 1, 1
        if cpus not in (sockets, sockets * cores, sockets * cores * threads):
            product = sockets * cores * threads
            self.warnings.append(
                line.problem(
                    f"CPUs={cpus} matches none of Sockets, Sockets*CoresPerSocket or "
                    f"Sockets*CoresPerSocket*ThreadsPerCore; using {product}"
                )
            )
            cpus = product
        return cpus, boards, sockets, cores, threads

    # -- NodeSet lines

    def _nodesets(self, other: list[ConfLine], nodes: dict[str, NodeConf]) -> dict[str, list[str]]:
        """``NodeSet=name Nodes=<hostlist>`` or ``Feature=<feature>``: names usable in Nodes=."""
        sets: dict[str, list[str]] = {}
        for line in other:
            if line.key.lower() != "nodeset":
                continue
            members: list[str] = []
            feature = line.get("Feature") or line.get("Features")
            expr = line.get("Nodes")
            if feature:
                members += [n.name for n in nodes.values() if feature in n.features]
            if expr:
                try:
                    members += list(parse_nodeset(expr))
                except ValueError as exc:
                    self.errors.append(line.problem(f"Nodes={expr}: {exc}"))
            sets[line.value] = members
        return sets

    # -- partitions

    def _partitions(
        self, part_lines: list[_PartLine], nodes: dict[str, NodeConf], nodesets: dict[str, list[str]]
    ) -> list[PartitionConf]:
        partitions: dict[str, PartitionConf] = {}
        defaults: list[_PartLine] = []
        for pl in part_lines:
            line, a = pl.line, pl.attrs
            prefix = f"PartitionName={pl.name}"
            if pl.name in partitions:
                self.errors.append(
                    line.problem(
                        f"{prefix}: duplicate partition (first defined at {partitions[pl.name].source})"
                    )
                )
                continue
            members = self._partition_nodes(pl, nodes, nodesets)
            if members is None:
                continue
            tier = a.get("PriorityTier", a.get("Priority", 1))
            factor = a.get("PriorityJobFactor", a.get("Priority", 1))
            max_time, default_time = a.get("MaxTime"), a.get("DefaultTime")
            if default_time is not None and max_time is not None and default_time > max_time:
                self.warnings.append(
                    line.problem(f"{prefix}: DefaultTime exceeds MaxTime; DefaultTime ignored")
                )
                default_time = None
            max_nodes, min_nodes = a.get("MaxNodes"), a.get("MinNodes", 0)
            if max_nodes is not None and min_nodes > max_nodes:
                self.errors.append(
                    line.problem(f"{prefix}: MinNodes={min_nodes} exceeds MaxNodes={max_nodes}")
                )
                continue
            if a.get("Default", False):
                defaults.append(pl)
            partitions[pl.name] = PartitionConf(
                name=pl.name,
                nodes=tuple(members),
                nodes_expr=str(members),
                default=a.get("Default", False),
                max_time=max_time,
                default_time=default_time,
                max_nodes=max_nodes,
                min_nodes=min_nodes,
                state=a.get("State", "UP"),
                priority_tier=tier,
                priority_job_factor=factor,
                extra={k: v for k, v in pl.raw.items() if k not in _PARTITION_TYPED},
                source=line.source,
            )
        if len(defaults) > 1:
            # Slurm takes the last Default=YES ("changing default partition from ...").
            chosen = defaults[-1]
            for pl in defaults[:-1]:
                self.warnings.append(
                    pl.line.problem(
                        f"PartitionName={pl.name}: Default=YES overridden by "
                        f"PartitionName={chosen.name} at {chosen.line.source}"
                    )
                )
                old = partitions[pl.name]
                partitions[pl.name] = replace(old, default=False)
        return list(partitions.values())

    def _partition_nodes(
        self, pl: _PartLine, nodes: dict[str, NodeConf], nodesets: dict[str, list[str]]
    ) -> NodeSet | None:
        expr = pl.raw.get("Nodes", "")
        prefix = f"PartitionName={pl.name}: Nodes={expr}"
        members = NodeSet(resolver=RESOLVER_NOGROUP)
        if not expr.strip():
            return members
        try:
            for part in split_hostlist(expr):
                if part.upper() == "ALL":
                    members.updaten(nodes)
                elif part in nodesets:
                    members.updaten(nodesets[part])
                else:
                    members.update(parse_nodeset(part))
        except ValueError as exc:
            self.errors.append(pl.line.problem(f"{prefix}: {exc}"))
            return None
        missing = [n for n in members if n not in nodes]
        if missing:
            folded = NodeSet.fromlist(missing, resolver=RESOLVER_NOGROUP)
            self.errors.append(pl.line.problem(f"{prefix} names nodes not defined: {folded}"))
            return None
        return members

    # -- globals

    def _globals(
        self, options: dict[str, str], option_lines: dict[str, ConfLine], ctld_hosts: list[str]
    ) -> dict[str, Any]:
        top = self.ctx.files[0] if self.ctx.files else "slurm.conf"

        def get(key: str, parser: Callable[[str], Any], default: Any) -> Any:
            if key not in options:
                return default
            try:
                return parser(options[key])
            except ValueError as exc:
                self.errors.append(option_lines[key].problem(f"{key}={options[key]}: {exc}"))
                return default

        cluster = options.get("ClusterName", "")
        if not cluster:
            self.errors.append(ConfigProblem(top, 0, "ClusterName needs to be specified"))
        elif cluster != cluster.lower():
            self.warnings.append(
                option_lines["ClusterName"].problem(f"ClusterName={cluster}: converted to lowercase")
            )
            cluster = cluster.lower()
        # "host(address)" names the host and the address to reach it by.
        hosts = tuple(h.split("(", 1)[0].strip() for h in ctld_hosts if h.strip())
        if not hosts:
            self.errors.append(ConfigProblem(top, 0, "SlurmctldHost needs to be specified"))
        scheduler = options.get("SchedulerType", DEFAULT_SCHEDULER_TYPE)
        if scheduler not in _SCHEDULER_TYPES:
            self.warnings.append(
                option_lines["SchedulerType"].problem(
                    f"SchedulerType={scheduler}: not supported, using {DEFAULT_SCHEDULER_TYPE}"
                )
            )
            scheduler = DEFAULT_SCHEDULER_TYPE
        priority = options.get("PriorityType", DEFAULT_PRIORITY_TYPE)
        if priority not in _PRIORITY_TYPES:
            self.warnings.append(
                option_lines["PriorityType"].problem(
                    f"PriorityType={priority}: not supported, using {DEFAULT_PRIORITY_TYPE}"
                )
            )
            priority = DEFAULT_PRIORITY_TYPE
        resources = options.get("ResourcesFile")
        get("PrivateData", parse_private_data, None)  # checked here, read where it is honoured
        for key in ("SlurmctldDebug", "SlurmdDebug"):  # read by the processes that log
            get(key, config_level, None)
        get("DependencyParameters", parse_dependency_parameters, None)  # read by the pass
        get("SchedulerParameters", parse_scheduler_parameters, None)  # likewise
        for key, parse in PROLOG_PARSERS.items():  # likewise (cluster/core/prolog_conf.py)
            get(key, parse, None)
        return {
            "cluster_name": cluster,
            "slurmctld_host": hosts[0] if hosts else "",
            "slurmctld_hosts": hosts,
            "licenses": get("Licenses", parse_licenses, {}),
            "slurmd_timeout": get("SlurmdTimeout", _int(0), DEFAULT_SLURMD_TIMEOUT),
            "max_job_count": get("MaxJobCount", _int(1), DEFAULT_MAX_JOB_COUNT),
            "kill_wait": get("KillWait", _int(0), DEFAULT_KILL_WAIT),
            "return_to_service": get("ReturnToService", _int(0, 2), DEFAULT_RETURN_TO_SERVICE),
            "scheduler_type": scheduler,
            "priority_type": priority,
            "resources_file": str(self.conf_dir / resources) if resources else None,
        }
