"""``python -m simulator run --conf DIR --workload FILE --out DIR [--until S] [--progress FILE]``

Its own process: the controller's settings with a store in memory (config.settings_sim),
migrated at start, then the engine (simulator.engine) on a virtual clock.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m simulator", description="fsched's simulator")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="replay a workload on a configuration, on a virtual clock")
    run.add_argument("--conf", required=True, type=Path, help="configuration directory (slurm.conf ...)")
    run.add_argument("--workload", required=True, type=Path, help="SWF, YAML or JSON workload")
    run.add_argument("--out", required=True, type=Path, help="directory for events.jsonl and the report")
    run.add_argument("--until", type=float, default=None, help="stop at this many virtual seconds")
    run.add_argument("--progress", type=Path, default=None, help="JSON file rewritten once a second")
    run.add_argument("--load-trace", type=Path, default=None, help="CSV: t,node,load indices")
    run.add_argument("--no-report", action="store_true", help="write the event log only")
    sub.add_parser("gen", help="write a synthetic workload (simulator.workloads.generate)", add_help=False)
    return parser


def _error(text: str) -> int:
    sys.stderr.write(f"fsched simulate: error: {text}\n")
    return 1


def _setup(state_dir: str) -> float:
    """Django on the simulator's settings, its store migrated; the seconds migrating took."""
    for name in ("FSCHED_REDIS_URL", "FSCHED_DATABASE_URL", "FSCHED_SQLITE_PATH"):
        os.environ.pop(name, None)
    os.environ["FSCHED_STATE_DIR"] = state_dir
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings_sim"
    import django  # noqa: PLC0415 - after the environment is set
    from django.core.management import call_command  # noqa: PLC0415

    django.setup()
    started = time.perf_counter()
    call_command("migrate", verbosity=0, interactive=False)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["gen"]:
        # The generator's own options (and --help) are its parser's, untouched here.
        from simulator.workloads import generate  # noqa: PLC0415 - another part's module

        return int(generate.main(argv[1:]) or 0)
    ns = _parser().parse_args(argv)
    for path, what in ((ns.conf / "slurm.conf", "--conf"), (ns.workload, "--workload")):
        if not path.is_file():
            return _error(f"{what}: {path}: no such file")
    if ns.load_trace is not None and not ns.load_trace.is_file():
        return _error(f"--load-trace: {ns.load_trace}: no such file")
    try:
        ns.out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return _error(f"--out: {ns.out}: {exc.strerror}")
    with tempfile.TemporaryDirectory(prefix="fsched-sim-") as state_dir:
        migrate_seconds = _setup(state_dir)
        from simulator.engine import Engine, SimulationError  # noqa: PLC0415 - needs Django set up
        from simulator.workloads import read_workload  # noqa: PLC0415 - another part's module

        try:
            jobs = read_workload(ns.workload)
        except (ValueError, OSError) as exc:
            return _error(f"--workload: {ns.workload}: {exc}")
        engine = Engine(
            conf_dir=ns.conf.resolve(),
            jobs=jobs,
            out_dir=ns.out,
            workload_name=str(ns.workload),
            until=ns.until,
            progress=ns.progress,
            load_trace=ns.load_trace,
        )
        try:
            summary = engine.run()
        except SimulationError as exc:
            return _error(str(exc))
        sys.stderr.write(f"fsched simulate: store migrated in {migrate_seconds:.1f} s\n")
    if not ns.no_report:
        from simulator.report import write_report  # noqa: PLC0415 - another part's module

        json_path, html_path = write_report(ns.out / "events.jsonl", ns.out)
        sys.stdout.write(f"{json_path}\n{html_path}\n")
    speed = f"{summary.simulated_seconds:.0f} simulated s in {summary.wall_seconds:.1f} wall s"
    sys.stdout.write(f"{summary.jobs} jobs, {speed}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
