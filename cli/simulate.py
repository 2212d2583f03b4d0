"""``fsched simulate``: replay a workload on a configuration with the simulator (#18).

usage: fsched simulate --conf DIR --workload FILE [--from-history DAYS] [--until T] --out DIR
       fsched simulate gen [generator options]

The CLI imports neither Django nor the controller: the simulator is its own process
(``python -m simulator``), run here with an argument list (no shell). On a host with the
client only, it says so.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
from pathlib import Path

PROG = "fsched simulate"
NOT_INSTALLED = (
    f"{PROG}: error: the simulator is not installed on this host: it runs the controller's own "
    "code, so it needs the server's packages (pip install -r requirements.txt in fsched's checkout)\n"
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Replay a workload on a configuration, on a virtual clock, with the controller's "
        "own scheduler and extensions. 'fsched simulate gen --help' for the workload generator.",
    )
    parser.add_argument(
        "--conf", required=True, metavar="DIR", help="configuration directory (slurm.conf ...)"
    )
    parser.add_argument("--workload", metavar="FILE", help="SWF, YAML or JSON workload")
    parser.add_argument(
        "--from-history",
        type=int,
        metavar="DAYS",
        help="the cluster's own jobs of the last DAYS days as the workload (written to --workload, "
        "or to OUT/history.json)",
    )
    parser.add_argument("--until", type=float, metavar="T", help="stop at T virtual seconds")
    parser.add_argument("--out", required=True, metavar="DIR", help="directory for the event log and report")
    parser.add_argument("--progress", metavar="FILE", help="a JSON progress file, rewritten once a second")
    parser.add_argument("--load-trace", metavar="FILE", help="per-node load indices (CSV)")
    return parser


def installed() -> bool:
    """The simulator and the controller's packages are importable by this interpreter
    (looked up, not imported: this process stays free of Django)."""
    return all(importlib.util.find_spec(name) is not None for name in ("simulator", "django"))


def _simulator(args: list[str]) -> int:
    if not installed():
        sys.stderr.write(NOT_INSTALLED)
        return 1
    return subprocess.run([sys.executable, "-m", "simulator", *args], check=False).returncode


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["gen"]:
        return _simulator(["gen", *argv[1:]])
    ns = _parser().parse_args(argv)
    if ns.until is not None and ns.until <= 0:
        sys.stderr.write(f"{PROG}: error: --until: must be a positive number of seconds, not {ns.until:g}\n")
        return 1
    out = Path(ns.out)
    workload = ns.workload
    if ns.from_history is not None:
        if ns.from_history <= 0:
            sys.stderr.write(f"{PROG}: error: --from-history: must be a positive number of days\n")
            return 1
        from cli.client import Client  # noqa: PLC0415 - only this option speaks to a controller
        from cli.simulate_history import history_workload  # noqa: PLC0415 - another part's module

        out.mkdir(parents=True, exist_ok=True)
        target = Path(workload) if workload else out / "history.json"
        workload = str(history_workload(Client(), ns.from_history, target))
    if not workload:
        sys.stderr.write(f"{PROG}: error: one of --workload or --from-history is required\n")
        return 2
    args = ["run", "--conf", ns.conf, "--workload", workload, "--out", str(out)]
    if ns.until is not None:
        args += ["--until", repr(ns.until)]
    if ns.progress:
        args += ["--progress", ns.progress]
    if ns.load_trace:
        args += ["--load-trace", ns.load_trace]
    return _simulator(args)
