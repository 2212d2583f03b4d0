"""``fsched salloc [options] [command [args...]]``: obtain a job allocation, run a command
in it on this host with the allocation's SLURM_* variables, release it when the command
ends, and exit with the command's status (Slurm's salloc without SallocDefaultCommand).

The options are sbatch's job options (``cli.sbatch.OPTIONS``), less the ones that are a
batch script's own (its files, --array, --wrap ...).  Without a command, the user's shell
runs ($SHELL, else the passwd entry's); where slurm.conf's LaunchParameters has
use_interactive_step, it runs on the allocation's first node instead, as srun's
interactive step with InteractiveStepOptions (docs/steps.md).  The command is run as an
argv, never through a shell string.
"""

from __future__ import annotations

import os
import signal
import sys

from cli import fastargs, job_option_checks
from cli.allocation import NOT_THE_JOBS
from slurmwords.version import VERSION_LINE

PROG = "salloc"
POSITIONALS = ("command", "command_args")
# SALLOC_* input environment variables -> option dest (salloc(1), INPUT ENVIRONMENT VARIABLES).
INPUT_ENV = {
    "SALLOC_ACCOUNT": "account",
    "SALLOC_CONSTRAINT": "constraint",
    "SALLOC_EXCLUSIVE": "exclusive",
    "SALLOC_GRES": "gres",
    "SALLOC_PARTITION": "partition",
    "SALLOC_QOS": "qos",
    "SALLOC_RESERVATION": "reservation",
    "SALLOC_TIMELIMIT": "time",
    "SALLOC_WCKEY": "wckey",
}


# salloc's own options (src/common/slurm_opt.c, set_func_salloc).
SALLOC_OPTIONS: tuple[fastargs.Row, ...] = (
    (("--no-shell",), "no_shell", True, None, "immediately exit after allocating resources"),
)


def options() -> tuple[fastargs.Row, ...]:
    """sbatch's table without the batch script's own options, and salloc's own."""
    from cli.sbatch import OPTIONS  # noqa: PLC0415

    return (*(row for row in OPTIONS if row[1] not in NOT_THE_JOBS), *SALLOC_OPTIONS)


def build_parser():
    from cli.fmt import make_parser  # noqa: PLC0415 - argparse only when cli.fastargs gives up

    p = make_parser(
        PROG, usage="%(prog)s [OPTIONS(0)...] [ : [OPTIONS(N)...]] [command(0) [args(0)...]]", int_words=True
    )
    fastargs.add_rows(p, options())
    p.add_argument("command", nargs="?", help="command to run in the allocation (default: your shell)")
    p.add_argument("command_args", nargs="...", help="arguments passed to the command")
    return p


def parse_args(argv: list[str]) -> fastargs.Namespace:
    fast = fastargs.parse(argv, options(), POSITIONALS)
    return fastargs.Namespace(vars(build_parser().parse_args(argv)) if fast is None else fast)


def default_command(environ: dict[str, str]) -> list[str]:
    """The user's shell, as salloc runs it when no command is given and slurm.conf sets
    no SallocDefaultCommand."""
    shell = environ.get("SHELL")
    if not shell:
        import pwd  # noqa: PLC0415

        try:
            shell = pwd.getpwuid(os.getuid()).pw_shell
        except KeyError:
            shell = ""
    return [shell or "/bin/sh"]


# slurm.conf(5)'s default InteractiveStepOptions.
INTERACTIVE_STEP_OPTIONS = "--interactive --preserve-env --pty $SHELL"
# $SHELL as sh reads it: ${SHELL}, or $SHELL not followed by more of a name ($SHELLX is not it).
SHELL_VARIABLE = r"\$\{SHELL\}|\$SHELL(?![A-Za-z0-9_])"


def interactive_step_options(config: dict) -> str | None:
    """The srun options of salloc's interactive step, or None when LaunchParameters has no
    use_interactive_step (salloc runs the shell here). Read as salloc.c reads it: the word
    anywhere in the parameter."""
    options = (config or {}).get("options") or {}
    if "use_interactive_step" not in str(options.get("LaunchParameters") or ""):
        return None
    return str(options.get("InteractiveStepOptions") or INTERACTIVE_STEP_OPTIONS)


def interactive_step(text: str, environ: dict[str, str]):
    """InteractiveStepOptions as srun reads them: salloc.c hands "srun OPTIONS" to /bin/sh,
    here its words are split as sh would (shlex) and $SHELL is the user's shell, with no
    shell run. The parsed srun options, or srun's error line."""
    import re  # noqa: PLC0415
    import shlex  # noqa: PLC0415

    from cli import srun  # noqa: PLC0415

    try:
        words = shlex.split(text)
    except ValueError as exc:
        return f"srun: error: InteractiveStepOptions: {exc}"
    shell = default_command(environ)[0]
    words = [re.sub(SHELL_VARIABLE, lambda _: shell, w) for w in words]
    try:
        ns = srun.parse(words)  # srun's own refusal (its usage line) and exit 1
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, str) else ""
    return srun.refusal(ns) or ns


def _err(message: str) -> int:
    sys.stderr.write(f"{PROG}: error: {message}\n")
    return 1


def run_command(command: list[str], env: dict[str, str], alloc) -> int:
    """Run the command (argv, no shell) in the allocation; salloc's exit status for it.

    While it runs, SIGINT and SIGQUIT reach it from the terminal and salloc ignores them,
    as Slurm's salloc does; a revoked allocation sends it SIGHUP, as salloc's does."""
    import subprocess  # noqa: PLC0415

    try:
        child = subprocess.Popen(command, env=env)  # the user's own argv, no shell
    except OSError as exc:
        _err(f'Unable to exec command "{command[0]}": {exc.strerror}')
        alloc.exit_code = 1
        return 1
    alloc.on_revoke = lambda: child.poll() is None and child.send_signal(signal.SIGHUP)
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGQUIT)}
    try:
        status = child.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if status < 0:  # killed by a signal: the shell's 128+N, as salloc returns it
        alloc.exit_signal = -status
        return 128 - status
    alloc.exit_code = status
    return status


def _no_shell(opts: dict) -> int:
    """--no-shell: the allocation is granted and kept, and salloc exits 0 at once, running
    no command (one given is not run, as salloc.c exits before it); the job is named
    ``no-shell`` unless -J names it (src/salloc/opt.c)."""
    from cli.allocation import allocate_and_keep  # noqa: PLC0415
    from cli.client import Client  # noqa: PLC0415

    if not opts.get("job_name"):
        opts["job_name"] = "no-shell"
    allocate_and_keep(Client(), opts, prog=PROG)
    return 0


def main(argv: list[str]) -> int:
    ns = parse_args(argv)
    if ns.version:
        sys.stdout.write(VERSION_LINE)
        return 0
    opts = {k: v for k, v in vars(ns).items() if k not in POSITIONALS}
    no_shell = bool(opts.pop("no_shell", None))
    for name, dest in INPUT_ENV.items():
        if os.environ.get(name) and opts.get(dest) is None:
            opts[dest] = True if dest == "exclusive" else os.environ[name]
    if problem := job_option_checks.first_problem(opts):
        return _err(problem)
    if opts.get("mem") is not None and opts.get("mem_per_cpu") is not None:
        from cli.sbatch import MEM_EXCLUSIVE  # noqa: PLC0415

        return _err(MEM_EXCLUSIVE)
    if opts.get("nice") is not None:
        from slurmwords.nice import parse_nice  # noqa: PLC0415

        try:
            opts["nice"] = parse_nice(opts["nice"])
        except ValueError as exc:
            return _err(str(exc))
    for dest, value in opts.items():
        if dest.startswith("ignored_") and value is not None and not opts.get("quiet"):
            option = "--" + dest[len("ignored_") :].replace("_", "-")
            sys.stderr.write(f"{PROG}: warning: {option} is not supported by fsched; ignored\n")
    if no_shell:
        return _no_shell(opts)
    command = [ns.command, *ns.command_args] if ns.command else default_command(dict(os.environ))
    if ns.command and not opts.get("job_name"):
        opts["job_name"] = os.path.basename(ns.command)  # salloc names the job after it

    from cli.allocation import allocate  # noqa: PLC0415
    from cli.client import Client  # noqa: PLC0415

    client = Client()
    step = None
    if not ns.command:
        from cli.client import ApiError  # noqa: PLC0415

        try:
            text = interactive_step_options(client.get("/api/config/"))
        except ApiError as exc:
            return _err(f"slurm_load_ctl_conf error: {exc.message}")
        if text is not None:
            step = interactive_step(text, dict(os.environ))
            if isinstance(step, str):
                if step:  # argparse's refusals are written already
                    sys.stderr.write(f"{step}\n")
                return 1  # refused before any allocation, as no state may change
    with allocate(client, opts, prog=PROG) as alloc:
        env = {**os.environ, **alloc.env}
        if step is not None:
            return run_interactive_step(client, step, env, alloc)
        return run_command(command, env, alloc)


def run_interactive_step(client, step, env: dict[str, str], alloc) -> int:
    """srun's interactive step in the new allocation, in this process: salloc's status is
    srun's, and the job's, as salloc's is."""
    from cli.step_run import run_step  # noqa: PLC0415

    alloc.exit_code = run_step(client, alloc.job_id, step, step.command, environ=env)
    return alloc.exit_code
