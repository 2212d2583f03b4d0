"""``fsched srun``: run a parallel command as a job step (docs/steps.md).

Inside an allocation (``SLURM_JOB_ID``, as in a batch script, or ``--jobid``) it starts a
step of that job (cli/step_run.py). Outside one it makes the allocation first
(cli/allocation.py) and runs the step in it, as Slurm's srun does; it therefore takes
sbatch's job options too. An option it does not know is refused, never ignored.
"""

from __future__ import annotations

import os
import sys

from cli import job_option_checks, sbatch
from cli.client import Client, CliError
from cli.fastargs import OptionalValue

PROG = "srun"
HIDDEN = "==SUPPRESS=="  # argparse.SUPPRESS, without importing argparse before it is needed

# sbatch's options that srun has not (or has with another meaning: srun's -W is --wait=sec).
NOT_SRUN = {"array", "wrap", "parsable", "wait", "test_only", "get_user_env", "requeue"}

OPTIONS = (
    *(row for row in sbatch.OPTIONS if row[1] not in NOT_SRUN and not row[1].startswith("ignored_")),
    (("-l", "--label"), "label", True, None, "prepend task number to lines of stdout/err"),
    (
        ("-K", "--kill-on-bad-exit"),
        "kill_on_bad_exit",
        OptionalValue("1"),
        "0|1",
        "kill the job if any task terminates with a non-zero exit code",
    ),
    (("--quit-on-interrupt",), "quit_on_interrupt", True, None, "quit on single Ctrl-C"),
    (("-X", "--disable-status"), "disable_status", True, None, "Disable Ctrl-C status feature"),
    (("--overlap",), "overlap", True, None, "allow the step to share the job's CPUs with other steps"),
    (("--mpi",), "mpi", str, "type", "type of MPI being used (none; list)"),
    (("--jobid",), "jobid", int, "id", "run under already allocated job"),
    (
        ("--cpu-bind",),
        "cpu_bind",
        str,
        "type",
        "bind tasks to CPUs (none, rank, cores, threads, sockets; verbose)",
    ),
    (
        ("--multi-prog",),
        "multi_prog",
        True,
        None,
        "if set the program name specified is the configuration specification for multiple programs",
    ),
    (("-v", "--verbose"), "verbose", True, None, "verbose mode: the allocation's lines, as salloc's"),
    (("-W", "--wait"), "max_wait", int, "sec", "seconds to wait after first task exits before killing job"),
    # fsched's steps hold only the CPUs their tasks ask for, which is what --exact asks.
    (("--exact",), "exact", True, None, "use only the resources requested for the step"),
    (
        ("--pty",),
        "pty",
        OptionalValue(""),
        "fd",
        "run task zero in pseudo terminal [or in requested terminal given by fd]",
    ),
    (
        ("-E", "--preserve-env"),
        "preserve_env",
        True,
        None,
        "env vars for node and task counts override command-line flags",
    ),
    # Undocumented in srun's --help as in srun(1): InteractiveStepOptions' own (slurm.conf(5)).
    (("--interactive",), "interactive", True, None, HIDDEN),
    (
        ("-u", "--unbuffered"),
        "unbuffered",
        True,
        None,
        "do not line-buffer stdout/err (fsched never buffers)",
    ),
)


def build_parser():
    import argparse  # noqa: PLC0415

    from cli import fastargs  # noqa: PLC0415
    from cli.fmt import make_parser  # noqa: PLC0415

    p = make_parser(PROG, usage="%(prog)s [OPTIONS(0)...] executable(0) [args(0)...]", int_words=True)
    # argparse tells a hidden option by its own SUPPRESS object, not by an equal string.
    fastargs.add_rows(p, tuple((*r[:4], argparse.SUPPRESS) if r[4] == HIDDEN else r for r in OPTIONS))
    p.add_argument("command", nargs=argparse.REMAINDER, help="the program to run and its arguments")
    return p


def parse(argv: list[str]):
    ns = build_parser().parse_args(argv)
    if ns.command[:1] == ["--"]:  # getopt's end of the options: the command follows it
        ns.command = ns.command[1:]
    return ns


def job_options(ns) -> dict:
    """The sbatch-shaped options of a job srun makes itself (outside an allocation)."""
    keep = {row[1] for row in sbatch.OPTIONS}
    return {k: v for k, v in vars(ns).items() if k in keep and v is not None}


def refusal(ns) -> str | None:
    """srun's own line refusing these options (salloc's interactive step's too), or None."""
    if problem := job_option_checks.first_problem(vars(ns)):
        return f"{PROG}: error: {problem}"
    if ns.max_wait is not None and ns.max_wait < 0:
        return f"{PROG}: error: Invalid --wait specification: {ns.max_wait}"
    if ns.exclusive and ns.overlap:
        return "srun: fatal: --exclusive and --overlap are mutually exclusive"
    if ns.pty is not None and (ns.output or ns.error or ns.input):
        return "srun: error: --error/--input/--output are incompatible with --pty"
    if ns.pty and not ns.pty.isdigit():
        return f"srun: fatal: --pty={ns.pty} must be numeric file descriptor"
    if not ns.command and ns.mpi != "list":
        return "srun: fatal: No command given to execute."
    return None


def multi_prog(ns) -> str | None:
    """srun --multi-prog: each task's argv from the configuration file (ns.task_argv), the
    task count from it without -n; srun's error lines when it is refused."""
    from cli import multi_prog as mp  # noqa: PLC0415 - only --multi-prog pays for it

    ntasks = ns.ntasks
    if ntasks is None:
        raw = os.environ.get("SLURM_NTASKS") or os.environ.get("SLURM_NPROCS") or ""
        ntasks = int(raw) if raw.strip().isdigit() and int(raw) > 0 else None
    try:
        text = mp.read(ns.command[0])
        ns.ntasks = mp.task_count(text, ns.command[0], ntasks)
        ns.task_argv = mp.task_argv(text, ns.command[0], ns.ntasks, ns.command[1:])
    except mp.MultiProgError as exc:
        return "\n".join(f"{PROG}: error: {line}" for line in str(exc).split("\n"))
    return None


def cpu_binding(ns) -> str | None:
    """--cpu-bind (else SLURM_CPU_BIND) as the step request's fields (ns.cpu_binding), or
    srun's error line."""
    arg = ns.cpu_bind or os.environ.get("SLURM_CPU_BIND")
    if not arg:
        return None
    from cli.cpu_bind import CpuBindError, parse  # noqa: PLC0415 - only --cpu-bind pays for it

    try:
        ns.cpu_binding = parse(arg)
    except CpuBindError as exc:
        return f"{PROG}: error: {exc}"
    return None


def main(argv: list[str]) -> int:
    ns = parse(argv)
    if line := refusal(ns):
        sys.stderr.write(line + "\n")
        return 1
    if ns.multi_prog and (line := multi_prog(ns)):
        sys.stderr.write(line + "\n")
        return 1
    if (line := cpu_binding(ns)) is not None:
        sys.stderr.write(line + "\n")
        return 1
    from cli.step_run import run_step  # noqa: PLC0415

    raw = ns.jobid if ns.jobid is not None else os.environ.get("SLURM_JOB_ID")
    client = Client()
    if raw is not None:
        try:
            job_id = int(raw)
        except ValueError:
            raise CliError(f"Invalid job id: {raw}") from None
        return run_step(client, job_id, ns, ns.command)
    from cli.allocation import allocate  # noqa: PLC0415 - the allocation's own module

    options = job_options(ns)
    # Slurm's srun names the job it makes after the program it runs (salloc's: "interactive").
    options.setdefault("job_name", os.path.basename(ns.command[0]) if ns.command else "")
    with allocate(client, options, prog=PROG, verbose=bool(ns.verbose)) as alloc:
        # The job records the step's status, as Slurm's srun-made job ends with it.
        alloc.exit_code = run_step(client, alloc.job_id, ns, ns.command)
        return alloc.exit_code
