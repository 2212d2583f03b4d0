"""``fsched sacct``: the accounting of jobs and their steps (``GET /api/accounting/jobs/``).

Prints Slurm's sacct lines: a job's own line, then one per step (``N.batch`` today; srun's
``N.0``, ``N.1`` ... attach the same way); with ``-D``, a requeued job's earlier runs
first, each with its own steps, as Slurm keeps a record per run; in the fields of ``-o`` (default
``JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode``).  The fields and their
printing are ``cli.sacct_fields``; the command line is ``cli.sacct_args``.  Pages of jobs
are printed as they arrive, so a year of jobs is never held in memory at once (``--json``
excepted, which prints one document).
"""

from __future__ import annotations

import os
import sys

from cli import sacct_args, sacct_fields

PROG = "sacct"
API = "/api/accounting/jobs/"
PAGE = 1000
_STEP_NAMES = frozenset({"batch", "extern", "interactive"})

USAGE = """\
Usage: sacct [options]
  -a, --allusers        jobs of every user (default: your own; all for root, or with -j)
  -A, --accounts=list   jobs charged to these accounts
  -b, --brief           --format=jobid,state,exitcode
  -D, --duplicates      every run of a requeued job (its earlier runs REQUEUED, NODE_FAIL ...)
  -B, --batch-script    each job's batch script (kept with AccountingStoreFlags=job_script)
      --delimiter=chars separator of -p/-P output (default '|')
      --env-vars        each job's environment (kept with AccountingStoreFlags=job_env)
  -e, --helpformat      list the fields -o takes
  -E, --endtime=time    jobs eligible before this time (default now)
  -i, --nnodes=min[-max] jobs allocated this many nodes (min alone: exactly min)
  -I, --ncpus=min[-max] jobs allocated this many CPUs (min alone: exactly min)
  -j, --jobs=list       these jobs (N, N_T for an array task, N.step; an array's id: all tasks)
  -k, --timelimit-min=time  jobs whose time limit is this (with -K: at least this)
  -K, --timelimit-max=time  with -k: jobs whose time limit is at most this
  -l, --long            sacct's long field list (fields fsched does not keep print empty)
  -L, --allclusters     jobs of every cluster (fsched's controller runs one)
  -M, --clusters=list   jobs of these clusters (all: every one)
      --json            print JSON
      --name=list       jobs of these names
  -n, --noheader        no header line
  -N, --nodelist=nodes  jobs that ran on any of these nodes (a hostlist: node[01-04])
  -o, --format=list     fields to print, each optionally name%width
  -p, --parsable        '|' after each field;  -P, --parsable2: '|' between fields
  -q, --qos=list        jobs of these QOS
  -r, --partition=list  jobs of these partitions
  -s, --state=list      jobs in these states during the time window (default start: now)
  -S, --starttime=time  jobs eligible after this time (default 00:00 today)
  -T, --truncate        jobs' start and end cut to the time window
  -u, --user=list       jobs of these users (-1: every user)
      --units=[KMGTP]   print sizes in this unit
  -X, --allocations     the jobs' own lines only, no steps
Times: HH:MM[:SS][AM|PM], MMDD[YY], MM/DD[/YY], MM.DD[.YY], MM/DD[/YY]-HH:MM[:SS],
YYYY-MM-DD[THH:MM[:SS]], now[{+|-}count[seconds|minutes|hours|days|weeks]], today, midnight
"""


class UsageError(Exception):
    pass


# ------------------------------------------------------------------ times


def parse_when(text: str, now):  # -> datetime
    """sacct's -S/-E: Slurm's ``parse_time`` in its past mode, where a time of day alone or
    a date without a year means its last occurrence, not its next (``-S 08:00`` after 08:00
    is this morning, before it yesterday's)."""
    import re  # noqa: PLC0415 - only -S/-E pay for it
    from datetime import timedelta  # noqa: PLC0415

    from slurmwords.begin_time import parse_begin_time  # noqa: PLC0415

    moment = parse_begin_time(text, now)
    s = text.strip().lower()
    if moment <= now or any(word in s for word in ("now", "tomorrow", "uts")):
        return moment
    if re.fullmatch(r"[0-9]{1,2}:[0-9]{2}(:[0-9]{2})?\s*([ap]m)?", s):
        return moment - timedelta(days=1)
    if not re.match(r"[0-9]{4}-|[0-9]{1,2}[/.][0-9]{1,2}[/.][0-9]{2}|[0-9]{6}", s):
        try:
            return moment.replace(year=moment.year - 1)
        except ValueError:  # 29 February
            return moment.replace(year=moment.year - 1, day=28)
    return moment


# --------------------------------------------------------------- options


def _split(values: list[str]) -> list[str]:
    return [v for value in values for v in value.split(",") if v]


def job_selection(values: list[str]) -> dict[str, set[str] | None]:
    """-j's items by job (``12``, ``12_3``) -> the steps asked for (None: the job whole)."""
    out: dict[str, set[str] | None] = {}
    for item in _split(values):
        base, dot, step = item.partition(".")
        job, _, task = base.partition("_")
        ok = job.isascii() and job.isdigit() and (not task or (task.isascii() and task.isdigit()))
        if not ok or (dot and not (step in _STEP_NAMES or (step.isascii() and step.isdigit()))):
            raise UsageError(f"Bad job/step specified: {item}")
        if not dot:
            out[base] = None
        elif out.get(base, set()) is not None:
            out.setdefault(base, set()).add(step)  # type: ignore[union-attr]
    return out


def steps_wanted(job: dict, selection: dict[str, set[str] | None]) -> set[str] | None:
    """The steps of ``job`` that -j named alone (``12.batch``), or None for all of them."""
    keys = [str(job["job_id"])]
    if job.get("array_job_id") is not None:
        keys += [f"{job['array_job_id']}_{job['array_task_id']}", str(job["array_job_id"])]
    found = [selection[k] for k in keys if k in selection]
    if not found or any(f is None for f in found):
        return None
    return set().union(*found)  # type: ignore[arg-type]


class Fatal(Exception):
    """A refusal sacct words as ``fatal`` (its ``fatal()``), before any output."""


# The states sacct's accounting keeps (src/sacct/options.c, _supported_state); another
# state's name (a flag such as COMPLETING) is refused.
ACCOUNTED_STATES = frozenset(
    {
        "PENDING", "RUNNING", "SUSPENDED", "COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL",
        "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY", "REQUEUED", "RESIZING", "REVOKED",
    }
)  # fmt: skip
# Accounted states no fsched job is ever in: valid words that match nothing.
NEVER_HERE = frozenset({"RESIZING", "REVOKED"})


def accounted_states(words: list[str]) -> list[str]:
    """-s's words as state names (``cd`` -> ``COMPLETED``), refused as sacct's
    ``_addto_state_char_list`` refuses them."""
    from slurmwords.job_state_names import state_name  # noqa: PLC0415

    out = []
    for word in words:
        name = state_name(word)
        if name is None:
            raise Fatal(f"unrecognized job state value '{word}'")
        if name not in ACCOUNTED_STATES:
            raise Fatal(f"job state {word} is not supported / accounted")
        out.append(name)
    return out


def build_query(opts: dict, now) -> dict[str, str]:  # now: datetime
    """The API's query parameters for the options, with Slurm's defaults: the caller's
    own jobs (every user's with -a, -u -1 or -j), from 00:00 today (from now with -s;
    no time limit with -j)."""
    params: dict[str, str] = {}
    jobs = _split(opts["jobs"])
    users = _split(opts["user"])
    if jobs:
        params["job_id"] = ",".join(jobs)
    if "-1" in users:
        users, opts["allusers"] = [], True
    if users:
        params["user"] = ",".join(users)
    elif opts["allusers"] or jobs:
        params["all_users"] = "1"
    for option, name in (
        ("accounts", "account"),
        ("partition", "partition"),
        ("names", "name"),
        ("qos", "qos"),
    ):
        if values := _split(opts[option]):
            params[name] = ",".join(values)
    if opts["nodelist"]:
        params["nodelist"] = opts["nodelist"]
    _add_ranges(params, opts)
    if opts["duplicates"]:
        params["duplicates"] = "1"
    if states := _split(opts["state"]):
        # "" when every state is one no fsched job is ever in: no job is asked for.
        params["state"] = ",".join(n for n in accounted_states(states) if n not in NEVER_HERE)
    for option, name in (("starttime", "start"), ("endtime", "end")):
        if opts[option]:
            try:
                params[name] = str(int(parse_when(opts[option], now).timestamp()))
            except ValueError:
                raise UsageError(f"Invalid time specification: {opts[option]}") from None
    if "start" not in params and not jobs:
        start = now if opts["state"] else now.replace(hour=0, minute=0, second=0, microsecond=0)
        params["start"] = str(int(start.timestamp()))
    return params


def _add_ranges(params: dict[str, str], opts: dict) -> None:
    """-i, -I, -k/-K as the API's ``nnodes``, ``ncpus``, ``timelimit`` (``min[-max]``),
    left out where slurmdbd would not filter (a minimum of 0, -K without -k)."""
    from cli import sacct_ranges  # noqa: PLC0415 - only these options pay for it

    try:
        for option, name, what in (
            ("nnodes", "nnodes", "requested node range"),
            ("ncpus", "ncpus", "requested cpu range"),
        ):
            low, high = sacct_ranges.folded_range(opts[option], what)
            if value := sacct_ranges.range_param(low, high):
                params[name] = value
    except sacct_ranges.RangeError as exc:
        raise UsageError(str(exc)) from None
    try:
        limit = sacct_ranges.time_limit_param(opts["timelimit_min"], opts["timelimit_max"])
    except sacct_ranges.RangeError as exc:
        raise Fatal(str(exc)) from None
    if limit:
        params["timelimit"] = limit


def names_the_local_cluster(client, opts: dict) -> bool:
    """Whether -M/-L let this controller's cluster's jobs in. Like Slurm's sacct, which
    asks the database for the named clusters' jobs, a name it does not know is no error:
    it only has no jobs. The name is read from the controller only when -M is given."""
    names = [n.lower() for n in _split(opts["clusters"])]
    if opts["allclusters"] or not names or "all" in names or "-1" in names:
        return True
    config = client.get("/api/config/")
    local = (config.get("cluster_name") if isinstance(config, dict) else None) or "cluster"
    return local.lower() in names


def columns(opts: dict) -> list[sacct_fields.Column]:
    """-o's fields, then -b's, then -l's (as sacct appends them); $SACCT_FORMAT or the
    default where none. -l's fields fsched does not keep print empty: refused by name in
    -o, they would make -l unusable."""
    if opts["long"] and opts["format"]:
        raise Fatal(
            "Options -o(--format) and -l(--long) are mutually exclusive. Please remove one and retry."
        )
    specs = list(opts["format"])
    if opts["brief"]:
        specs.append(sacct_fields.BRIEF_FIELDS)
    if not specs and not opts["long"]:
        specs.append(os.environ.get("SACCT_FORMAT") or sacct_fields.DEFAULT_FIELDS)
    try:
        cols = sacct_fields.parse_fields(",".join(specs))
        if opts["long"]:
            cols += sacct_fields.parse_fields(sacct_fields.LONG_FIELDS, blank_unkept=True)
        return cols
    except sacct_fields.FieldError as exc:
        raise UsageError(str(exc)) from None


def help_fields() -> str:
    """-e: the field names, four a line, as sacct lists them."""
    names = [c.name for c in sacct_fields.FIELDS if c.value is not None]
    lines = [" ".join(f"{n:<19}" for n in names[i : i + 4]).rstrip() for i in range(0, len(names), 4)]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------- run


def pages(client, params: dict[str, str]):
    """Every job, page by page (the API's keyset cursor)."""
    if params.get("state") == "":
        return
    after = 0
    while True:
        answer = client.get(API, {**params, "limit": str(PAGE), **({"after": str(after)} if after else {})})
        yield answer.get("jobs", [])
        after = answer.get("next")
        if not after:
            return


def _scripts(client, opts: dict, params: dict[str, str]) -> int:
    """-B / --env-vars: each job's script or environment, no table and no header."""
    from cli import sacct_scripts  # noqa: PLC0415 - only -B and --env-vars pay for it

    if not names_the_local_cluster(client, opts):
        return 0
    kind = "script" if opts["batchscript"] else "environment"
    keep = sacct_scripts.stored(client, kind)
    for page in pages(client, params):
        sys.stdout.write("".join(sacct_scripts.text(client, job, kind, keep) for job in page))
    return 0


def _truncation(params: dict[str, str]) -> tuple[int, int]:
    """-T's window in epoch seconds: the query's start (0: none) and its end cut at now."""
    import time  # noqa: PLC0415

    from cli import sacct_truncate  # noqa: PLC0415 - only -T pays for it

    end = int(params["end"]) if "end" in params else None
    return int(params.get("start", 0)), sacct_truncate.window_end(end, int(time.time()))


def main(argv: list[str]) -> int:
    try:
        opts = sacct_args.parse(argv)
    except sacct_args.ArgError as exc:
        sys.stderr.write(f'{PROG}: {exc}\nTry "{PROG} --help" for more information\n')
        return 1
    if opts["help"] or opts["usage"]:
        sys.stdout.write(USAGE)
        return 0
    if opts["helpformat"]:
        sys.stdout.write(help_fields())
        return 0
    from datetime import datetime  # noqa: PLC0415

    units = opts["units"]
    if units is not None and (len(units) != 1 or units.upper() not in "KMGTP"):
        sys.stderr.write(f"{PROG}: fatal: Invalid unit type\n")
        return 1
    try:
        cols = columns(opts)
        selection = job_selection(opts["jobs"])
        params = build_query(opts, datetime.now().astimezone())
    except UsageError as exc:
        sys.stderr.write(f"{PROG}: error: {exc}\n")
        return 1
    except Fatal as exc:
        sys.stderr.write(f"{PROG}: fatal: {exc}\n")
        return 1
    from cli.client import ApiError, Client, CliError  # noqa: PLC0415
    from cli.user_names import resolved, unknown_users  # noqa: PLC0415

    client = Client()
    layout = sacct_fields.Layout(
        "P" if opts["parsable2"] else "p" if opts["parsable"] else None, opts["delimiter"]
    )
    fmt = sacct_fields.Options(units.upper() if units else None)
    try:
        if unknown := unknown_users(client, [u for u in _split(opts["user"]) if u != "-1"]):
            # slurm_addto_id_char_list (src/common/slurm_protocol_defs.c): the first name
            # without a uid ends sacct before its header.
            sys.stderr.write(f"{PROG}: error: Invalid user id: {unknown[0]}\n")
            return 1
        if "user" in params:  # a uid given as a number: its login name
            params["user"] = ",".join(dict.fromkeys(resolved(params["user"].split(",")).values()))
        if opts["json"]:
            from cli import sacct_json  # noqa: PLC0415 - only --json pays for it

            local = names_the_local_cluster(client, opts)
            jobs = [job for page in pages(client, params) for job in page] if local else []
            if opts["truncate"]:
                from cli import sacct_truncate  # noqa: PLC0415 - only -T pays for it

                window = _truncation(params)
                jobs = [sacct_truncate.truncated(job, *window) for job in jobs]
            sys.stdout.write(sacct_json.render(jobs, ["sacct", *argv]))
            return 0
        if opts["batchscript"] or opts["envvars"]:
            return _scripts(client, opts, params)
        if not opts["noheader"]:
            sys.stdout.write(sacct_fields.header(cols, layout))
        if not names_the_local_cluster(client, opts):
            return 0
        cut = _truncation(params) if opts["truncate"] else None
        if cut is not None:
            from cli import sacct_truncate  # noqa: PLC0415 - only -T pays for it

        for page in pages(client, params):
            out = []
            # Folded first: an array's tasks that never started are one record in Slurm's
            # database, cut as one.
            jobs = sacct_fields.fold_pending_tasks(page)
            for job in jobs if cut is None else [sacct_truncate.truncated(j, *cut) for j in jobs]:
                rows = sacct_fields.rows_of(
                    job, allocations=bool(opts["allocations"]), steps=steps_wanted(job, selection)
                )
                out.extend(sacct_fields.line(cols, row, layout, fmt) for row in rows)
            sys.stdout.write("".join(out))
    except ApiError as exc:
        raise CliError(exc.message) from None
    return 0
