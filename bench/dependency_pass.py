"""Benchmark: a scheduler pass over 20,000 pending jobs of which half have dependencies.

    .venv/bin/python bench/dependency_pass.py [--jobs 20000] [--nodes 2048] [--runs 5] [--seed 1]

The queue and cluster of ``bench/scheduler_pass.py``; half the pending jobs get a
``--dependency``: chains of 1,000 jobs each ``afterok`` on the one before, ``afterok`` on a
running job, ``afterany`` on a job that completed, ``afternotok`` on a job that completed
(never satisfied), ``afterok`` on a whole array, and ``singleton``.  Timed, as a pass does
them: parsing the stored dependencies, building the facts from the rows that the pass's one
statement reads (the statement itself is not timed here), and the core's pass; the pass
without any dependency is printed alongside.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.scheduler_pass import NOW, build
from cluster.core import dependencies
from cluster.core.scheduler import Snapshot, schedule

CHAIN = 1_000


def with_dependencies(
    snap: Snapshot, seed: int
) -> tuple[Snapshot, dict[int, str], list[dependencies.JobFacts]]:
    """The snapshot with half its pending jobs depending, their stored texts, and the
    rows the pass would read for them."""
    rng = random.Random(seed)
    running = [j.job_id for j in snap.running]
    done_base = max(j.job_id for j in snap.pending) + 1
    array_id = done_base + 10_000
    facts = [dependencies.JobFacts(j.job_id, "RUNNING", NOW - 60) for j in snap.running]
    facts += [dependencies.JobFacts(j.job_id, "PENDING", user=j.user, name="sim") for j in snap.pending]
    facts += [dependencies.JobFacts(done_base + i, "COMPLETED", NOW - 600) for i in range(1000)]
    facts += [
        dependencies.JobFacts(array_id + t, "RUNNING", NOW - 60, array_job_id=array_id, array_task_id=t)
        for t in range(100)
    ]
    texts: dict[int, str] = {}
    pending = list(snap.pending)
    depending = sorted(rng.sample(range(len(pending)), len(pending) // 2))
    chain_members = depending[: len(depending) // 5]
    for pos, i in enumerate(chain_members):
        if pos % CHAIN:
            texts[pending[i].job_id] = f"afterok:{pending[chain_members[pos - 1]].job_id}"
    for i in depending[len(chain_members) :]:
        roll = rng.random()
        if roll < 0.5:
            text = f"afterok:{rng.choice(running)}"
        elif roll < 0.75:
            text = f"afterany:{done_base + rng.randrange(1000)}"
        elif roll < 0.85:
            text = f"afternotok:{done_base + rng.randrange(1000)}"
        elif roll < 0.95:
            text = f"afterok:{array_id}_*"
        else:
            text = "singleton"
        texts[pending[i].job_id] = text
    stored = {job_id: dependencies.parse(text).text() for job_id, text in texts.items()}  # type: ignore[union-attr]
    return snap, stored, facts


def one_pass(snap: Snapshot, stored: dict[int, str], facts: list[dependencies.JobFacts]) -> tuple[float, ...]:
    gc.disable()
    try:
        t0 = time.perf_counter()
        parsed = {job_id: dependencies.parse(text) for job_id, text in stored.items()}
        t1 = time.perf_counter()
        ids, arrays, _ = dependencies.referenced({k: v for k, v in parsed.items() if v is not None})
        singles = {(j.user, "sim") for j in snap.pending if (d := parsed.get(j.job_id)) and d.has_singleton()}
        # What the pass's one statement returns: the jobs by id, by array, by user and name.
        read = [
            f for f in facts if f.job_id in ids or f.array_job_id in arrays or (f.user, f.name) in singles
        ]
        built = dependencies.Facts.build(read, singles)
        t2 = time.perf_counter()
        # The adapter builds each JobView with its dependency: not the pass's cost.
        pending = tuple(
            dataclasses.replace(j, dependency=parsed[j.job_id], name="sim") if j.job_id in parsed else j
            for j in snap.pending
        )
        t3 = time.perf_counter()
        result = schedule(dataclasses.replace(snap, pending=pending, depend_facts=built))
        t4 = time.perf_counter()
    finally:
        gc.enable()
    waits = sum(1 for p in result.pending if p.reason == "Dependency")
    never = sum(1 for p in result.pending if p.reason == "DependencyNeverSatisfied")
    parse_t, facts_t, core_t = t1 - t0, t2 - t1, t4 - t3
    return parse_t, facts_t, core_t, parse_t + facts_t + core_t, len(result.starts), waits, never, len(read)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=20_000)
    ap.add_argument("--nodes", type=int, default=2_048)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    snap, stored, facts = with_dependencies(build(args.jobs, args.nodes, args.seed), args.seed)
    runs = [one_pass(snap, stored, facts) for _ in range(args.runs)]
    plain = []
    for _ in range(args.runs):
        gc.disable()
        t0 = time.perf_counter()
        schedule(snap)
        plain.append(time.perf_counter() - t0)
        gc.enable()
    parse_t, facts_t, core_t, total_t = (statistics.median(r[i] for r in runs) for i in range(4))
    started, waits, never, read = runs[-1][4:]
    print(
        f"dependency pass: {args.jobs} pending jobs, {len(stored)} with a dependency "
        f"(chains of {CHAIN}), {read} jobs read for them"
    )
    print(
        f"median pass with dependencies: {total_t * 1000:.1f} ms (parse {parse_t * 1000:.1f} ms, "
        f"facts {facts_t * 1000:.1f} ms, core {core_t * 1000:.1f} ms) over {args.runs} runs"
    )
    print(f"median pass without dependencies: {statistics.median(plain) * 1000:.1f} ms")
    print(f"started {started}, Dependency {waits}, DependencyNeverSatisfied {never}")


if __name__ == "__main__":
    main()
