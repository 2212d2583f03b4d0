"""Benchmark: the scheduler pass *service* (what the cycles and the simulator call).

    .venv/bin/python -m bench.pass_service [--nodes 1000 10000] [--pending 1000] [--runs 3]
                                           [--backfill] [--kept] [--profile FILE]
                                           [--starts N]

``bench.pass_scaling`` times the pure core on a snapshot built in memory; this times
:func:`cluster.services.scheduling.schedule_pass` itself on the simulator's store (SQLite in
memory, ``config.settings_sim``): reading the snapshot, the extensions' plugins, the core,
and writing the decisions.  The cluster: ``--nodes`` nodes of 64 CPUs in one partition, each
running three jobs (half its CPUs), and ``--pending`` serial and small jobs.  Each timed pass
runs in a transaction rolled back afterwards, so every run sees the same store.  Prints, per
node count, the median pass time and the SQL statements one pass runs (a count, so not
noisy), and the growth exponent in nodes.

``--kept``: the passes keep their nodes, partitions, holding jobs and queue between passes,
as in the simulator (cluster.services.pass_snapshot.keep). A rolled-back pass makes the
kept views forget everything, so before each timed pass they are brought up to date,
untimed: the pass then costs what an event pass costs in the simulator when nothing it
reads changed since the last one (what changed is re-read by its rows, a submission or a
start one row).

``--starts N``: a pass that starts thousands of jobs, as the live controller's under a
stream of array submissions (bench.scale_throughput --shape arrays): an empty cluster of
``--nodes`` nodes and N pending one-CPU ``--wrap`` jobs, arrays of 100 tasks, that all fit.
One pass starts every one of them; it prints the pass time, its statements, the jobs it
started and the time per start.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import math
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import store

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _fresh_store(conf: Path, nodes: int, *, extra: str, partition: str) -> None:
    """The store emptied and ``nodes`` nodes of 64 CPUs in one partition loaded."""
    from django.core.management import call_command

    from cluster.services.configuration import config_load

    call_command("flush", verbosity=0, interactive=False)
    width = len(str(nodes))
    span = f"n[{1:0{width}d}-{nodes:0{width}d}]"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "slurm.conf").write_text(
        "ClusterName=bench\nSlurmctldHost=localhost\nSchedulerType=sched/backfill\n"
        f"SelectType=select/cons_tres\nSelectTypeParameters=CR_Core_Memory\n{extra}"
        f"NodeName={span} CPUs=64 RealMemory=256000 State=UNKNOWN\n"
        f"PartitionName=batch Nodes={span} Default=YES {partition}\n"
    )
    config_load(path=conf / "slurm.conf")


def populate(conf: Path, nodes: int, pending: int) -> None:
    """A fresh store: the configuration loaded, every node IDLE or MIXED, the jobs."""

    from cluster.core.states import JobState, NodeBase
    from cluster.models import Job, Node
    from cluster.services.state import refresh_usage

    _fresh_store(conf, nodes, extra="", partition="MaxTime=1440 DefaultTime=60")
    names = list(Node.objects.order_by("name").values_list("name", flat=True))
    Node.objects.update(base_state=NodeBase.IDLE, flags=0, last_contact=NOW)
    jobs = []
    job_id = 1
    for k, name in enumerate(names):
        for j in range(3):
            jobs.append(
                Job(
                    id=job_id,
                    user=f"u{job_id % 20}",
                    partition="batch",
                    state=JobState.RUNNING,
                    submit_time=NOW - timedelta(hours=2),
                    start_time=NOW - timedelta(minutes=(k * 7 + j * 13) % 50),
                    time_limit=60,
                    num_tasks=[8, 16, 8][j],
                    node_list=name,
                    batch_host=name,
                    alloc={name: [[8, 16, 8][j], 4000]},
                    launched=True,
                )
            )
            job_id += 1
    for i in range(pending):
        jobs.append(
            Job(
                id=job_id,
                user=f"u{i % 20}",
                partition="batch",
                state=JobState.PENDING,
                submit_time=NOW - timedelta(seconds=pending - i),
                num_tasks=(1, 2, 4, 8, 64)[i % 5],
                mem_per_node=(None, 1000, 4000, None, 8000)[i % 5],
                time_limit=(5, 15, 30, 60, 120)[i % 5],
            )
        )
        job_id += 1
    Job.objects.bulk_create(jobs, batch_size=2000)
    refresh_usage()


def populate_starts(conf: Path, nodes: int, jobs: int) -> None:
    """A fresh store: every node IDLE and empty, ``jobs`` pending one-CPU array tasks (arrays
    of 100, as ``sbatch --array=1-100 --wrap=true`` submits them)."""

    from cluster.core.states import JobState, NodeBase
    from cluster.models import Job, Node

    _fresh_store(conf, nodes, extra="MaxArraySize=100001\n", partition="MaxTime=INFINITE")
    Node.objects.update(base_state=NodeBase.IDLE, flags=0, last_contact=NOW)
    rows = []
    for i in range(jobs):
        array_id = 1 + (i // 100) * 100
        rows.append(
            Job(
                id=1 + i,
                user=f"u{(i // 100) % 20}",
                partition="batch",
                state=JobState.PENDING,
                submit_time=NOW - timedelta(seconds=jobs - i),
                num_tasks=1,
                script="#!/bin/sh\ntrue\n",
                work_dir="/tmp",
                std_out="/dev/null",
                environment={"FSCHED_SIM_RUN_TIME": "60"},
                array_job_id=array_id,
                array_task_id=1 + i % 100,
            )
        )
    Job.objects.bulk_create(rows, batch_size=2000)


def one_pass(backfill: bool, kept: bool = False) -> tuple[float, int, int]:
    """(seconds, SQL statements, jobs started) of one pass, rolled back."""
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext

    from cluster.services import pass_snapshot
    from cluster.services.scheduling import schedule_pass

    if kept:
        pass_snapshot.resources()

    with transaction.atomic():
        with CaptureQueriesContext(connection) as queries:
            t0 = time.perf_counter()
            summary = schedule_pass(now=NOW, backfill=backfill)
            elapsed = time.perf_counter() - t0
        transaction.set_rollback(True)
    return elapsed, len(queries), summary.written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench.pass_service", description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, nargs="+", default=[1_000, 10_000])
    ap.add_argument("--pending", type=int, default=1_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--backfill", action="store_true", help="backfill passes (default: main passes)")
    ap.add_argument("--kept", action="store_true", help="snapshot kept between passes (the simulator's)")
    ap.add_argument("--profile", type=Path, default=None, help="cProfile of one pass at the largest size")
    ap.add_argument("--starts", type=int, default=0, help="N pending jobs on an empty cluster, all started")
    args = ap.parse_args(argv)

    from bench import reference

    work = Path(tempfile.mkdtemp(prefix="fsched-pass-service-"))
    store.migrated(str(work / "state"), settings="config.settings_sim")
    from cluster.services import pass_snapshot

    with pass_snapshot.keep() if args.kept else contextlib.nullcontext():
        return _measure(args, work, reference)


def _measure(args: argparse.Namespace, work: Path, reference: Any) -> int:
    kind = ("backfill" if args.backfill else "main") + (", snapshot kept" if args.kept else "")
    if args.starts:
        print(f"schedule_pass ({kind}) starting {args.starts:,} jobs on an empty cluster, "
              f"median of {args.runs}")  # fmt: skip
    else:
        print(f"schedule_pass ({kind}), {args.pending:,} pending, median of {args.runs}")
    print(f"  before: {reference.describe()}")
    medians = {}
    for n in args.nodes:
        if args.starts:
            populate_starts(work / f"conf{n}", n, args.starts)
        else:
            populate(work / f"conf{n}", n, args.pending)
        one_pass(args.backfill, args.kept)  # warm-up
        runs = [one_pass(args.backfill, args.kept) for _ in range(args.runs)]
        medians[n] = statistics.median(t for t, _, _ in runs)
        per = f"  {medians[n] / runs[0][2] * 1e6:.0f} us per start" if args.starts and runs[0][2] else ""
        print(f"  {n:>7,} nodes: {medians[n] * 1000:8.1f} ms  {runs[0][1]} statements  "
              f"{runs[0][2]} started{per}")  # fmt: skip
        if args.profile and n == max(args.nodes):
            prof = cProfile.Profile()
            prof.runcall(one_pass, args.backfill, args.kept)
            prof.dump_stats(args.profile)
    if len(medians) >= 2:
        lo, hi = min(medians), max(medians)
        exp = math.log(medians[hi] / medians[lo]) / math.log(hi / lo)
        print(f"  growth exponent in nodes ({lo:,} to {hi:,}): {exp:.2f}")
    print(f"  after: {reference.describe()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
