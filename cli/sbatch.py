"""``fsched sbatch``: submit a batch script (``POST /api/jobs/``).

Options come from three places, highest precedence first, as in Slurm: the
command line, ``SBATCH_*`` input environment variables, and ``#SBATCH`` lines
at the top of the script (before its first command line).  ``build_request``
turns the merged options into the API body; it does no I/O so it is tested
directly.
"""

from __future__ import annotations

import os
import sys

from cli import clusters, fastargs, job_option_checks
from slurmwords.nice import DEFAULT_NICE, parse_nice
from slurmwords.version import VERSION_LINE

PROG = "sbatch"

# Options Slurm has and fsched does not: parsed, so that the error names the option
# (rather than argparse's "unrecognized arguments"), and refused before anything is sent,
# from the command line and #SBATCH lines alike. A job that asked for them would not run
# as its author meant, so none is ever ignored.
UNSUPPORTED = (
    ("--cores-per-socket",),
    ("-m", "--distribution"),
    ("--hint",),
    ("--mem-per-gpu",),
    ("--priority",),
    ("--profile",),
    ("--propagate",),
    ("--sockets-per-node",),
    ("--threads-per-core",),
    ("--tmp",),
)
# Options among UNSUPPORTED that may come without a value (sbatch(1): --propagate[=rlimit]).
UNSUPPORTED_ALONE = ("--propagate",)

# SBATCH_* input environment variables -> option dest (Slurm's sbatch(1) list).
INPUT_ENV = {
    "SBATCH_ACCOUNT": "account",
    "SBATCH_ARRAY_INX": "array",
    "SBATCH_CONSTRAINT": "constraint",
    "SBATCH_ERROR": "error",
    "SBATCH_EXPORT": "export",
    "SBATCH_GRES": "gres",
    "SBATCH_GPUS": "gpus",
    "SBATCH_GPUS_PER_NODE": "gpus_per_node",
    "SBATCH_GPUS_PER_TASK": "gpus_per_task",
    "SBATCH_CPUS_PER_GPU": "cpus_per_gpu",
    "SBATCH_INPUT": "input",
    "SBATCH_JOB_NAME": "job_name",
    "SBATCH_MEM_PER_CPU": "mem_per_cpu",
    "SBATCH_OPEN_MODE": "open_mode",
    "SBATCH_OUTPUT": "output",
    "SBATCH_PARTITION": "partition",
    "SBATCH_QOS": "qos",
    "SBATCH_RESERVATION": "reservation",
    "SBATCH_SIGNAL": "signal",
    "SBATCH_TIMELIMIT": "time",
    "SBATCH_WCKEY": "wckey",
}

# option dest -> API body field, for options passed through unchanged.
BODY_FIELDS = {
    "partition": "partition",
    "nodes": "nodes",
    "ntasks": "ntasks",
    "cpus_per_task": "cpus_per_task",
    "mem": "mem",
    "time": "time",
    "account": "account",
    "qos": "qos",
    "output": "output",
    "error": "error",
    "input": "input",
    "nodelist": "nodelist",
    "exclude": "exclude",
    "licenses": "licenses",
    "resources": "resources",
    "gres": "gres",
    "gpus": "gpus",
    "gpus_per_node": "gpus_per_node",
    "gpus_per_task": "gpus_per_task",
    "cpus_per_gpu": "cpus_per_gpu",
    "reservation": "reservation",
    "begin": "begin",
    "array": "array",
    "constraint": "constraint",
    "wckey": "wckey",
    "exclusive": "exclusive",
    "oversubscribe": "oversubscribe",
    "extra": "extra",
    "layout": "layout",
    "nice": "nice",
    "dependency": "dependency",
    "comment": "comment",
    "open_mode": "open_mode",
    "time_min": "time_min",
    "signal": "signal",
    "mem_per_cpu": "mem_per_cpu",
    "ntasks_per_node": "ntasks_per_node",
    "deadline": "deadline",
    "get_user_env": "get_user_env",
    "mail_type": "mail_type",
    "mail_user": "mail_user",
}


def _unsupported(flags: tuple[str, ...]) -> fastargs.Row:
    long = next(f for f in flags if f.startswith("--"))
    store = fastargs.OptionalValue("") if long in UNSUPPORTED_ALONE else str
    return (flags, "unsupported_" + long[2:].replace("-", "_"), store, None, "not supported by fsched")


MEM_EXCLUSIVE = "--mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive."

_NICE_ALONE = fastargs.OptionalValue(str(DEFAULT_NICE))
_USER_ENV_ALONE = fastargs.OptionalValue("8")  # Slurm's default timeout, seconds

# sbatch's options in --help order: (flags, dest, store, metavar, help) as
# ``cli.fastargs`` reads them; ``str``/``int`` take a value, ``True``/``False``
# are flags storing that constant.
OPTIONS: tuple[fastargs.Row, ...] = (
    (("-a", "--array"), "array", str, "indexes", "job array index values (0-15%%4, 1,3,5-7)"),
    (("-A", "--account"), "account", str, "name", "charge job to specified account"),
    (("--begin",), "begin", str, "time", "defer job until HH:MM MM/DD/YY, now+60, ISO time"),
    (("-C", "--constraint"), "constraint", str, "list", "specify a list of constraints"),
    (("-c", "--cpus-per-task"), "cpus_per_task", int, "ncpus", "number of cpus required per task"),
    (
        ("-d", "--dependency"),
        "dependency",
        str,
        "type:jobid[:time]",
        "defer job until condition on jobid is satisfied",
    ),
    (("-D", "--chdir"), "chdir", str, "directory", "set working directory for batch script"),
    (("--deadline",), "deadline", str, "time", "remove the job if no ending possible before this deadline"),
    (("-e", "--error"), "error", str, "err", "file for batch script's standard error"),
    (
        ("--exclusive",),
        "exclusive",
        fastargs.OptionalValue("exclusive"),
        "exclusive|oversubscribe",
        "allocate nodes in exclusive mode",
    ),
    (("--export",), "export", str, "names", "specify environment variables to export (ALL, NONE, list)"),
    (("--extra",), "extra", str, "string", "an arbitrary string"),
    # sbatch(1): --get-user-env[=timeout][mode]; alone, 8 seconds and a login shell.
    (("--get-user-env",), "get_user_env", _USER_ENV_ALONE, "timeout", "load the user's login environment"),
    (("--gres",), "gres", str, "list", "required generic resources per node (gpu:2, gpu:tesla:1)"),
    (("-G", "--gpus"), "gpus", str, "n", "count of GPUs required for the job ([type:]n)"),
    (("--gpus-per-node",), "gpus_per_node", str, "n", "number of GPUs required per allocated node"),
    (("--gpus-per-task",), "gpus_per_task", str, "n", "number of GPUs required per spawned task"),
    (("--cpus-per-gpu",), "cpus_per_gpu", str, "n", "number of CPUs required per allocated GPU"),
    (("-H", "--hold"), "hold", True, None, "submit job in held state"),
    (("-i", "--input"), "input", str, "in", "file for batch script's standard input"),
    (("-J", "--job-name"), "job_name", str, "jobname", "name of job"),
    (("-L", "--licenses", "--license"), "licenses", str, "names", "required license"),
    (("--mail-type",), "mail_type", str, "type", "notify on state change: BEGIN, END, FAIL or ALL"),
    (("--mail-user",), "mail_user", str, "user", "who to send email notification for job state changes"),
    clusters.ROW,
    (("--mem",), "mem", str, "MB", "minimum amount of real memory (4G, 500)"),
    (("--mem-per-cpu",), "mem_per_cpu", str, "MB", "maximum amount of real memory per allocated cpu"),
    (("--layout",), "layout", str, "layout", "the job's layout (shown in SLURM_RESUME_FILE)"),
    (("-N", "--nodes"), "nodes", str, "N", "number of nodes on which to run (N = min[-max])"),
    # sbatch(1): --nice[=adjustment], 100 when given alone.
    (("--nice",), "nice", _NICE_ALONE, "value", "decrease scheduling priority by value"),
    (("-n", "--ntasks"), "ntasks", int, "ntasks", "number of tasks to run"),
    (("--ntasks-per-node",), "ntasks_per_node", int, "n", "number of tasks to invoke on each node"),
    (("--no-requeue",), "requeue", False, None, "if set, do not requeue"),
    (("-o", "--output"), "output", str, "out", "file for batch script's standard output"),
    (("--open-mode",), "open_mode", str, "{append|truncate}", "output and error file open mode"),
    (("-s", "--oversubscribe"), "oversubscribe", True, None, "over subscribe resources with other jobs"),
    (("-p", "--partition"), "partition", str, "partition", "partition requested"),
    (("--parsable",), "parsable", True, None, "outputs only the jobid"),
    (("-q", "--qos"), "qos", str, "qos", "quality of service"),
    (("-Q", "--quiet"), "quiet", True, None, "quiet mode (no warnings)"),
    (("--requeue",), "requeue", True, None, "permit the job to requeue"),
    (("--reservation",), "reservation", str, "name", "allocate resources from named reservation"),
    (("--resources",), "resources", str, "names", "required hierarchical resources (as -L, HRES only)"),
    (("--signal",), "signal", str, "[[R][B]:]num[@time]", "send signal when time limit within time seconds"),
    (("-t", "--time"), "time", str, "minutes", "time limit (minutes, MM:SS, HH:MM:SS, D-HH)"),
    (("--time-min",), "time_min", str, "minutes", "minimum time limit (if distinct)"),
    (("--test-only",), "test_only", True, None, "validate, estimate start; do not submit"),
    (("-V", "--version"), "version", True, None, "output version information and exit"),
    (("-W", "--wait"), "wait", True, None, "wait for completion of submitted job"),
    (("--wckey",), "wckey", str, "wckey", "wckey to run job under"),
    (("-w", "--nodelist"), "nodelist", str, "hosts", "request a specific list of hosts"),
    (("--wrap",), "wrap", str, "command", "wrap command string in a sh script and submit"),
    (("-x", "--exclude"), "exclude", str, "hosts", "exclude a specific list of hosts"),
    (("--comment",), "comment", str, "name", "arbitrary comment"),
    *(_unsupported(flags) for flags in UNSUPPORTED),
)
# The positional script and the words after it (argparse's "?" and "...").
POSITIONALS = ("script", "script_args")


def build_parser():
    from cli.fmt import make_parser  # noqa: PLC0415 - argparse only when cli.fastargs gives up

    usage = "%(prog)s [OPTIONS(0)...] [ : [OPTIONS(N)...]] script(0) [args(0)...]"
    p = make_parser(PROG, usage=usage, int_words=True)
    fastargs.add_rows(p, OPTIONS)
    p.add_argument("script", nargs="?", help="batch script (read from stdin if omitted)")
    p.add_argument("script_args", nargs="...", help="arguments passed to the script")
    return p


def parse_args(argv: list[str]) -> fastargs.Namespace:
    """What ``build_parser().parse_args(argv)`` gives, without argparse when ``cli.fastargs`` can."""
    fast = fastargs.parse(argv, OPTIONS, POSITIONALS)
    return fastargs.Namespace(vars(build_parser().parse_args(argv)) if fast is None else fast)


# ------------------------------------------------------------ #SBATCH lines


def _tokens(text: str) -> list[str]:
    """Split a directive's arguments as Slurm does: quotes group, ``\\`` escapes, ``#`` ends."""
    out: list[str] = []
    current: list[str] = []
    quote = ""
    have = escape = False
    for char in text:
        if escape:
            current.append(char)
            escape = False
        elif char == "\\":
            escape = have = True
        elif quote:
            if char == quote:
                quote = ""
            else:
                current.append(char)
        elif char in "\"'":
            quote, have = char, True
        elif char == "#":
            break
        elif char.isspace():
            if have or current:
                out.append("".join(current))
            current, have = [], False
        else:
            current.append(char)
            have = True
    if have or current:
        out.append("".join(current))
    return out


def script_directives(script: str, prefix: str = "#SBATCH") -> list[str]:
    """The option words of the ``#SBATCH`` lines before the script's first command.

    Like Slurm, scanning stops at the first line that is neither blank nor a
    comment; ``#SBATCH`` further down is an ordinary comment.
    """
    args: list[str] = []
    for line in script.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if not stripped.startswith("#"):
            break
        if line.startswith(prefix) and (len(line) == len(prefix) or line[len(prefix)].isspace()):
            args.extend(_tokens(line[len(prefix) :]))
    return args


# ----------------------------------------------------------- request body


def merge_options(cli: dict, env: dict, script: dict) -> dict:
    """Command line over ``SBATCH_*`` over ``#SBATCH``; ``None`` means not given."""
    merged = dict(script)
    for layer in (env, cli):
        for key, value in layer.items():
            if value is not None:
                merged[key] = value
    return merged


def env_options(environ: dict) -> dict:
    opts: dict = {dest: environ[name] for name, dest in INPUT_ENV.items() if environ.get(name)}
    if environ.get("SBATCH_REQUEUE"):
        opts["requeue"] = True
    if environ.get("SBATCH_NO_REQUEUE"):
        opts["requeue"] = False
    if environ.get("SBATCH_HOLD"):
        opts["hold"] = True
    return opts


def export_environment(spec: str | None, environ: dict) -> dict:
    """The ``environment`` sent with the job, per ``--export`` (Slurm's semantics).

    ``ALL`` (default) sends everything; ``NONE`` only the ``SLURM_*`` variables;
    a list ``A,B=x`` sends the named variables (``=`` sets a value) plus
    ``SLURM_*`` ones, and everything too if ``ALL`` is in the list.
    """
    spec = (spec or "ALL").strip()
    if spec.upper() == "ALL":
        return dict(environ)
    result = {k: v for k, v in environ.items() if k.startswith("SLURM_")}
    if spec.upper() == "NONE":
        return result
    for item in spec.split(","):
        name, eq, value = item.partition("=")
        if not name:
            continue
        if name.upper() == "ALL" and not eq:
            result = {**environ, **result}
        elif name.upper() == "NONE" and not eq:
            continue
        elif eq:
            result[name] = value
        elif name in environ:
            result[name] = environ[name]
    return result


def build_request(
    opts: dict,
    *,
    script: str | None,
    script_name: str | None,
    script_args: list[str] | None,
    environ: dict,
    cwd: str,
) -> dict:
    """The ``POST /api/jobs/`` body for merged options and a script (or ``--wrap``)."""
    opts = dict(opts)
    job_option_checks.settle_exclusive(opts)  # --exclusive's word as the request's flags
    body: dict = {}
    if opts.get("wrap") is not None:
        body["wrap"] = opts["wrap"]
        name = "wrap"
    else:
        body["script"] = script or ""
        body["argv"] = list(script_args or [])
        name = os.path.basename(script_name) if script_name else "sbatch"
    body["name"] = opts.get("job_name") or name
    for dest, field in BODY_FIELDS.items():
        if opts.get(dest) is not None:
            body[field] = opts[dest]
    body["work_dir"] = os.path.normpath(os.path.join(cwd, os.path.expanduser(opts.get("chdir") or cwd)))
    if opts.get("hold"):
        body["hold"] = True
    if opts.get("requeue") is not None:
        body["requeue"] = bool(opts["requeue"])
    if opts.get("test_only"):
        body["test_only"] = True
    body["environment"] = export_environment(opts.get("export"), environ)
    export = (opts.get("export") or "").strip()
    if export and export.upper() != "ALL":
        # sbatch's opt.c: the job's steps inherit --export through SLURM_EXPORT_ENV, which
        # srun reads (unless the caller's environment has one already; ALL is srun's default).
        body["environment"].setdefault("SLURM_EXPORT_ENV", environ.get("SLURM_EXPORT_ENV", export))
    # sbatch's set_envs (src/sbatch/opt.c): the counts it puts in the job's environment
    # itself, whatever --export says.
    if opts.get("cpus_per_task") is not None:
        body["environment"]["SLURM_CPUS_PER_TASK"] = str(opts["cpus_per_task"])
    if opts.get("ntasks") is not None:
        body["environment"]["SLURM_NTASKS"] = body["environment"]["SLURM_NPROCS"] = str(opts["ntasks"])
    # sbatch.c's _set_submit_dir_env: where it was run from (a --chdir does not change it).
    body["environment"]["SLURM_SUBMIT_DIR"] = cwd
    body["environment"]["SLURM_SUBMIT_HOST"] = os.uname().nodename
    body.update(submitted_from())
    # sbatch(1): with --export=NONE "Slurm will then implicitly attempt to load the user's
    # environment on the node ..., as if --get-user-env was specified".
    if (opts.get("export") or "").strip().upper() == "NONE" and body.get("get_user_env") is None:
        body["get_user_env"] = _USER_ENV_ALONE.const
    return body


def submitted_from() -> dict:
    """AllocNode:Sid: this host and session, as libslurm's submit fills alloc_sid with
    getsid(0) (the host: slurmctld takes the credential's; fsched the command's word)."""
    return {"alloc_node": os.uname().nodename, "alloc_sid": os.getsid(0)}


def check_script(script: str) -> str | None:
    """Slurm's sanity checks on a batch script; the error message or ``None``."""
    if not script.strip():
        return "Batch script is empty!"
    if not script.startswith("#!"):
        return (
            "This does not look like a batch script.  The first\n"
            "sbatch: error: line must start with #! followed by the path to an interpreter.\n"
            "sbatch: error: For instance: #!/bin/sh"
        )
    if "\0" in script:
        return "The Slurm controller does not allow scripts that contain a NULL character '\\0'."
    if "\r\n" in script:
        return (
            "Batch script contains DOS line breaks (\\r\\n)\n"
            "sbatch: error: instead of expected UNIX line breaks (\\n)."
        )
    return None


# ------------------------------------------------------------------- main


def _err(message: str) -> int:
    sys.stderr.write(f"{PROG}: error: {message}\n")
    return 1


def _namespace_dict(ns) -> dict:
    return {k: v for k, v in vars(ns).items() if k not in ("script", "script_args")}


def main(argv: list[str]) -> int:
    ns = parse_args(argv)
    if ns.version:
        sys.stdout.write(VERSION_LINE)
        return 0
    cli_opts = _namespace_dict(ns)
    script = script_name = None
    if ns.wrap is not None:
        if ns.script is not None:
            return _err("script arguments not permitted with --wrap option")
        script_opts: dict = {}
    else:
        script_name = ns.script
        try:
            if script_name is None:
                script = sys.stdin.read()
            else:
                with open(script_name, encoding="utf-8", errors="surrogateescape") as handle:
                    script = handle.read()
        except OSError as exc:
            return _err(f"Unable to open file {script_name}: {exc.strerror}")
        problem = check_script(script)
        if problem:
            return _err(problem)
        words = script_directives(script)
        script_ns = parse_args(words) if words else None
        if script_ns is not None and (script_ns.script is not None or script_ns.wrap is not None):
            bad = script_ns.script if script_ns.script is not None else "--wrap"
            return _err(f"Invalid #SBATCH directive: {bad!r}")
        script_opts = _namespace_dict(script_ns) if script_ns is not None else {}
    if cli_opts.get("mem") is not None and cli_opts.get("mem_per_cpu") is not None:
        return _err(MEM_EXCLUSIVE)
    opts = merge_options(cli_opts, env_options(dict(os.environ)), script_opts)
    # The command line's memory option replaces the other one of a lower layer, as Slurm's
    # validate_memory_options lets a --mem given on the command line win over #SBATCH.
    for given, other in (("mem", "mem_per_cpu"), ("mem_per_cpu", "mem")):
        if cli_opts.get(given) is not None:
            opts.pop(other, None)
    if opts.get("mem") is not None and opts.get("mem_per_cpu") is not None:
        return _err(MEM_EXCLUSIVE)
    if problem := job_option_checks.first_problem(opts):
        return _err(problem)
    if opts.get("nice") is not None:
        try:
            opts["nice"] = parse_nice(opts["nice"])
        except ValueError as exc:
            return _err(str(exc))

    for dest, value in opts.items():
        if dest.startswith("unsupported_") and value is not None:
            option = "--" + dest[len("unsupported_") :].replace("_", "-")
            return _err(f"{option} is not supported by fsched")
    if opts.get("mail_type") is not None:
        from slurmwords.mail import parse_mail_type  # noqa: PLC0415 - re and dataclasses only when asked

        try:
            opts["mail_type"] = parse_mail_type(opts["mail_type"])
        except ValueError as exc:
            return _err(str(exc))

    body = build_request(
        opts,
        script=script,
        script_name=script_name,
        script_args=ns.script_args,
        environ=dict(os.environ),
        cwd=os.getcwd(),
    )
    from cli.client import ApiError, Client  # noqa: PLC0415 - --help and errors above need no socket

    client = Client()
    cluster = clusters.local_cluster(client, opts["clusters"], PROG) if opts.get("clusters") else None
    try:
        answer = submit(client, body, quiet=bool(opts.get("quiet")))
    except (ApiError, OutcomeLost) as exc:
        # slurmctld's line before the refusal ("Memory specification can not be satisfied").
        # One "sbatch: error: " per line, as Slurm's print_multi_line_string.
        if isinstance(exc, ApiError) and isinstance(err_msg := exc.payload.get("err_msg"), str):
            for line in err_msg.splitlines() or [""]:
                _err(line)
        return _err(f"Batch job submission failed: {exc}")
    if not isinstance(answer, dict):
        return _err("Batch job submission failed: unexpected answer from the controller")
    if opts.get("test_only"):
        message = answer.get("message") or f"Job to start at {answer.get('start_time')}"
        sys.stderr.write(f"{PROG}: {message}\n")
        return 0
    # The job-submit plugin's messages (slurm.user_msg), as sbatch prints them: "sbatch: <line>".
    if isinstance(user_msg := answer.get("user_msg"), str):
        for line in user_msg.splitlines():
            sys.stderr.write(f"{PROG}: {line}\n")
    job_id = answer.get("job_id")
    # With -M Slurm names the cluster: "Submitted batch job 5 on cluster c1", "5;c1".
    if opts.get("parsable"):
        sys.stdout.write(f"{job_id};{cluster}\n" if cluster else f"{job_id}\n")
    else:
        sys.stdout.write(f"Submitted batch job {job_id}" + (f" on cluster {cluster}\n" if cluster else "\n"))
    sys.stdout.flush()
    if opts.get("wait"):
        return wait_for(client, [int(j) for j in answer.get("job_ids") or [job_id]])
    return 0


# How long the one retry of a submission waits for a controller that refuses connections:
# a broken connection usually means the controller is being restarted.
RETRY_CONNECT_PATIENCE = 15.0
# A 503 "nothing was stored" names when to retry (Retry-After); longer than this is not waited.
RETRY_AFTER_CAP = 30.0


def idempotency_key() -> str:
    """A fresh random (version 4) UUID; ``uuid`` itself costs a few ms of import."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class OutcomeLost(Exception):
    """The submission's answer was lost twice: the job may or may not be stored."""


def submit(client, body: dict, *, quiet: bool = False) -> object:
    """POST the job with an ``Idempotency-Key``; once more with the same key if the first
    answer was lost (connection closed or reset, or the server's 503 "check before
    retrying").  The key makes the retry safe: the controller returns the jobs the first
    request stored instead of storing them again.  Raises ``ApiError`` (refused: nothing
    stored), ``ConnectError`` (the first request was never sent: nothing stored) and
    ``OutcomeLost``."""
    from cli.client import ApiError, ConnectError, OutcomeUnknown  # noqa: PLC0415

    headers = {"Idempotency-Key": idempotency_key()}
    first_not_stored = None
    try:
        return client.request("POST", "/api/jobs/", body, headers=headers)
    except OutcomeUnknown:
        lost = "the connection to the controller closed before its answer"
    except ApiError as exc:
        if exc.status != 503:
            raise
        lost = f"the controller answered 503 ({exc.message})"
        wait = min(exc.retry_after or 0.0, RETRY_AFTER_CAP)
        if exc.not_stored:
            first_not_stored = exc
            if not quiet:
                again = f"Retrying in {wait:g}s with the same Idempotency-Key"
                sys.stderr.write(f"{PROG}: job not stored: {exc.message} {again}\n")
        if wait:
            import time  # noqa: PLC0415 - only a refused submission waits

            time.sleep(wait)  # the database is restarting: an immediate retry meets it down too
    if first_not_stored is None and not quiet:
        sys.stderr.write(f"{PROG}: {lost}; retrying with the same Idempotency-Key\n")
    try:
        return client.request(
            "POST", "/api/jobs/", body, headers=headers, connect_patience=RETRY_CONNECT_PATIENCE
        )
    except ConnectError as exc:
        unknown = exc.message
    except ApiError as exc:
        if exc.status != 503:
            raise
        if first_not_stored is not None and exc.not_stored:
            raise  # refused twice, and each time the controller said that nothing was stored
        unknown = f"503 ({exc.message})"
    raise OutcomeLost(
        f"{lost}, and the retry failed too: {unknown}. Whether the job was stored is unknown: "
        f"check squeue for it (Idempotency-Key {headers['Idempotency-Key']})"
    )


FINISHED = frozenset(
    {
        "COMPLETED",
        "FAILED",
        "CANCELLED",
        "TIMEOUT",
        "NODE_FAIL",
        "PREEMPTED",
        "BOOT_FAIL",
        "DEADLINE",
        "OUT_OF_MEMORY",
    }
)


def wait_for(client, job_ids: list[int]) -> int:
    """``-W``: poll until every job ended; exit with the highest exit code, as Slurm."""
    import time  # noqa: PLC0415

    delay, worst, pending = 1.0, 0, list(job_ids)
    while pending:
        still = []
        for job_id in pending:
            job = client.get(f"/api/jobs/{job_id}/")
            if isinstance(job, dict) and job.get("state") in FINISHED:
                code = str(job.get("exit_code") or "0:0").split(":")[0]
                worst = max(worst, int(code) if code.isdigit() else 1)
                if job.get("state") != "COMPLETED":
                    worst = max(worst, 1)
            else:
                still.append(job_id)
        pending = still
        if pending:
            time.sleep(delay)
            delay = min(delay * 1.5, 10.0)
    return worst
