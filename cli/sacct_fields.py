"""``sacct``'s fields and how it prints them (pure: no I/O, ``now`` never read).

A row is a job or one of its steps, as the accounting API returns them.  The field table
follows Slurm's sacct: names, default widths (negative: left-aligned) and which printer each
field uses, since the printers differ in what they do with a value too wide for its column
(``print_fields_str`` cuts it and ends it with ``+``, dates and numbers are cut or overflow
without one).  A name in ``-o`` is matched case-insensitively as a prefix against the whole
table in Slurm's order (``-o state,elap`` is ``State,Elapsed``); Slurm's fields fsched does
not keep are in the table so the prefixes resolve as Slurm's do, and are refused.
"""

from __future__ import annotations

from collections.abc import Callable

from cli import sacct_stats as st
from cli.fmt import fold_array_tasks, slurm_time
from slurmwords import print_fields
from slurmwords import sstat_fields as sf
from slurmwords.c_numbers import atoi
from slurmwords.durations import format_duration_long

DEFAULT_FIELDS = "jobid,jobname,partition,account,alloccpus,state,exitcode"
BRIEF_FIELDS = "jobid,state,exitcode"
# sacct -l (src/sacct/sacct.h, LONG_FIELDS).
LONG_FIELDS = (
    "jobid,jobidraw,jobname,partition,maxvmsize,maxvmsizenode,maxvmsizetask,avevmsize,maxrss,"
    "maxrssnode,maxrsstask,averss,maxpages,maxpagesnode,maxpagestask,avepages,mincpu,mincpunode,"
    "mincputask,avecpu,ntasks,alloccpus,elapsed,state,exitcode,avecpufreq,reqcpufreqmin,"
    "reqcpufreqmax,reqcpufreqgov,reqmem,consumedenergy,maxdiskread,maxdiskreadnode,"
    "maxdiskreadtask,avediskread,maxdiskwrite,maxdiskwritenode,maxdiskwritetask,avediskwrite,"
    "reqtres,alloctres,tresusageinave,tresusageinmax,tresusageinmaxn,tresusageinmaxt,"
    "tresusageinmin,tresusageinminn,tresusageinmint,tresusageintot,tresusageoutmax,"
    "tresusageoutmaxn,tresusageoutmaxt,tresusageoutave,tresusageouttot"
)

STR, DATE, UINT, SECS = "str", "date", "uint", "secs"

# A row: (job, step) where step is None for the job's own line.
Row = tuple[dict, dict | None]
Getter = Callable[[dict, dict | None, "Options"], str | None]


class Options:
    """How values print: ``--units`` (K, M, G, T, P or None for Slurm's exact conversion)."""

    __slots__ = ("units",)

    def __init__(self, units: str | None = None) -> None:
        self.units = units


class Column:
    __slots__ = ("kind", "name", "value", "width")

    def __init__(self, name: str, width: int, kind: str, value: Getter | None) -> None:
        self.name = name
        self.width = width
        self.kind = kind
        self.value = value


# ------------------------------------------------------------------ values


convert_units = st.convert  # Slurm's convert_num_unit, shared with the statistics fields


def secs_text(secs: int | None) -> str | None:
    """``secs2time_str``: ``00:00:05``, ``1-00:00:00``."""
    return None if secs is None else format_duration_long(int(secs))


def cpu_text(secs: float | None) -> str | None:
    """TotalCPU as sacct prints it: ``MM:SS.mmm`` under an hour with a fraction, else
    ``00:MM:SS``, ``HH:MM:SS``, ``D-HH:MM:SS``."""
    if secs is None:
        return None
    whole = int(secs)
    millis = round((secs - whole) * 1000)
    if millis >= 1000:
        whole, millis = whole + 1, 0
    if millis and whole < 3600:
        minutes, seconds = divmod(whole, 60)
        return f"{minutes:02d}:{seconds:02d}.{millis:03d}"
    return format_duration_long(whole)


def exit_text(code: int, signal: int) -> str:
    """``exitcode:signal``; an exit status of 128 or more is printed less 128, as sacct does."""
    if signal:
        return f"0:{signal}"
    return f"{code - 128 if code >= 128 else code}:0"


def job_id_text(job: dict, step: dict | None) -> str:
    base = str(job["job_id"])
    if job.get("_array_fold"):
        base = f"{job['array_job_id']}_[{job['_array_fold']}]"
    elif job.get("array_job_id") is not None and job.get("array_task_id") is not None:
        base = f"{job['array_job_id']}_{job['array_task_id']}"
    return base if step is None else f"{base}.{step['step_id']}"


def state_text(job: dict, step: dict | None) -> str:
    """A job cancelled by someone prints ``CANCELLED by <uid>``, as sacct does."""
    if step is not None:
        return step["state"]
    if job["state"] == "CANCELLED" and job.get("cancelled_by") is not None:
        return f"CANCELLED by {job['cancelled_by']}"
    return job["state"]


def _time_limit(job: dict) -> str:
    minutes = job.get("time_limit")
    return "UNLIMITED" if minutes is None else secs_text(int(minutes) * 60) or ""


def _rss(row: dict, opts: Options) -> str | None:
    kb = row.get("max_rss_kb")
    return None if kb is None else convert_units(float(kb) * 1024, 0, opts.units)


def _req_mem(job: dict, opts: Options) -> str:
    return convert_units(float(job.get("req_mem_mb") or 0), 2, opts.units)


def _either(job_key: str, step_key: str | None = None) -> Getter:
    step_key = step_key or job_key

    def get(job: dict, step: dict | None, _opts: Options) -> str | None:
        value = (step if step is not None else job).get(step_key if step is not None else job_key)
        return None if value in (None, "") else str(value)

    return get


def _job_only(key: str) -> Getter:
    def get(job: dict, step: dict | None, _opts: Options) -> str | None:
        value = job.get(key) if step is None else None
        return None if value in (None, "") else str(value)

    return get


def _date(key: str, step_key: str | None = None) -> Getter:
    def get(job: dict, step: dict | None, _opts: Options) -> str:
        row_key = key if step is None else (step_key or key)
        return slurm_time((step if step is not None else job).get(row_key), "Unknown")

    return get


def _elapsed(job: dict, step: dict | None, _opts: Options) -> str | None:
    return secs_text((step if step is not None else job).get("elapsed") or 0)


def _cpu_time(job: dict, step: dict | None, _opts: Options) -> str | None:
    row = step if step is not None else job
    return secs_text(int(row.get("elapsed") or 0) * int(row.get("alloc_cpus") or 0))


def _exit(job: dict, step: dict | None, _opts: Options) -> str:
    row = step if step is not None else job
    return exit_text(int(row.get("exit_code") or 0), int(row.get("exit_signal") or 0))


def _derived(job: dict, step: dict | None, _opts: Options) -> str | None:
    return None if step is not None else _exit(job, None, _opts)


def _cpu_field(key: str) -> Getter:
    """TotalCPU, UserCPU, SystemCPU: ``_elapsed_time`` with milliseconds (``00:01.250``)."""
    seconds = st.cpu_seconds(key)

    def get(job: dict, step: dict | None, _opts: Options) -> str | None:
        return cpu_text(seconds(job, step))

    return get


_stats_max_rss = st.size("in_max", sf.MEM)


def _max_rss(job: dict, step: dict | None, opts: Options) -> str | None:
    # Slurm reports MaxRSS of steps only: the job's own line leaves it empty.
    if step is None:
        return None
    return _stats_max_rss(job, step, opts) if step.get("stats") else _rss(step, opts)


def _suspended(job: dict, step: dict | None, _opts: Options) -> str | None:
    return secs_text((step if step is not None else job).get("suspended") or 0)


def _nnodes(job: dict, step: dict | None, _opts: Options) -> str:
    return str((step if step is not None else job).get("nnodes") or 0)


def _cpus(job: dict, step: dict | None, _opts: Options) -> str:
    return str((step if step is not None else job).get("alloc_cpus") or 0)


def _partition(job: dict, step: dict | None, _opts: Options) -> str | None:
    return job.get("partition") or None if step is None else None


_PASSWD: dict[str, tuple[str, str, str] | None] = {}


def _ids(user: str) -> tuple[str, str, str] | None:
    """(uid, gid, group name) of the job's user on this host, as sacct's ``--local-uid``
    reads them; None for a name this host does not know."""
    if user not in _PASSWD:
        try:
            import grp  # noqa: PLC0415 - only UID, GID and Group pay for them
            import pwd  # noqa: PLC0415

            entry = pwd.getpwnam(user)
        except (ImportError, KeyError):
            _PASSWD[user] = None
        else:
            try:
                group = grp.getgrgid(entry.pw_gid).gr_name
            except KeyError:
                group = str(entry.pw_gid)
            _PASSWD[user] = (str(entry.pw_uid), str(entry.pw_gid), group)
    return _PASSWD[user]


def _id_field(index: int) -> Getter:
    """UID, GID, Group: on the job's line only, as sacct prints them (src/sacct/print.c)."""

    def value(job: dict, step: dict | None, _opts: Options) -> str | None:
        ids = None if step is not None else _ids(job.get("user") or "")
        return ids[index] if ids else None

    return value


# Slurm's sacct field table, in its order: (name, width, printer, getter or None when
# fsched does not keep that field).
FIELDS: tuple[Column, ...] = tuple(
    Column(*row)
    for row in (
        ("Account", 10, STR, lambda j, s, o: j.get("account") or None),
        ("AdminComment", 15, STR, None),
        ("AllocCPUS", 10, UINT, _cpus),
        ("AllocNodes", 10, STR, _nnodes),
        ("AllocTRES", 10, STR, _either("alloc_tres")),
        ("AssocID", 7, UINT, None),
        ("AveCPU", 10, STR, st.cpu("ave")),
        ("AveCPUFreq", 10, STR, st.cpu_freq),
        ("AveDiskRead", 14, STR, st.disk("ave")),
        ("AveDiskWrite", 14, STR, st.disk("ave_out")),
        ("AvePages", 10, STR, st.size("ave", sf.PAGES)),
        ("AveRSS", 10, STR, st.size("ave", sf.MEM)),
        ("AveVMSize", 10, STR, st.size("ave", sf.VMEM)),
        ("BlockID", 16, STR, None),
        ("Cluster", 10, STR, lambda j, s, o: j.get("cluster") or None),
        ("Comment", 14, STR, _job_only("comment")),
        ("Constraints", 19, STR, _job_only("constraints")),
        ("ConsumedEnergy", 14, STR, st.energy),
        ("ConsumedEnergyRaw", 17, UINT, st.energy),
        ("Container", 19, STR, None),
        ("CPUTime", 10, SECS, _cpu_time),
        (
            "CPUTimeRAW",
            10,
            UINT,
            lambda j, s, o: str(int((s or j).get("elapsed") or 0) * int((s or j).get("alloc_cpus") or 0)),
        ),
        ("DBIndex", -21, UINT, None),
        ("DerivedExitCode", 15, STR, _derived),
        ("Elapsed", 10, SECS, _elapsed),
        ("ElapsedRaw", 10, UINT, lambda j, s, o: str(int((s or j).get("elapsed") or 0))),
        ("Eligible", 19, DATE, _date("eligible_time", "start_time")),
        ("End", 19, DATE, _date("end_time")),
        ("ExitCode", 8, STR, _exit),
        ("Extra", 14, STR, None),
        ("FailedNode", 8, STR, None),
        ("Flags", 19, STR, None),
        ("GID", 6, UINT, _id_field(1)),
        ("Group", 9, STR, _id_field(2)),
        ("JobID", -12, STR, lambda j, s, o: job_id_text(j, s)),
        ("JobIDRaw", -12, STR, lambda j, s, o: str(j["job_id"]) + ("" if s is None else f".{s['step_id']}")),
        ("JobName", 10, STR, _either("name")),
        ("Layout", 9, STR, None),
        ("Licenses", 10, STR, _job_only("licenses")),
        ("MaxDiskRead", 12, STR, st.disk("in_max")),
        ("MaxDiskReadNode", 15, STR, st.where("in_max", sf.DISK, "node")),
        ("MaxDiskReadTask", 15, UINT, st.where("in_max", sf.DISK, "task")),
        ("MaxDiskWrite", 12, STR, st.disk("out_max")),
        ("MaxDiskWriteNode", 16, STR, st.where("out_max", sf.DISK, "node")),
        ("MaxDiskWriteTask", 16, UINT, st.where("out_max", sf.DISK, "task")),
        ("MaxPages", 8, STR, st.size("in_max", sf.PAGES)),
        ("MaxPagesNode", 12, STR, st.where("in_max", sf.PAGES, "node")),
        ("MaxPagesTask", 14, UINT, st.where("in_max", sf.PAGES, "task")),
        ("MaxRSS", 10, STR, _max_rss),
        ("MaxRSSNode", 10, STR, st.where("in_max", sf.MEM, "node")),
        ("MaxRSSTask", 10, UINT, st.where("in_max", sf.MEM, "task")),
        ("MaxVMSize", 10, STR, st.size("in_max", sf.VMEM)),
        ("MaxVMSizeNode", 14, STR, st.where("in_max", sf.VMEM, "node")),
        ("MaxVMSizeTask", 14, UINT, st.where("in_max", sf.VMEM, "task")),
        ("McsLabel", 12, STR, None),
        ("MinCPU", 10, STR, st.cpu("in_min")),
        ("MinCPUNode", 10, STR, st.where("in_min", sf.CPU, "node")),
        ("MinCPUTask", 10, UINT, st.where("in_min", sf.CPU, "task")),
        ("NCPUS", 10, UINT, _cpus),
        ("NNodes", 8, UINT, _nnodes),
        ("NodeList", 15, STR, _either("node_list")),
        ("NTasks", 8, UINT, lambda j, s, o: None if s is None else str(s.get("ntasks") or 0)),
        ("Partition", 10, STR, _partition),
        ("Planned", 10, SECS, None),
        ("PlannedCPU", 10, SECS, None),
        ("PlannedCPURAW", 13, UINT, None),
        ("Priority", 10, UINT, _job_only("priority")),
        ("QOS", 10, STR, _job_only("qos")),
        ("QOSRAW", 6, UINT, None),
        ("QOSREQ", 10, STR, None),
        ("Reason", 22, STR, _job_only("reason")),
        ("ReqCPUFreq", 10, STR, None),
        ("ReqCPUFreqGov", 13, STR, None),
        ("ReqCPUFreqMax", 13, STR, None),
        ("ReqCPUFreqMin", 13, STR, None),
        ("ReqCPUS", 8, UINT, lambda j, s, o: str((s or {}).get("alloc_cpus") or j.get("req_cpus") or 0)),
        ("ReqMem", 10, STR, lambda j, s, o: None if s is not None else _req_mem(j, o)),
        ("ReqNodes", 8, STR, lambda j, s, o: str(j.get("nnodes") if s is None else s.get("nnodes"))),
        ("ReqTRES", 10, STR, _job_only("req_tres")),
        ("Reservation", 20, STR, _job_only("reservation")),
        ("ReservationId", 8, UINT, None),
        ("Restarts", 8, UINT, _job_only("restarts")),
        ("SegmentSize", 11, UINT, None),
        ("SLUID", 14, STR, None),
        ("Start", 19, DATE, _date("start_time")),
        ("State", 10, STR, lambda j, s, o: state_text(j, s)),
        ("StdErr", 20, STR, None),
        ("StdIn", 20, STR, None),
        ("StdOut", 20, STR, None),
        ("Submit", 19, DATE, _date("submit_time", "start_time")),
        ("SubmitLine", 20, STR, None),
        ("Suspended", 10, SECS, _suspended),
        ("SystemComment", 15, STR, None),
        ("SystemCPU", 10, STR, _cpu_field("system_cpu_secs")),
        ("Timelimit", 10, STR, lambda j, s, o: None if s is not None else _time_limit(j)),
        (
            "TimelimitRaw",
            10,
            STR,
            lambda j, s, o: None if s is not None else str(j.get("time_limit") or "UNLIMITED"),
        ),
        ("TotalCPU", 10, STR, _cpu_field("total_cpu_secs")),
        ("TRESUsageInAve", 14, STR, st.tres("in_tot", "ave")),
        ("TRESUsageInMax", 14, STR, st.tres("in_max", "value")),
        ("TRESUsageInMaxNode", 18, STR, st.tres("in_max", "node")),
        ("TRESUsageInMaxTask", 18, STR, st.tres("in_max", "task")),
        ("TRESUsageInMin", 14, STR, st.tres("in_min", "value")),
        ("TRESUsageInMinNode", 18, STR, st.tres("in_min", "node")),
        ("TRESUsageInMinTask", 18, STR, st.tres("in_min", "task")),
        ("TRESUsageInTot", 14, STR, st.tres("in_tot", "tot")),
        ("TRESUsageOutAve", 15, STR, st.tres("out_tot", "ave")),
        ("TRESUsageOutMax", 15, STR, st.tres("out_max", "value")),
        ("TRESUsageOutMaxNode", 19, STR, st.tres("out_max", "node")),
        ("TRESUsageOutMaxTask", 19, STR, st.tres("out_max", "task")),
        ("TRESUsageOutMin", 15, STR, st.tres("out_min", "value")),
        ("TRESUsageOutMinNode", 19, STR, st.tres("out_min", "node")),
        ("TRESUsageOutMinTask", 19, STR, st.tres("out_min", "task")),
        ("TRESUsageOutTot", 15, STR, st.tres("out_tot", "tot")),
        ("UID", 6, UINT, _id_field(0)),
        ("User", 9, STR, lambda j, s, o: None if s is not None else j.get("user") or None),
        ("UserCPU", 10, STR, _cpu_field("user_cpu_secs")),
        ("WCKey", 10, STR, None),
        ("WCKeyID", 10, UINT, None),
        ("WorkDir", 20, STR, _job_only("work_dir")),
    )
)


class FieldError(ValueError):
    pass


def _blank(_job: dict, _step: dict | None, _opts: Options) -> None:
    return None


def parse_fields(spec: str, *, blank_unkept: bool = False) -> list[Column]:
    """``-o``'s comma list: each name a case-insensitive prefix (first match in the table's
    order), with an optional ``%width`` (``state%20`` right-aligned, ``%-20`` left-aligned,
    as sacct reads the number with ``atoi``); ``ALL`` is every field fsched keeps.  A field
    fsched does not keep is refused, or with ``blank_unkept`` (``-l``) printed empty."""
    out: list[Column] = []
    for raw in spec.split(","):
        word = raw.strip()
        if not word:
            continue
        name, percent, width_text = word.partition("%")
        width = atoi(width_text) if percent else None
        if name.lower() == "all"[: len(name)] and name:
            out.extend(
                Column(c.name, c.width if width is None else width, c.kind, c.value)
                for c in FIELDS
                if c.value
            )
            continue
        match = next((c for c in FIELDS if c.name.lower().startswith(name.lower())), None) if name else None
        if match is None:
            raise FieldError(f'Invalid field requested: "{name}"')
        if match.value is None and not blank_unkept:
            raise FieldError(f'Invalid field requested: "{name}" ({match.name} is not kept by fsched)')
        value = match.value or _blank
        out.append(Column(match.name, match.width if width is None else width, match.kind, value))
    return out


# ---------------------------------------------------------------- printing


class Layout:
    """Where fields go: fixed columns, or ``-p``/``-P`` with a delimiter."""

    __slots__ = ("delimiter", "parsable")

    def __init__(self, parsable: str | None = None, delimiter: str | None = None) -> None:
        self.parsable = parsable  # None, "p" (delimiter after every field) or "P" (between)
        self.delimiter = delimiter if delimiter is not None else "|"


def _cell(col: Column, text: str | None, layout: Layout, last: bool) -> str:
    if layout.parsable:
        value = text or ""
        return value if (layout.parsable == "P" and last) else value + layout.delimiter
    width = abs(col.width)
    if text is None or text == "":
        value = " " if col.kind == STR else ""
    else:
        value = text
        if col.kind == STR and len(value) > width:
            value = value[: width - 1] + "+" if width else ""
        elif col.kind == DATE:
            value = value[:width]
    return (value.rjust(width) if col.width >= 0 else value.ljust(width)) + " "


def header(cols: list[Column], layout: Layout) -> str:
    if layout.parsable:
        return "".join(_cell(c, c.name, layout, i == len(cols) - 1) for i, c in enumerate(cols)) + "\n"
    return print_fields.header_lines((c.name, c.width) for c in cols)


def line(cols: list[Column], row: Row, layout: Layout, opts: Options) -> str:
    job, step = row
    cells = []
    for i, col in enumerate(cols):
        assert col.value is not None
        cells.append(_cell(col, col.value(job, step, opts), layout, i == len(cols) - 1))
    return "".join(cells) + "\n"


def _never_started_key(job: dict) -> int | None:
    if job.get("state") == "PENDING" and job.get("array_task_id") is not None and not job.get("start_time"):
        return int(job["array_job_id"])
    return None


def fold_pending_tasks(jobs: list[dict]) -> list[dict]:
    """An array's tasks that never started print as one line, ``12_[3-9]``, as Slurm keeps
    them in one record until each starts (within one page of the API's answer)."""
    return fold_array_tasks(jobs, _never_started_key)


def rows_of(job: dict, *, allocations: bool, steps: set[str] | None) -> list[Row]:
    """A job's lines: its own, then its steps' (none with ``-X``); ``steps`` names the only
    steps asked for (``-j 12.batch``), which then print without the job's line."""
    if steps:
        return [(job, s) for s in job.get("steps", []) if s["step_id"] in steps]
    out: list[Row] = [(job, None)]
    if not allocations:
        out.extend((job, s) for s in job.get("steps", []))
    return out
