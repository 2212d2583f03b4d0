"""``sstat``'s fields and how it prints them (pure: no I/O).

A step's figures come from the API as its agents reported them, node by node and task by
task (cluster/api/step_usage.py). :func:`step_stats` adds them up as Slurm's
``jobacctinfo_aggregate`` does: each TRES's largest value over the tasks (with the node and
task it was on, the first one on a tie), its smallest, and its total, of which the Ave*
fields are the share of one task (``slurmdb_ave_tres_usage``, whole units). As Slurm's
jobacct_gather, a task's own figure for Max* and Min* is the largest it has had, and for
the totals its current one; ``energy`` is counted per node, 0 without an energy plugin.

The field table is sstat's (src/sstat/sstat.c): names, default widths (negative: left
aligned), printers; ``-o`` names are case-insensitive prefixes matched in the table's
order. The printing is Slurm's: sizes by ``convert_num_unit`` (exact: ``100M``, ``2.50K``;
``--noconvert``: bytes), CPU times by sstat's ``_elapsed_time`` (``00:01:05``,
``1-02:03:04``), TRES lists sorted by name, AveCPUFreq the tasks' mean from kilo by
1000 (``2.60M``). fsched takes no ``--cpu-freq``, so ReqCPUFreq* print Slurm's ``Unknown``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from slurmwords import print_fields
from slurmwords.c_numbers import atoi
from slurmwords.durations import format_duration_long
from slurmwords.hostlists import fold_hostlist, natural_key

STR, UINT = "str", "uint"
DEFAULT_FIELDS = (
    "jobid,maxvmsize,maxvmsizenode,maxvmsizetask,avevmsize,maxrss,maxrssnode,maxrsstask,averss,"
    "maxpages,maxpagesnode,maxpagestask,avepages,mincpu,mincpunode,mincputask,avecpu,ntasks,"
    "avecpufreq,reqcpufreqmin,reqcpufreqmax,reqcpufreqgov,consumedenergy,maxdiskread,"
    "maxdiskreadnode,maxdiskreadtask,avediskread,maxdiskwrite,maxdiskwritenode,maxdiskwritetask,"
    "avediskwrite,tresusageinave,tresusageinmax,tresusageinmaxn,tresusageinmaxt,tresusageinmin,"
    "tresusageinminn,tresusageinmint,tresusageintot,tresusageoutave,tresusageoutmax,"
    "tresusageoutmaxn,tresusageoutmaxt,tresusageoutmin,tresusageoutminn,tresusageoutmint,"
    "tresusageouttot"
)
PID_FIELDS = "jobid,nodelist,pids"

CPU, ENERGY, DISK, MEM, PAGES, VMEM = "cpu", "energy", "fs/disk", "mem", "pages", "vmem"
CPU_TIME_ADJ = 1000  # Slurm keeps CPU time in milliseconds


class FieldError(ValueError):
    pass


# ------------------------------------------------------------------ the figures


@dataclass
class Extreme:
    value: int
    node: str
    task: int | None  # None: a per-node TRES (energy)


@dataclass
class Stats:
    """One step's figures, as sstat prints them."""

    job_step: str  # "12.batch"
    nodes: list[str] = field(default_factory=list)
    pids: dict[str, list[int]] = field(default_factory=dict)
    ntasks: int = 0
    in_max: dict[str, Extreme] = field(default_factory=dict)
    in_min: dict[str, Extreme] = field(default_factory=dict)
    in_tot: dict[str, int] = field(default_factory=dict)
    out_max: dict[str, Extreme] = field(default_factory=dict)
    out_min: dict[str, Extreme] = field(default_factory=dict)
    out_tot: dict[str, int] = field(default_factory=dict)
    cpu_freq: int | None = None  # the tasks' frequencies summed (None: none reported)

    def ave(self, tot: dict[str, int]) -> dict[str, int]:
        return {k: v // self.ntasks for k, v in tot.items()} if self.ntasks else {}

    @property
    def node_list(self) -> str:
        return fold_hostlist(self.nodes)


def _tally(  # noqa: PLR0917 - one TRES of one task into the three tables
    stats_max: dict, stats_min: dict, tot: dict, name: str, peak: int, now: int, where: Extreme
) -> None:
    top = stats_max.get(name)
    if top is None or top.value < peak:
        stats_max[name] = Extreme(peak, where.node, where.task)
    low = stats_min.get(name)
    if low is None or low.value > peak:
        stats_min[name] = Extreme(peak, where.node, where.task)
    tot[name] = tot.get(name, 0) + now


def _task_figures(task: dict) -> tuple[dict[str, tuple[int, int]], dict[str, tuple[int, int]]]:
    """(in, out): each TRES's (largest, current) for one task as the agent reported it."""
    cpu = round(float(task["cpu_secs"]) * CPU_TIME_ADJ)
    fin = {
        CPU: (cpu, cpu),
        MEM: (int(task["max_rss_kb"]) * 1024, int(task["rss_kb"]) * 1024),
        VMEM: (int(task["max_vmem_kb"]) * 1024, int(task["vmem_kb"]) * 1024),
        PAGES: (int(task["max_pages"]), int(task["pages"])),
    }
    out: dict[str, tuple[int, int]] = {}
    if task.get("read_bytes") is not None:
        fin[DISK] = (int(task["max_read_bytes"]), int(task["read_bytes"]))
    if task.get("write_bytes") is not None:
        out[DISK] = (int(task["max_write_bytes"]), int(task["write_bytes"]))
    return fin, out


def step_stats(job_id: int, step: dict) -> Stats:
    """The figures of one step of the API's answer (its ``nodes``, each with its tasks)."""
    stats = Stats(f"{job_id}.{step['step']}")
    for part in sorted(step.get("nodes") or [], key=lambda p: natural_key(p["node"])):
        node = part["node"]
        tasks = part.get("tasks") or []
        if not tasks:
            continue
        stats.nodes.append(node)
        stats.pids[node] = [pid for t in tasks for pid in t.get("pids", [])]
        stats.ntasks += len(tasks)
        # Energy is the node's (0: no energy plugin), in and out (consumed, and watts).
        for peaks, lows, tot in ((stats.in_max, stats.in_min, stats.in_tot),
                                 (stats.out_max, stats.out_min, stats.out_tot)):  # fmt: skip
            _tally(peaks, lows, tot, ENERGY, 0, 0, Extreme(0, node, None))
        for task in tasks:
            where = Extreme(0, node, int(task["task"]))
            if task.get("cpu_freq") is not None:
                stats.cpu_freq = (stats.cpu_freq or 0) + int(task["cpu_freq"])
            fin, out = _task_figures(task)
            for name, (peak, now) in fin.items():
                _tally(stats.in_max, stats.in_min, stats.in_tot, name, peak, now, where)
            for name, (peak, now) in out.items():
                _tally(stats.out_max, stats.out_min, stats.out_tot, name, peak, now, where)
    return stats


# ------------------------------------------------------------------ units


def convert_num(value: float, *, noconvert: bool = False, unit: int = 0) -> str:
    """Slurm's ``convert_num_unit`` with CONVERT_NUM_UNIT_EXACT: a unit up while the value
    is a whole number of half units (``2.50K``), or, with ``--noconvert``, as it is."""
    if int(value) == 0:
        return "0"
    if not noconvert:
        while value >= 1024 and int(value) % 512 == 0:
            value /= 1024
            unit += 1
    letter = "\0KMGTP?"[min(unit, 6)].replace("\0", "")
    return f"{int(value)}{letter}" if int(value) == value else f"{value:.2f}{letter}"


def convert_to(value: float, unit: int, want: str) -> str:
    """``convert_num_unit`` with a unit asked for (sacct's ``--units``): ``value``, counted
    in the ``unit``-th of ("", K, M, G, T, P), expressed in ``want`` (``3.91G``)."""
    if int(value) == 0:  # before converting: 3 pages in K are 0.00K
        return "0"
    target = "KMGTP".index(want) + 1
    while unit < target:
        value /= 1024
        unit += 1
    while unit > target:
        value *= 1024
        unit -= 1
    letter = "\0KMGTP"[unit].replace("\0", "")
    return f"{int(value)}{letter}" if int(value) == value else f"{value:.2f}{letter}"


def convert_kilo(value: float, *, noconvert: bool = False) -> str:
    """AveCPUFreq's ``convert_num_unit2`` from kilo by 1000, converting as far as it goes
    (not exactly): ``2.60M``; ``--noconvert``: ``2596K``."""
    if int(value) == 0:
        return "0"
    unit = 1
    if not noconvert:
        while value >= 1000:
            value /= 1000
            unit += 1
    letter = "\0KMGTP?"[min(unit, 6)]
    return f"{int(value)}{letter}" if int(value) == value else f"{value:.2f}{letter}"


def small_double(value: int, *, noconvert: bool) -> str:
    """sstat's ``_print_small_double`` (the disk fields)."""
    if value > 1:
        return convert_num(value, noconvert=noconvert)
    return f"{value:.2f}M" if value > 0 else "0"


def elapsed(ms: int) -> str:
    """sstat's ``_elapsed_time`` of whole seconds: ``00:MM:SS``, ``HH:MM:SS``, ``D-HH:MM:SS``."""
    return format_duration_long(max(0, ms) // CPU_TIME_ADJ)  # secs2time_str's form


def tres_text(
    values: dict[str, int], *, noconvert: bool, convert: bool = True, units: str | None = None
) -> str | None:
    """A usage TRES list as ``slurmdb_make_tres_string_from_simple`` prints it (BYTES flag):
    cpu as a time, the rest as sizes (in ``units`` when given: sacct's ``--units``);
    ``convert`` False (the Task lists) prints them raw, and cpu's figure (a task id there)
    still goes through the time, as Slurm's does."""
    parts = []
    for name in sorted(values):
        count = values[name]
        if name == CPU:
            text = format_duration_long(count // CPU_TIME_ADJ)
        elif units is not None and convert:
            text = convert_to(count, 0, units)
        else:
            text = convert_num(count, noconvert=noconvert or not convert)
        parts.append(f"{name}={text}")
    return ",".join(parts) or None


def node_text(values: dict[str, Extreme]) -> str | None:
    return ",".join(f"{name}={values[name].node}" for name in sorted(values)) or None


def task_text(values: dict[str, Extreme]) -> str | None:
    tasks = {name: e.task for name, e in values.items() if e.task is not None}
    return tres_text(tasks, noconvert=True, convert=False)


# ------------------------------------------------------------------ the table


@dataclass(frozen=True)
class Options:
    noconvert: bool = False


Getter = Callable[[Stats, Options], str | None]


def _size(kind: str, name: str, *, disk: bool = False) -> Getter:
    def get(s: Stats, o: Options) -> str | None:
        table = {"max": s.in_max, "min": s.in_min}.get(kind)
        if kind == "ave":
            value = s.ave(s.in_tot).get(name)
        else:
            found = table.get(name) if table is not None else None
            value = found.value if found else None
        if value is None:
            return None
        return (
            small_double(value, noconvert=o.noconvert) if disk else convert_num(value, noconvert=o.noconvert)
        )

    return get


def _out_size(kind: str) -> Getter:
    def get(s: Stats, o: Options) -> str | None:
        value = s.ave(s.out_tot).get(DISK) if kind == "ave" else getattr(s.out_max.get(DISK), "value", None)
        return None if value is None else small_double(value, noconvert=o.noconvert)

    return get


def where_value(s: Stats, table: str, name: str, what: str) -> str | None:
    """The node or task a figure of ``table`` was found on (Max*Node, MinCPUTask ...)."""
    found = getattr(s, table).get(name)
    value = None if found is None else (found.node if what == "node" else found.task)
    return None if value is None else str(value)


def _where(table: str, name: str, what: str) -> Getter:
    def get(s: Stats, _o: Options) -> str | None:
        return where_value(s, table, name, what)

    return get


def _cpu(kind: str) -> Getter:
    def get(s: Stats, _o: Options) -> str | None:
        value = s.ave(s.in_tot).get(CPU) if kind == "ave" else getattr(s.in_min.get(CPU), "value", None)
        return None if value is None else elapsed(value)

    return get


def _tres(attr: str, how: str) -> Getter:
    def get(s: Stats, o: Options) -> str | None:
        if how == "ave":
            return tres_text(s.ave(getattr(s, attr)), noconvert=o.noconvert)
        values = getattr(s, attr)
        if how == "tot":
            return tres_text(values, noconvert=o.noconvert)
        if how == "node":
            return node_text(values)
        if how == "task":
            return task_text(values)
        return tres_text({k: e.value for k, e in values.items()}, noconvert=o.noconvert)

    return get


def _cpu_freq(s: Stats, o: Options) -> str | None:
    if s.cpu_freq is None or not s.ntasks:
        return None
    return convert_kilo(s.cpu_freq / s.ntasks, noconvert=o.noconvert)


def _const(text: str | None) -> Getter:
    return lambda _s, _o: text


@dataclass(frozen=True)
class Column:
    name: str
    width: int
    kind: str
    value: Getter


_FIELDS: tuple[tuple[int, str, str, Getter], ...] = (
    (10, "AveCPU", STR, _cpu("ave")),
    (10, "AveCPUFreq", STR, _cpu_freq),
    (12, "AveDiskRead", STR, _size("ave", DISK, disk=True)),
    (12, "AveDiskWrite", STR, _out_size("ave")),
    (10, "AvePages", STR, _size("ave", PAGES)),
    (10, "AveRSS", STR, _size("ave", MEM)),
    (10, "AveVMSize", STR, _size("ave", VMEM)),
    (14, "ConsumedEnergy", STR, _const("0")),  # no energy plugin: Slurm's 0
    (17, "ConsumedEnergyRaw", UINT, _const("0")),
    (-12, "JobID", STR, lambda s, _o: s.job_step),
    (12, "MaxDiskRead", STR, _size("max", DISK, disk=True)),
    (15, "MaxDiskReadNode", STR, _where("in_max", DISK, "node")),
    (15, "MaxDiskReadTask", UINT, _where("in_max", DISK, "task")),
    (12, "MaxDiskWrite", STR, _out_size("max")),
    (16, "MaxDiskWriteNode", STR, _where("out_max", DISK, "node")),
    (16, "MaxDiskWriteTask", UINT, _where("out_max", DISK, "task")),
    (8, "MaxPages", STR, _size("max", PAGES)),
    (12, "MaxPagesNode", STR, _where("in_max", PAGES, "node")),
    (14, "MaxPagesTask", UINT, _where("in_max", PAGES, "task")),
    (10, "MaxRSS", STR, _size("max", MEM)),
    (10, "MaxRSSNode", STR, _where("in_max", MEM, "node")),
    (10, "MaxRSSTask", UINT, _where("in_max", MEM, "task")),
    (10, "MaxVMSize", STR, _size("max", VMEM)),
    (14, "MaxVMSizeNode", STR, _where("in_max", VMEM, "node")),
    (14, "MaxVMSizeTask", UINT, _where("in_max", VMEM, "task")),
    (10, "MinCPU", STR, _cpu("min")),
    (10, "MinCPUNode", STR, _where("in_min", CPU, "node")),
    (10, "MinCPUTask", UINT, _where("in_min", CPU, "task")),
    (20, "Nodelist", STR, lambda s, _o: s.node_list or None),
    (8, "NTasks", UINT, lambda s, _o: str(s.ntasks)),
    (20, "Pids", STR, lambda s, _o: ",".join(str(p) for n in s.nodes for p in s.pids.get(n, [])) or None),
    (10, "ReqCPUFreq", STR, _const("Unknown")),
    (13, "ReqCPUFreqMin", STR, _const("Unknown")),
    (13, "ReqCPUFreqMax", STR, _const("Unknown")),
    (13, "ReqCPUFreqGov", STR, _const("Unknown")),
    (14, "TRESUsageInAve", STR, _tres("in_tot", "ave")),
    (14, "TRESUsageInMax", STR, _tres("in_max", "value")),
    (18, "TRESUsageInMaxNode", STR, _tres("in_max", "node")),
    (18, "TRESUsageInMaxTask", STR, _tres("in_max", "task")),
    (14, "TRESUsageInMin", STR, _tres("in_min", "value")),
    (18, "TRESUsageInMinNode", STR, _tres("in_min", "node")),
    (18, "TRESUsageInMinTask", STR, _tres("in_min", "task")),
    (14, "TRESUsageInTot", STR, _tres("in_tot", "tot")),
    (15, "TRESUsageOutAve", STR, _tres("out_tot", "ave")),
    (15, "TRESUsageOutMax", STR, _tres("out_max", "value")),
    (19, "TRESUsageOutMaxNode", STR, _tres("out_max", "node")),
    (19, "TRESUsageOutMaxTask", STR, _tres("out_max", "task")),
    (15, "TRESUsageOutMin", STR, _tres("out_min", "value")),
    (19, "TRESUsageOutMinNode", STR, _tres("out_min", "node")),
    (19, "TRESUsageOutMinTask", STR, _tres("out_min", "task")),
    (15, "TRESUsageOutTot", STR, _tres("out_tot", "tot")),
)
FIELDS = tuple(Column(name, width, kind, value) for width, name, kind, value in _FIELDS)


def help_fields() -> str:
    """``-e``: the names four to a line, each in 19 columns (sstat's _help_fields_msg)."""
    out = []
    for i, col in enumerate(FIELDS):
        out.append(" " if i & 3 else ("\n" if i else ""))
        out.append(f"{col.name:<19}")
    return "".join(out) + "\n"


def parse_fields(spec: str) -> list[Column]:
    """The comma list of ``-o`` (several ``-o`` are one list): each name a case-insensitive
    prefix, first match in the table; ``%N`` sets the width (0 keeps the default)."""
    out = []
    for raw in spec.split(","):
        word = raw.strip()
        if not word:
            continue
        name, percent, width_text = word.partition("%")
        width = atoi(width_text) if percent else 0
        match = next((c for c in FIELDS if c.name.lower().startswith(name.lower())), None)
        if match is None:
            raise FieldError(f'Invalid field requested: "{name}"')
        out.append(Column(match.name, width or match.width, match.kind, match.value))
    return out


# ------------------------------------------------------------------ printing


def _cell(col: Column, text: str | None, parsable: str | None, last: bool) -> str:
    """Slurm's print_fields_str / print_fields_uint: a too-long string ends in ``+``."""
    if parsable:
        value = text or ""
        return value if (parsable == "P" and last) else value + "|"
    width = abs(col.width)
    value = text or (" " if col.kind == STR else "")
    if col.kind == STR and len(value) > width:
        value = value[: width - 1] + "+" if width else ""
    return (value.rjust(width) if col.width >= 0 else value.ljust(width)) + " "


def header(cols: list[Column], parsable: str | None) -> str:
    if parsable:
        return "".join(_cell(c, c.name, parsable, i == len(cols) - 1) for i, c in enumerate(cols)) + "\n"
    return print_fields.header_lines((c.name, c.width) for c in cols)


def line(cols: list[Column], stats: Stats, parsable: str | None, opts: Options) -> str:
    last = len(cols) - 1
    return "".join(_cell(c, c.value(stats, opts), parsable, i == last) for i, c in enumerate(cols)) + "\n"
