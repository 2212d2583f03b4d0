"""Benchmark: what an hres/lua plugin adds to a scheduler pass over 20,000 pending jobs.

    .venv/bin/python bench/lua_plugin_pass.py [--jobs 20000] [--nodes 128] [--runs 5] [--seed 1]

A cluster on SQLite (as ``fsched run`` keeps it) with one hierarchical resource ``qpu``
(one layer over every node, a count no job exhausts) and ``--jobs`` pending jobs, each
asking ``qpu:1``.  The whole pass, :func:`cluster.services.scheduling.schedule_pass`, is
timed twice: with ``qpu``'s ``plugin:`` section (an hres/lua script whose every function,
validate and pre-run included, returns ``slurm.SUCCESS`` at once) and with the same
resources.yaml without it.  Each pass runs in a transaction rolled back afterwards, so
every run sees the same queue and starts the same jobs (each started job runs its
pre-run, and its ``prep`` is stored).  Target: the plugin adds less than 50 % to the pass.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

RESOURCES = """\
- resource: qpu
  mode: MODE_1
{plugin}  layers:
    - layer_name: qpu1
      nodes: ["n[00001-{last}]"]
      count: 1000000
"""

PLUGIN = """\
  plugin:
    type: hres/lua
    config:
      - name: path
        value: {path}
"""


def _setup(state: Path, nodes: int) -> Path:
    conf = state / "conf"
    conf.mkdir()
    last = f"{nodes:05d}"
    (conf / "slurm.conf").write_text(
        "ClusterName=luabench\nSlurmctldHost=localhost\nSelectType=select/cons_tres\n"
        f"NodeName=n[00001-{last}] CPUs=32 RealMemory=128000 State=UNKNOWN\n"
        f"PartitionName=batch Nodes=n[00001-{last}] Default=YES MaxTime=INFINITE State=UP\n"
    )
    os.environ.update(
        FSCHED_STATE_DIR=str(state),
        FSCHED_CONF_DIR=str(conf),
        DJANGO_SETTINGS_MODULE="config.settings",
        FSCHED_LOG_LEVEL="WARNING",
    )
    from cluster.core.state_files import create_keys

    create_keys(state)
    import django

    django.setup()
    from django.core.management import call_command

    from hres import lua_plugins

    call_command("migrate", verbosity=0)
    lines = []
    for name in (*lua_plugins.REQUIRED, "hres_validate_args"):
        lines.append(f"function {name}(a, b, c, d)\n  return slurm.SUCCESS\nend\n")
    script = conf / "qpu.lua"
    script.write_text("\n".join(lines))
    script.chmod(0o644)
    return conf


def _configure(conf: Path, nodes: int, *, plugin: bool) -> None:
    from cluster.services.configuration import config_load

    section = PLUGIN.format(path=conf / "qpu.lua") if plugin else ""
    (conf / "resources.yaml").write_text(RESOURCES.format(plugin=section, last=f"{nodes:05d}"))
    config_load(path=conf / "slurm.conf")


def _jobs(count: int, seed: int) -> None:
    from django.utils import timezone

    from cluster.models import Job, Node
    from cluster.services import rows

    rng = random.Random(seed)
    now = timezone.now()
    Node.objects.update(base_state="IDLE")
    batch = []
    for job_id in range(1, count + 1):
        submit = now - timedelta(minutes=rng.randint(1, 600))
        batch.append(
            {
                "id": job_id,
                "name": "sim",
                "user": f"user{rng.randrange(200):03d}",
                "account": "root",
                "qos": "normal",
                "partition": "batch",
                "num_tasks": rng.choice((4, 8, 16, 32)),
                "cpus_per_task": 1,
                "time_limit": rng.choice((60, 240, 1440)),
                "priority": rng.randint(1, 100000),
                "licenses": "qpu:1",
                "state": "PENDING",
                "reason": "Priority",
                "submit_time": submit,
                "eligible_time": submit,
            }
        )
        if len(batch) == 5000:
            rows.insert_values(Job, batch)
            batch = []
    rows.insert_values(Job, batch)


def _passes(runs: int) -> tuple[list[float], int, int]:
    from django.db import transaction

    from cluster.services.scheduling import schedule_pass
    from hres.models import JobPluginRun

    times, started, preps = [], 0, 0
    for _ in range(runs):
        with transaction.atomic():
            t0 = time.perf_counter()
            summary = schedule_pass()
            times.append(time.perf_counter() - t0)
            started, preps = summary.started, JobPluginRun.objects.count()
            transaction.set_rollback(True)
    return times, started, preps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/lua_plugin_pass.py")
    parser.add_argument("--jobs", type=int, default=20000)
    parser.add_argument("--nodes", type=int, default=128)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="fsched-lua-bench-") as tmp:
        conf = _setup(Path(tmp), args.nodes)
        _configure(conf, args.nodes, plugin=False)
        _jobs(args.jobs, args.seed)
        _passes(1)  # the first pass fills the process's caches once, as a running controller has
        without, started_without, _ = _passes(args.runs)
        _configure(conf, args.nodes, plugin=True)
        _passes(1)
        with_plugin, started_with, preps = _passes(args.runs)
        from hres import lua_callbacks, lua_plugins

        # The contexts end while the script is still there, not at the process's exit.
        lua_callbacks.destroy_contexts()
        lua_plugins.install(lua_plugins.Prepared({}, {}))
    base, lua = statistics.median(without), statistics.median(with_plugin)
    print(f"hres/lua plugin in the pass: {args.jobs} pending jobs, {args.nodes} nodes, median of {args.runs}")
    print(f"pass without the plugin: {base * 1000:.0f} ms ({started_without} started)")
    print(f"pass with the plugin:    {lua * 1000:.0f} ms ({started_with} started, {preps} pre-runs kept)")
    added = (lua - base) / base * 100
    print(f"the plugin adds {added:+.1f} % (target: < 50 %)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
