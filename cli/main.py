"""``fsched <command> [args]``: dispatch to ``cli/<command>.py`` and nothing else.

Kept tiny on purpose: every ``fsched`` run imports this module, so it imports
nothing at module level; the command's module is imported only when it runs.
Invoked through a link named after a command (``sbatch`` -> ``fsched``) it
dispatches on its own name, as Slurm's separate binaries would.
"""

from __future__ import annotations

import sys

# command -> module with a ``main(argv) -> int``
COMMANDS = {
    "sbatch": "cli.sbatch",
    "salloc": "cli.salloc",
    "squeue": "cli.squeue",
    "sinfo": "cli.sinfo",
    "scancel": "cli.scancel",
    "scontrol": "cli.scontrol",
    "sacctmgr": "cli.sacctmgr",
    "sshare": "cli.sshare",
    "sprio": "cli.sprio",
    "sdiag": "cli.sdiag",
    "sreport": "cli.sreport",
    "sacct": "cli.sacct",
    "sstat": "cli.sstat",
    "seff": "cli.seff",
    "srun": "cli.srun",
    "explain": "cli.explain",
    "login": "cli.login",
    "simulate": "cli.simulate",
    "agent": "agent.main",
    "server": "config.server",
}

# The commands that import the server's packages (websockets, Django, ...) from site-packages,
# where the installed command's fast start (``python -S``, scripts/fsched) does not look.
NEEDS_SITE = frozenset({"agent", "server", "simulate"})

USAGE = "usage: fsched {" + ",".join(COMMANDS) + "} [options]\n"


def main(argv: list[str] | None = None, *, rerun_with_site: bool = False) -> int:
    """Run the command ``argv`` names. ``rerun_with_site``: this process started without
    ``site`` (scripts/fsched); a command of NEEDS_SITE then replaces it with the same
    command under a plain interpreter, in the same process (a supervisor keeps its pid)."""
    argv = sys.argv if argv is None else argv
    name = argv[0].rsplit("/", 1)[-1] if argv else ""
    if name in COMMANDS:
        command, rest = name, argv[1:]
    elif len(argv) > 1 and argv[1] in COMMANDS:
        command, rest = argv[1], argv[2:]
    else:
        if len(argv) > 1 and argv[1] in ("-h", "--help"):
            sys.stdout.write(USAGE)
            return 0
        wrong = f"fsched: error: unknown command '{argv[1]}'\n" if len(argv) > 1 else ""
        sys.stderr.write(wrong + USAGE)
        return 1
    if rerun_with_site and command in NEEDS_SITE:
        import os  # noqa: PLC0415 - only these commands exec

        os.execv(sys.executable, [sys.executable, *argv])  # noqa: S606 - the same argv, again
    # __import__ rather than a static import: the command module (and what it
    # imports) is loaded only for the command that runs.
    module = __import__(COMMANDS[command], fromlist=["main"])
    try:
        return module.main(rest) or 0
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `squeue | head`: the reader went away; not an error worth a traceback.
        sys.stderr.close()
        return 0
    except Exception as exc:
        client = sys.modules.get("cli.client")
        if client is not None and isinstance(exc, client.CliError):
            sys.stderr.write(exc.render(command) + "\n")
            return exc.code
        raise


def exit_fast(status: int) -> None:
    """End the process (never returns) with ``status``, skipping Python's finalization (a
    full garbage collection and every module torn down: 8 of the 48 million instructions of
    an ``sbatch`` under -S) when nothing depends on it: no ``atexit`` callback and no thread
    that exit would wait for. Files are written in ``with`` blocks; what remains is stdout
    and stderr, flushed here. Anything else (a flush that fails, a callback, a running
    thread, a status that is not a number) takes the ordinary exit."""
    import atexit  # noqa: PLC0415 - built in, nothing to load
    import os  # noqa: PLC0415 - loaded by then: the commands import it

    threading = sys.modules.get("threading")
    waits = threading is not None and any(
        not thread.daemon for thread in threading.enumerate() if thread is not threading.main_thread()
    )
    if isinstance(status, int) and not waits and getattr(atexit, "_ncallbacks", lambda: 1)() == 0:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):
            sys.exit(status)
        os._exit(status)
    sys.exit(status)


if __name__ == "__main__":
    sys.exit(main())
