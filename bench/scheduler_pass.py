"""Benchmark: one scheduler pass over 20,000 pending jobs on 2,048 nodes.

    .venv/bin/python bench/scheduler_pass.py [--jobs 20000] [--nodes 2048] [--runs 5] [--seed 1]

Builds a deterministic, busy cluster (about 70 % of the CPUs held by running jobs with
staggered ends, some nodes drained/down, four partitions of which two overlap) and a queue
of mixed jobs (serial, whole-node, multi-node, --mem=0, features, excluded nodes, held,
begin times), then times :func:`cluster.core.scheduler.schedule` and prints the median of the
runs, decisions per second and what the pass decided.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cluster.core.scheduler import JobView, NodeView, PartitionView, Snapshot, schedule
from cluster.core.states import NodeBase, NodeFlag

NOW = 1_700_000_000.0


def build(jobs: int, nodes: int, seed: int) -> Snapshot:
    rng = random.Random(seed)
    views = []
    for i in range(nodes):
        flags = NodeFlag.NONE
        base = NodeBase.IDLE
        roll = rng.random()
        if roll < 0.01:
            flags = NodeFlag.DRAIN
        elif roll < 0.015:
            base, flags = NodeBase.DOWN, NodeFlag.NOT_RESPONDING
        big = i >= nodes * 3 // 4
        views.append(
            NodeView(
                index=i,
                name=f"node{i:04d}",
                cpus=128 if big else 64,
                real_memory=512_000 if big else 256_000,
                weight=10 if big else 1,
                base=base,
                flags=int(flags),
                features=frozenset({"gpu", "a100"} if big else {"cpu", "ib"} if i % 2 else {"cpu"}),
            )
        )
    quarter = nodes // 4
    partitions = {
        "batch": PartitionView("batch", tuple(range(0, 3 * quarter)), max_time=2880, default_time=60),
        "gpu": PartitionView("gpu", tuple(range(3 * quarter, nodes)), max_time=1440, default_time=60),
        "long": PartitionView("long", tuple(range(quarter, 3 * quarter)), max_time=10080, default_time=600),
        "debug": PartitionView(
            "debug", tuple(range(0, quarter // 4)), max_time=30, default_time=10, priority_tier=2, max_nodes=4
        ),
    }
    names = list(partitions)

    # Running jobs filling about 70 % of every usable node, ending at staggered times.
    running = []
    job_id = 1
    for v in views:
        if v.base == NodeBase.DOWN:
            continue
        left = int(v.cpus * rng.uniform(0.4, 1.0))
        while left > 0:
            c = min(left, rng.choice((1, 2, 4, 8, 16, 32)))
            left -= c
            limit = rng.choice((30, 60, 120, 240, 720, 1440))
            running.append(
                JobView(
                    job_id=job_id,
                    partition="gpu" if v.index >= 3 * quarter else "batch",
                    user=f"u{rng.randrange(50)}",
                    submit_time=NOW - 7200,
                    state="RUNNING",
                    time_limit=limit,
                    start_time=NOW - rng.uniform(0, limit * 60 * 0.95),
                    node_indices=(v.index,),
                    alloc_cpus=(c,),
                    alloc_mem=(c * 2000,),
                )
            )
            job_id += 1

    pending = []
    for _ in range(jobs):
        part = rng.choices(names, weights=(60, 20, 15, 5))[0]
        roll = rng.random()
        kwargs: dict = {}
        if roll < 0.55:  # serial / small
            kwargs = {
                "num_tasks": rng.choice((1, 1, 2, 4, 8)),
                "mem_per_node": rng.choice((None, 1000, 4000)),
            }
        elif roll < 0.75:  # whole node
            kwargs = {"num_tasks": 64, "mem_per_node": 0}
        elif roll < 0.93:  # multi-node MPI
            n = rng.choice((2, 4, 8, 16, 32))
            kwargs = {"min_nodes": n, "num_tasks": n * rng.choice((16, 32, 64)), "mem_per_node": 8000}
        else:  # constraints, exclusions, holds, future begin
            kwargs = {"num_tasks": 4, "features": "ib" if part != "gpu" else "a100|gpu"}
            if rng.random() < 0.3:
                kwargs["exc_nodes"] = frozenset(f"node{rng.randrange(nodes):04d}" for _ in range(3))
            if rng.random() < 0.2:
                kwargs["hold"] = "user"
            if rng.random() < 0.2:
                kwargs["begin_time"] = NOW + 3600
        if part == "debug":
            kwargs["min_nodes"] = min(kwargs.get("min_nodes", 1), 4)
        pending.append(
            JobView(
                job_id=job_id,
                partition=part,
                user=f"u{rng.randrange(200)}",
                submit_time=NOW - rng.uniform(0, 86400),
                time_limit=rng.choice((None, 5, 15, 30, 60, 240, 1440))
                if part != "debug"
                else rng.choice((5, 10, 30)),
                **kwargs,
            )
        )
        job_id += 1
    return Snapshot(
        now=NOW, nodes=tuple(views), partitions=partitions, pending=tuple(pending), running=tuple(running)
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=20_000)
    ap.add_argument("--nodes", type=int, default=2_048)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    snap = build(args.jobs, args.nodes, args.seed)
    times = []
    result = None
    for _ in range(args.runs):
        t0 = time.perf_counter()
        result = schedule(snap)
        times.append(time.perf_counter() - t0)
    assert result is not None
    median = statistics.median(times)
    decisions = len(result.starts) + len(result.pending)
    reasons: dict[str, int] = {}
    for p in result.pending:
        reasons[p.reason] = reasons.get(p.reason, 0) + 1
    s = result.stats
    print(f"scheduler pass: {args.jobs} pending jobs, {args.nodes} nodes, {len(snap.running)} running jobs")
    print(f"median pass time: {median * 1000:.1f} ms over {args.runs} runs (min {min(times) * 1000:.1f} ms)")
    print(f"decisions/s: {decisions / median:,.0f}")
    print(
        f"started {s.started} ({s.backfilled} by backfill), backfill tested {s.bf_tested}, "
        f"planned {s.reservations}, timeouts {s.timeouts}"
    )
    print("pending reasons: " + ", ".join(f"{k}={v}" for k, v in sorted(reasons.items())))


if __name__ == "__main__":
    main()
