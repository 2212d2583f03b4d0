"""Benchmark: the simulator's speed (#18): simulated seconds and jobs per wall second.

    .venv/bin/python bench/simulator_speed.py [--jobs 300] [--nodes 64] [--runs 1] [--seed 1]
                                              [--until SECONDS] [--profile FILE]

A generated configuration: ``--nodes`` nodes of 16 CPUs in two partitions, the three HRES
modes (flat: Mode 2, natural: Mode 1, power: Mode 3 racks and rows), association and QOS
limits from an accounting dump (AccountingStorageEnforce=limits), power saving on
(SuspendTime=300, the idle half of the cluster powers down and up again); Slurm's default
intervals (sched_interval=60, bf_interval=30). ``--jobs`` jobs from eight users, Poisson
arrivals keeping the cluster about busy, run times of 1 to 60 minutes, a tenth past their
limit. Each run is a fresh store (migrated once per process, flushed between runs).
The issue's target case is ``--jobs 100000 --nodes 10000``; the defaults run in about a
minute here. ``--until`` stops each run at that virtual second (simulate's --until), for
the sizes whose whole run takes hours here: jobs per wall second then counts the jobs that
ended or were refused by then. ``--profile`` writes cProfile's statistics of the last run
(pstats). Each run prints its engine CPU too (the process's CPU time during the run: the
figure to compare while other work shares the machine).
"""

from __future__ import annotations

import argparse
import cProfile
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

USERS = [f"user{i}" for i in range(8)]
ACCOUNTS = ["physics", "chemistry"]


def write_conf(conf: Path, nodes: int) -> None:
    conf.mkdir(parents=True, exist_ok=True)
    width = len(str(nodes))
    half = max(1, nodes // 2)
    names = f"c[{1:0{width}d}-{nodes:0{width}d}]"
    low = f"c[{1:0{width}d}-{half:0{width}d}]" if half > 1 else f"c{1:0{width}d}"
    high = f"c[{half + 1:0{width}d}-{nodes:0{width}d}]" if nodes - half > 1 else f"c{nodes:0{width}d}"
    (conf / "slurm.conf").write_text(
        "ClusterName=bench\nSlurmctldHost=localhost\nSchedulerType=sched/backfill\n"
        "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core_Memory\n"
        "AccountingStorageEnforce=associations,limits,qos\n"
        "SchedulerParameters=sched_interval=60,bf_interval=30\n"
        f"NodeName={names} CPUs=16 RealMemory=64000 State=UNKNOWN\n"
        "ResumeProgram=/bin/true\nSuspendProgram=/bin/true\nResumeTimeout=120\nSuspendTimeout=30\n"
        "SuspendTime=300\nSlurmctldParameters=power_save_interval=10,power_save_min_interval=2\n"
        f"PartitionName=batch Nodes={low} Default=YES MaxTime=120 DefaultTime=60\n"
        f"PartitionName=long Nodes={high} MaxTime=240 DefaultTime=120\n"
    )
    racks = [(i, min(i + 31, nodes)) for i in range(1, nodes + 1, 32)]

    def span(lo: int, hi: int) -> str:
        return f"c[{lo:0{width}d}-{hi:0{width}d}]" if hi > lo else f"c{lo:0{width}d}"

    lines = [
        "---",
        "- resource: flat",
        "  mode: MODE_2",
        "  layers:",
        "    - layer_name: top",
        f'      nodes: ["{names}"]',
        f"      count: {max(4, nodes // 2)}",
        "- resource: natural",
        "  mode: MODE_1",
        "  layers:",
        "    - layer_name: top",
        f'      nodes: ["{names}"]',
        f"      count: {max(4, nodes)}",
        "- resource: power",
        "  mode: MODE_3",
        "  layers:",
    ]
    for r, (lo, hi) in enumerate(racks):
        lines += [
            f"    - layer_name: rack{r}",
            "      parent_name: room",
            f'      nodes: ["{span(lo, hi)}"]',
            f"      count: {(hi - lo + 1) * 1000}",
        ]
    lines += ["    - layer_name: room", f"      count: {nodes * 800}"]
    (conf / "resources.yaml").write_text("\n".join(lines) + "\n")
    dump = [
        "Cluster - 'bench'",
        "QOS - 'normal':Priority=0",
        f"QOS - 'wide':Priority=10:GrpTRES=cpu={max(16, nodes * 4)}",
        "Parent - 'root'",
    ]
    dump += [
        f"Account - '{a}':Description='{a}':Organization='bench':Fairshare=1:GrpTRES=cpu={nodes * 12}"
        for a in ACCOUNTS
    ]
    for i, user in enumerate(USERS):
        account = ACCOUNTS[i % 2]
        user_line = f"User - '{user}':DefaultAccount='{account}':Fairshare=1:QOS='normal,wide'"
        dump += [f"Parent - '{account}'", user_line]
    (conf / "accounts.cfg").write_text("\n".join(dump) + "\n")


def jobs_for(count: int, nodes: int, seed: int) -> list:
    from simulator.records import SimJob

    rng = random.Random(seed)
    # Arrivals keep about the cluster's CPUs busy: mean work per job / CPUs.
    mean_cpus, mean_run = 8, 1800
    gap = mean_cpus * mean_run / (nodes * 16) * 1.1
    t = 0.0
    out = []
    for i in range(1, count + 1):
        t += rng.expovariate(1 / gap)
        limit = rng.choice([30, 60, 120])
        run = rng.uniform(60, limit * 60 * 1.1)  # a tenth run past their limit
        tasks = rng.choice([1, 2, 4, 8, 16, 16])
        user = rng.choice(USERS)
        out.append(
            SimJob(
                job_id=i,
                submit=round(t, 3),
                run_time=round(run, 3),
                user=user,
                partition=rng.choice(["batch", "long"]),
                qos=rng.choice(["normal", "normal", "wide"]),
                ntasks=tasks,
                mem_mb=tasks * 1000,
                time_limit=limit,
                licenses=rng.choice(["", "", "flat:1", "natural:1", "power:500"]),
            )
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=300)
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--until", type=float, default=None)
    parser.add_argument("--profile", type=Path, default=None)
    ns = parser.parse_args(argv)

    from simulator.__main__ import _setup

    work = Path(tempfile.mkdtemp(prefix="fsched-simbench-"))
    migrate = _setup(str(work / "state"))
    from django.core.management import call_command

    from simulator.engine import Engine

    conf = work / "conf"
    write_conf(conf, ns.nodes)
    jobs = jobs_for(ns.jobs, ns.nodes, ns.seed)
    print(f"{ns.jobs} jobs on {ns.nodes} nodes; store migrated in {migrate:.1f} s", flush=True)
    speeds, rates = [], []
    for run in range(ns.runs):
        if run:
            call_command("flush", verbosity=0, interactive=False)
        engine = Engine(
            conf_dir=conf, jobs=jobs, out_dir=work / f"out{run}", workload_name="bench", until=ns.until
        )
        profile = cProfile.Profile() if ns.profile and run == ns.runs - 1 else None
        started, cpu = time.perf_counter(), time.process_time()
        if profile:
            profile.enable()
        summary = engine.run()
        if profile:
            profile.disable()
            profile.dump_stats(ns.profile)
        wall = time.perf_counter() - started
        cpu = time.process_time() - cpu
        speeds.append(summary.simulated_seconds / wall)
        rates.append(engine.ended / wall)
        print(
            f"run {run + 1}: {summary.simulated_seconds:.0f} simulated s in {wall:.1f} wall s "
            f"(engine CPU {cpu:.2f} s): "
            f"{speeds[-1]:.1f}x real time, {rates[-1]:.1f} jobs/s ({engine.ended} of {summary.jobs} "
            f"jobs ended); cycles {engine.cycle_runs}; log {engine.out_dir / 'events.jsonl'}",
            flush=True,
        )
    print(
        f"median: {statistics.median(speeds):.1f} simulated s per wall s, "
        f"{statistics.median(rates):.1f} jobs per wall s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
