"""``fsched squeue``: list jobs (``GET /api/jobs/``) in Slurm's columns.

Filters go to the API as query parameters; formatting, array folding and
sorting happen here on the API's job objects (``format_jobs`` is pure and is
what the tests drive).  Without ``-r`` the pending tasks of one array fold into
one line ``12_[3-9%2]``, as Slurm shows an array's not yet started tasks.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from cli import clusters, fastargs
from cli.fmt import (
    Field,
    fold_array_tasks,
    make_parser,
    parse_format,
    render,
    slurm_time,
)
from cli.gres_fmt import tres_per_node
from slurmwords.durations import format_duration, format_duration_long, format_minutes
from slurmwords.hostlists import expand_hostlist
from slurmwords.memory import format_memory_mb
from slurmwords.reasons import slurm_reason
from slurmwords.version import VERSION_LINE

PROG = "squeue"
DEFAULT_FORMAT = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R"
LONG_FORMAT = "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R"
DEFAULT_SORT = "P,t,-p"
# --start: squeue's own defaults for it (each only where not given).
START_FORMAT = "%.18i %.9P %.8j %.8u %.2t %.19S %.6D %20Y %R"
START_SORT = "S"

# Slurm's job state numbers: squeue's "t" sort orders by them (pending first).
STATE_ORDER = {
    "PENDING": 0,
    "RUNNING": 1,
    "CONFIGURING": 1,
    "COMPLETING": 1,
    "SUSPENDED": 2,
    "STOPPED": 1,  # a flag on a RUNNING job in Slurm
    "COMPLETED": 3,
    "CANCELLED": 4,
    "FAILED": 5,
    "TIMEOUT": 6,
    "NODE_FAIL": 7,
    "PREEMPTED": 8,
    "BOOT_FAIL": 9,
    "DEADLINE": 10,
    "OUT_OF_MEMORY": 11,
    "REQUEUED": 0,
}
# States whose %R shows "(reason)" rather than the node list (Slurm's rule).
REASON_STATES = frozenset({"PENDING", "TIMEOUT", "OUT_OF_MEMORY", "DEADLINE", "FAILED", "REQUEUED"})


def job_id_str(job: dict) -> str:
    """``%i``: ``12``, ``12_3`` for an array task, ``12_[3-9%2]`` for a folded array."""
    if job.get("_array_fold"):
        return f"{job['array_job_id']}_[{job['_array_fold']}]"
    if job.get("array_job_id") is not None and job.get("array_task_id") is not None:
        return f"{job['array_job_id']}_{job['array_task_id']}"
    return str(job.get("job_id"))


def node_count(job: dict) -> int:
    if job.get("node_list") and job.get("state") not in REASON_STATES:
        try:
            return len(expand_hostlist(job["node_list"]))
        except ValueError:
            pass
    return int(job.get("min_nodes") or 1)


def reason_text(job: dict) -> str:
    """``%r``: the reason code alone, as scripts compare it (``QOSGrpJobsLimit``); fsched's
    detail is ``fsched explain``'s."""
    return slurm_reason(job.get("reason"), job.get("reason_detail"))


def reason_list(job: dict) -> str:
    """``%R``: ``(Priority)`` while waiting, the node list once it runs."""
    if job.get("state") in REASON_STATES:
        return f"({reason_text(job)})"
    return job.get("node_list") or ""


def time_left(job: dict) -> str:
    limit = job.get("time_limit")
    if limit is None:
        return "UNLIMITED"
    left = int(limit) * 60 - int(job.get("run_time") or 0)
    return format_duration(max(left, 0))


_IDS: dict[str, tuple[str, str, str]] = {}


def _ids(user: str | None) -> tuple[str, str, str]:
    """(uid, group name, gid) of a user name on this host; "(null)" for each unknown."""
    user = user or ""
    if user not in _IDS:
        uid = group = gid = "(null)"
        try:
            import grp  # noqa: PLC0415 - only %U, %g, %G pay for them
            import pwd  # noqa: PLC0415

            entry = pwd.getpwnam(user)
            uid, gid = str(entry.pw_uid), str(entry.pw_gid)
            group = grp.getgrgid(entry.pw_gid).gr_name
        except (ImportError, KeyError):
            group = gid if gid != "(null)" else group
        _IDS[user] = (uid, group, gid)
    return _IDS[user]


def _s(key: str, empty: str = "") -> Callable[[dict], str]:
    return lambda job: str(job.get(key)) if job.get(key) not in (None, "") else empty


# type -> (header, value). Slurm's squeue(1) job format letters.
FIELDS: dict[str, tuple[str, Callable[[dict], str]]] = {
    "a": ("ACCOUNT", _s("account", "(null)")),
    "A": ("JOBID", _s("job_id")),
    "b": ("TRES_PER_NODE", lambda j: tres_per_node(j.get("gres")) or "N/A"),
    "B": ("EXEC_HOST", _s("batch_host", "n/a")),
    "c": ("MIN_CPUS", _s("cpus_per_task", "1")),
    "C": ("CPUS", _s("num_cpus", "1")),
    "D": ("NODES", lambda j: str(node_count(j))),
    "e": ("END_TIME", lambda j: slurm_time(j.get("end_time"))),
    # Slurm's printed form: the terms not yet fulfilled, afterok:12_*(unfulfilled).
    "E": ("DEPENDENCY", _s("dependency", "(null)")),
    "f": ("FEATURES", _s("features", "(null)")),
    "F": ("ARRAY_JOB_ID", lambda j: str(j.get("array_job_id") or j.get("job_id"))),
    "h": ("OVER_SUBSCRIBE", lambda j: j.get("oversubscribe") or "OK"),
    "i": ("JOBID", job_id_str),
    "j": ("NAME", _s("name")),
    "k": ("COMMENT", _s("comment", "(null)")),
    "K": ("ARRAY_TASK_ID", lambda j: j.get("_array_fold") or _s("array_task_id", "N/A")(j)),
    "l": ("TIME_LIMIT", lambda j: format_minutes(j.get("time_limit"))),
    "L": ("TIME_LEFT", time_left),
    "m": ("MIN_MEMORY", lambda j: format_memory_mb(j.get("mem_per_node"))),
    "M": ("TIME", lambda j: format_duration(int(j.get("run_time") or 0))),
    "n": ("REQ_NODES", _s("req_nodes")),
    "N": ("NODELIST", _s("node_list")),
    "o": ("COMMAND", _s("command")),
    "p": ("PRIORITY", lambda j: f"{int(j.get('priority') or 0) / 4294967295:.8f}"),
    "P": ("PARTITION", _s("partition")),
    "q": ("QOS", _s("qos", "(null)")),
    "Q": ("PRIORITY", _s("priority", "0")),
    "r": ("REASON", reason_text),
    "R": ("NODELIST(REASON)", reason_list),
    "S": ("START_TIME", lambda j: slurm_time(j.get("start_time"))),
    "t": ("ST", lambda j: j.get("state_compact") or ""),
    "T": ("STATE", _s("state")),
    "u": ("USER", _s("user")),
    "v": ("RESERVATION", _s("reservation", "(null)")),
    "V": ("SUBMIT_TIME", lambda j: slurm_time(j.get("submit_time"))),
    "w": ("WCKEY", _s("wckey", "(null)")),
    "W": ("LICENSES", _s("licenses", "(null)")),
    "x": ("EXC_NODES", _s("exc_nodes")),
    # Backfill's planned nodes for a pending job (only with ?start=1: cli.squeue.query).
    "Y": ("SCHEDNODES", _s("sched_nodes", "(null)")),
    "y": ("NICE", _s("nice", "0")),
    "Z": ("WORK_DIR", _s("work_dir")),
    # Requests fsched's jobs cannot make (--sockets-per-node, --cores-per-socket,
    # --threads-per-core, --contiguous, --core-spec, --tmp): "not set", as squeue prints it.
    "H": ("SOCKETS_PER_NODE", lambda j: "*"),
    "I": ("CORES_PER_SOCKET", lambda j: "*"),
    "J": ("THREADS_PER_CORE", lambda j: "*"),
    "z": ("S:C:T", lambda j: "*:*:*"),
    "O": ("CONTIGUOUS", lambda j: "0"),
    "X": ("CORE_SPEC", lambda j: "N/A"),
    "d": ("MIN_TMP_DISK", lambda j: "0"),
    # The ids of the job's user on this host, as scontrol's UserId=/GroupId= show them.
    "U": ("UID", lambda j: _ids(j.get("user"))[0]),
    "G": ("GROUP", lambda j: _ids(j.get("user"))[2]),
    "g": ("GROUP", lambda j: _ids(j.get("user"))[1]),
}


def std_out(job: dict) -> str:
    """``-O stdout``: the path, or Slurm's default when the job names none."""
    return job.get("std_out") or f"{job.get('work_dir') or ''}/slurm-{job.get('job_id')}.out"


def std_err(job: dict) -> str:
    """``-O stderr``: N/A for a job that is no batch job (salloc, srun), else the path,
    stdout's when it has none of its own (src/squeue/print.c, _print_job_std_err)."""
    if job.get("batch") is False:
        return "N/A"
    return job.get("std_err") or std_out(job)


def _flag(key: str) -> Callable[[dict], str]:
    return lambda job: "1" if job.get(key) else "0"


def max_nodes(job: dict) -> str:
    return str(job.get("max_nodes") or node_count(job))


def accrue_time(job: dict) -> str:
    """``-O accruetime``: a job accrues age from its eligible time, once that has come."""
    eligible = job.get("eligible_time")
    if not eligible:
        return "N/A"
    from datetime import UTC, datetime  # noqa: PLC0415 - only this field reads the clock

    try:
        due = datetime.fromisoformat(eligible) <= datetime.now(UTC)
    except (TypeError, ValueError):
        due = True
    return slurm_time(eligible) if due else "N/A"


def pending_time(job: dict) -> str:
    """``-O pendingtime``: seconds from submission to the start, or to now while pending
    (src/squeue/print.c, _print_job_time_pending)."""
    from datetime import UTC, datetime  # noqa: PLC0415 - only this field reads the clock

    def at(key: str) -> datetime | None:
        try:
            when = datetime.fromisoformat(job[key]) if job.get(key) else None
        except (TypeError, ValueError):
            return None
        return when.replace(tzinfo=UTC) if when and when.tzinfo is None else when

    submitted, started, now = at("submit_time"), at("start_time"), datetime.now(UTC)
    if submitted is None:
        return "0"
    end = started if started is not None and started < now else now
    return str(int((end - submitted).total_seconds()))


def _time_min(job: dict) -> str:
    """``-O mintime``: --time-min as _print_secs prints it (00:00:00 without one)."""
    return format_duration_long(int(job.get("time_min") or 0) * 60)


# -O names of fields no -o letter prints (src/squeue/opts.c, print.c): name -> (kind,
# header, value).  Their kinds are private-use characters, which no -o format names.
LONG_ONLY: dict[str, tuple[str, str, Callable[[dict], str]]] = {
    "batchflag": ("\ue000", "BATCH_FLAG", _flag("batch")),
    "cpuspertask": ("\ue001", "CPUS_PER_TASK", _s("cpus_per_task", "N/A")),
    "cpus-per-task": ("\ue001", "CPUS_PER_TASK", _s("cpus_per_task", "N/A")),
    "deadline": ("\ue002", "DEADLINE", lambda j: slurm_time(j.get("deadline"))),
    "eligibletime": ("\ue003", "ELIGIBLE_TIME", lambda j: slurm_time(j.get("eligible_time"))),
    "exit_code": ("\ue004", "EXIT_CODE", _s("exit_code", "0:0")),
    "maxnodes": ("\ue005", "MAX_NODES", max_nodes),
    "numtask": ("\ue006", "TASKS", _s("num_tasks", "1")),
    "numtasks": ("\ue006", "TASKS", _s("num_tasks", "1")),
    "requeue": ("\ue007", "REQUEUE", _flag("requeue")),
    "restartcnt": ("\ue008", "RESTART_COUNT", _s("restart_count", "0")),
    "stderr": ("\ue009", "STDERR", std_err),
    "stdin": ("\ue00a", "STDIN", _s("std_in", "/dev/null")),
    "stdout": ("\ue00b", "STDOUT", std_out),
    "accruetime": ("\ue00c", "ACCRUE_TIME", accrue_time),
    "lastschedeval": ("\ue00d", "LAST_SCHED_EVAL", lambda j: slurm_time(j.get("last_sched_eval"))),
    "pendingtime": ("\ue00e", "PENDING_TIME", pending_time),
    "mintime": ("\ue00f", "TIME_MIN", _time_min),
    "tres": ("\ue010", "TRES_ALLOC", _s("tres", "N/A")),
    "allocsid": ("\ue011", "ALLOC_SID", _s("alloc_sid", "0")),
    "allocnodes": ("\ue012", "ALLOC_NODES", _s("alloc_node", "(null)")),
}
FIELDS.update({kind: (header, value) for kind, header, value in LONG_ONLY.values()})

# --sort letter -> key over a job object
SORT_KEYS: dict[str, Callable[[dict], object]] = {
    "a": lambda j: j.get("account") or "",
    "C": lambda j: int(j.get("num_cpus") or 0),
    "D": node_count,
    "e": lambda j: j.get("end_time") or "",
    "i": lambda j: (int(j.get("array_job_id") or j.get("job_id") or 0), int(j.get("array_task_id") or 0)),
    "j": lambda j: j.get("name") or "",
    "l": lambda j: j.get("time_limit") if j.get("time_limit") is not None else 1 << 31,
    "L": lambda j: (
        1 << 40 if j.get("time_limit") is None else int(j["time_limit"]) * 60 - int(j.get("run_time") or 0)
    ),
    "M": lambda j: int(j.get("run_time") or 0),
    "N": lambda j: j.get("node_list") or "",
    "p": lambda j: int(j.get("priority") or 0),
    "P": lambda j: j.get("partition") or "",
    "q": lambda j: j.get("qos") or "",
    "Q": lambda j: int(j.get("priority") or 0),
    "r": reason_text,
    "t": lambda j: STATE_ORDER.get(j.get("state") or "", 99),
    "T": lambda j: j.get("state") or "",
    "u": lambda j: j.get("user") or "",
    "V": lambda j: j.get("submit_time") or "",
    "y": lambda j: int(j.get("nice") or 0),
}


def _pending_task_key(job: dict) -> tuple | None:
    task = job.get("array_task_id")
    if job.get("state") == "PENDING" and job.get("array_job_id") is not None and task is not None:
        return (job["array_job_id"], job.get("reason"), job.get("partition"))
    return None


def fold_arrays(jobs: list[dict]) -> list[dict]:
    """Fold each array's pending tasks (same reason) into one row, as Slurm shows them."""
    out = []
    for row in fold_array_tasks(jobs, _pending_task_key):
        throttle = row.get("array_task_throttle")  # not (yet) in the API's job object
        folded = row.get("_array_fold")
        out.append({**row, "_array_fold": f"{folded}%{throttle}"} if folded and throttle else row)
    return out


def _by_start(jobs: list[dict], descending: bool) -> list[dict]:
    """squeue's ``S`` sort: a pending job planned in the past counts as now, and a job
    without a start goes last whichever the direction (sort.c's early return)."""
    from datetime import UTC, datetime  # noqa: PLC0415 - only this sort pays for it

    now = datetime.now(UTC)
    known, unknown = [], []
    for job in jobs:
        (known if job.get("start_time") else unknown).append(job)

    def when(job: dict):
        start = datetime.fromisoformat(job["start_time"])
        return max(start, now) if job.get("state") == "PENDING" else start

    return sorted(known, key=when, reverse=descending) + unknown


def sort_jobs(jobs: list[dict], spec: str) -> list[dict]:
    """Slurm's ``--sort``: comma list of letters, ``-`` for descending; stable by job id."""
    ordered = sorted(jobs, key=SORT_KEYS["i"])
    for item in reversed([s.strip() for s in spec.split(",") if s.strip()]):
        descending = item.startswith("-")
        letter = item.lstrip("+-")[:1]
        if letter == "S":
            ordered = _by_start(ordered, descending)
            continue
        key = SORT_KEYS.get(letter)
        if key is not None:
            ordered.sort(key=key, reverse=descending)
    return ordered


def format_jobs(
    jobs: list[dict],
    fmt: str = DEFAULT_FORMAT,
    *,
    header: bool = True,
    array_tasks: bool = False,
    sort: str | None = DEFAULT_SORT,
) -> list[str]:
    """The lines ``squeue`` prints for these API job objects."""
    tokens = parse_format(fmt)
    for token in tokens:
        if isinstance(token, Field) and token.kind not in FIELDS:
            raise ValueError(f"Invalid job format specification: {token.kind}")
    rows = jobs if array_tasks else fold_arrays(jobs)
    if sort:
        rows = sort_jobs(rows, sort)
    lines = []
    if header:
        lines.append(render(tokens, lambda f: FIELDS[f.kind][0]))
    for job in rows:
        lines.append(render(tokens, lambda f, job=job: FIELDS[f.kind][1](job)))
    return lines


# squeue's options in --help order, as ``cli.fastargs`` reads them.
OPTIONS: tuple[fastargs.Row, ...] = (
    (("-A", "--account"), "account", str, "account(s)", "comma separated list of accounts"),
    (("-a", "--all"), "all", "store_true", None, "display jobs in hidden partitions"),
    (("-h", "--noheader"), "noheader", "store_true", None, "no headers on output"),
    (("--help",), "help", "help", None, "show this help message and exit"),
    (("-j", "--jobs"), "jobs", str, "job(s)", "comma separated list of jobs IDs to view"),
    (("--json",), "json", "store_true", None, "produce JSON output"),
    (("-l", "--long"), "long", "store_true", None, "long report"),
    clusters.ROW,
    (("--me",), "me", "store_true", None, "equivalent to --user=<my username>"),
    (("-n", "--name"), "name", str, "job_name(s)", "comma separated list of job names to view"),
    (("-o", "--format"), "format", str, "format", "format specification"),
    (("-O", "--Format"), "format_long", str, "format", "format specification by field names"),
    (("-p", "--partition"), "partition", str, "partition(s)", "comma separated list of partitions to view"),
    (("-q", "--qos"), "qos", str, "qos(s)", "comma separated list of qos's to view"),
    (("-r", "--array"), "array", "store_true", None, "display one job array element per line"),
    (("-S", "--sort"), "sort", str, "fields", "comma separated list of fields to sort on"),
    (("--start",), "start", "store_true", None, "print expected start times of pending jobs"),
    (("-s", "--steps"), "steps", "store_true", None, "show only job steps"),
    (("-t", "--states"), "states", str, "state(s)", "comma separated list of states to view"),
    (("-u", "--user"), "user", str, "user_name(s)", "comma separated list of users to view"),
    (("-V", "--version"), "version", "store_true", None, "output version information and exit"),
    (("-i", "--iterate"), "iterate", int, "seconds", "specify an iteration period"),
)


def build_parser():
    p = make_parser(PROG, usage="%(prog)s [OPTIONS]", add_help=False)
    fastargs.add_rows(p, OPTIONS)
    return p


def parse_args(argv: list[str]) -> fastargs.Namespace:
    """What ``build_parser().parse_args(argv)`` gives, without argparse when ``cli.fastargs`` can."""
    fast = fastargs.parse(argv, OPTIONS)
    return fastargs.Namespace(vars(build_parser().parse_args(argv)) if fast is None else fast)


def check_filters(ns) -> str | None:
    """squeue's own refusals of ``-t`` and ``-j`` words, before any request: the lines to
    print (exit 1), or None."""
    import re  # noqa: PLC0415 - only a line with -t or -j pays for it

    from slurmwords.job_state_names import VALID_LIST, state_name  # noqa: PLC0415

    if ns.states and ns.states.strip().lower() != "all":
        for word in ns.states.split(","):
            if word and state_name(word) is None:
                return (
                    f"{PROG}: error: Invalid job state specified: {word}\n"
                    f"{PROG}: error: Valid job states include: {VALID_LIST}\n\n"
                )
    for word in (ns.jobs or "").split(","):
        if word and not re.fullmatch(r"\d+(_\d+)?", word.strip()):
            return f"{PROG}: error: Invalid job id: {word}\n"
    return None


def query(ns) -> dict:
    """The ``GET /api/jobs/`` filters for the parsed options."""
    params: dict = {}
    if ns.jobs:
        params["job_id"] = ns.jobs
    if ns.user:
        params["user"] = ns.user
    if ns.states:
        params["state"] = "all" if ns.states.strip().lower() == "all" else ns.states.upper()
    elif ns.start:
        params["state"] = "PD"
    elif ns.jobs:
        params["state"] = "all"  # a named job is shown whatever its state, as Slurm does
    if ns.partition:
        params["partition"] = ns.partition
    if ns.account:
        params["account"] = ns.account
    if ns.qos:
        params["qos"] = ns.qos
    if ns.name:
        params["name"] = ns.name
    return params


def known_users(client, users: str) -> str:
    """``-u``'s names less those that are no user, each refused as squeue's
    ``_build_user_list`` does (src/squeue/opts.c: an error, then squeue goes on with the
    others); "" when none is left."""
    from cli.user_names import resolved, unknown_users  # noqa: PLC0415

    names = [n for n in users.split(",") if n]
    unknown = unknown_users(client, names)
    for name in unknown:
        # Slurm's message ends in its own "\n" before error() adds one: a blank line.
        sys.stderr.write(f"{PROG}: error: Invalid user: {name}\n\n")
    as_users = resolved(names)
    return ",".join(dict.fromkeys(as_users[n] for n in names if n not in unknown))


def wants_plan(fmt: str, sort: str) -> bool:
    """Whether the output shows or sorts by backfill's plan (``%S``, ``%Y``, ``-S S``): then
    the listing asks the controller for it (``?start=1``, one dry-run pass)."""
    kinds = {t.kind for t in parse_format(fmt) if isinstance(t, Field)}
    letters = {item.strip().lstrip("+-")[:1] for item in sort.split(",")}
    return bool(kinds & {"S", "Y"}) or "S" in letters


def _long_format(ns, argv: list[str]) -> str:
    from cli.squeue_long_format import to_format  # noqa: PLC0415 - only -O pays for it

    if ns.format is not None:
        # squeue refuses whichever of the two comes second.
        long_at = max((i for i, w in enumerate(argv) if w.startswith(("-O", "--F"))), default=-1)
        short_at = max((i for i, w in enumerate(argv) if w.startswith(("-o", "--fo"))), default=-1)
        if long_at > short_at:
            raise ValueError("-O (--Format) is incompatible with -o (--format)")
        raise ValueError("-o (--format) is incompatible with -O (--Format)")
    unknown: list[str] = []
    fmt = to_format(ns.format_long, unknown)
    for name in unknown:
        sys.stderr.write(f"{PROG}: error: Invalid job format specification: {name}\n")
    return fmt


def literal_unknown(fmt: str) -> str:
    """``fmt`` with each field of a letter squeue does not know written as text, after
    squeue's error about it: squeue prints such a directive as it was given and goes on
    (src/squeue/opts.c, _parse_format)."""
    out = []
    for token in parse_format(fmt):
        if isinstance(token, str):
            out.append(token.replace("%", "%%"))
            continue
        spec = f"{'.' if token.right else ''}{'#' if token.auto else ''}{token.width or ''}{token.kind}"
        if token.kind in FIELDS:
            out.append(f"%{spec}")
        else:
            sys.stderr.write(f"{PROG}: error: Invalid job format specification: {token.kind}\n")
            out.append(f"%%{spec}")
    return "".join(out)


def main(argv: list[str]) -> int:
    ns = parse_args(argv)
    if ns.version:
        sys.stdout.write(VERSION_LINE)
        return 0
    from cli.client import ApiError, Client, current_user  # noqa: PLC0415

    if ns.me:
        ns.user = current_user()
    elif ns.user:
        try:
            ns.user = known_users(Client(), ns.user)
        except ApiError as exc:
            sys.stderr.write(f"{PROG}: error: {exc.message}\n")
            return 1
    if ns.steps:
        from cli import squeue_steps  # noqa: PLC0415 - only -s pays for it

        return squeue_steps.main(Client(), ns)
    fmt = ns.format or (START_FORMAT if ns.start else LONG_FORMAT if ns.long else DEFAULT_FORMAT)
    sort = ns.sort or (START_SORT if ns.start else DEFAULT_SORT)
    try:
        # --json prints every field: squeue never reads the format then (squeue.1, --json).
        if not ns.json:
            fmt = _long_format(ns, argv) if ns.format_long is not None else literal_unknown(fmt)
            format_jobs([], fmt, header=False)
    except ValueError as exc:
        sys.stderr.write(f"{PROG}: error: {exc}\n")
        return 1
    if (ns.states or ns.jobs) and (refused := check_filters(ns)):
        sys.stderr.write(refused)
        return 1
    client = Client()
    cluster = clusters.local_cluster(client, ns.clusters, PROG) if ns.clusters else None
    params = query(ns)
    if ns.json or wants_plan(fmt, sort):  # --json: a pending job's start_time is the plan's
        params["start"] = "1"
    while True:
        try:
            # Every name of -u unknown: Slurm's filter is an empty list, matching no job.
            jobs = [] if ns.user == "" else client.get_all("/api/jobs/", params)
        except ApiError as exc:
            sys.stderr.write(f"slurm_load_jobs error: {exc.message}\n")
            return 1
        if ns.jobs and not jobs:
            sys.stderr.write("slurm_load_jobs error: Invalid job id specified\n")
            return 1
        if ns.json:
            from cli import json_meta, squeue_json  # noqa: PLC0415 - only --json output pays for it

            context = json_meta.Context(client, ["squeue", *argv])
            sys.stdout.write(squeue_json.render(jobs, context, squeue_json.show_flags(ns)))
        else:
            lines = format_jobs(jobs, fmt, header=not ns.noheader, array_tasks=ns.array, sort=sort)
            if cluster and not ns.noheader:
                lines.insert(0, f"CLUSTER: {cluster}")
            if (ns.long or ns.iterate) and not ns.noheader:  # squeue's print_date()
                import time  # noqa: PLC0415

                lines.insert(0, time.strftime("%a %b %d %H:%M:%S %Y"))
            sys.stdout.write("".join(line + "\n" for line in lines))
        if not ns.iterate:
            return 0
        sys.stdout.write("\n")
        sys.stdout.flush()
        import time  # noqa: PLC0415

        time.sleep(ns.iterate)
