"""Benchmark: scheduler pass time against queue depth and node count (#18).

    .venv/bin/python -m bench.pass_scaling [--pending 1000 10000 100000] [--nodes 1000 10000]
                                           [--runs 5] [--seed 1] [--quick]

Times :func:`cluster.core.scheduler.schedule` on the cluster and queue that
``bench.scheduler_pass`` builds (busy nodes, four partitions, a mixed queue), for every
pair of queue depth and node count, and prints a table of the median pass times: CPU time
of this process (``time.process_time``), since the machines these figures come from are
shared and the wall clock of a pass counts the time other work held the CPU.  A row
with an empty queue gives each node count's floor: reading the snapshot (nodes and the
running jobs, about six per node) costs that much whatever the queue.

Then the growth exponents, fitted by least squares on log(pass time) against log(pending)
and log(nodes) together, and the target of #18: pass time no worse than linear in
pending x log(nodes), i.e. the pending exponent at most 1 and the nodes exponent at most
that of log(nodes) over the same range (log(log N2 / log N1) / log(N2 / N1), 0.125 from 1k
to 10k).  The same fit is printed for the time above the floor (the scheduling itself).
``--quick``: 1k and 10k pending, 3 runs (the 100k column takes most of the default's time).
The cyclic garbage collector is off during each timed pass, as the live pass runs
(``cluster.services.scheduling.decide``); ``bench.pass_service`` times that live service.

Two tables.  **cold**: every timed pass with nothing kept from an earlier one
(``cluster.core.scheduler.forget_kept`` before it), as the first pass of a controller or
a pass after the nodes were read again.  **steady**: every timed pass follows a pass on
the same cluster, a second later, with a few of the holding jobs ended and the last pass's
first starts running (new views of those jobs, the other views the same objects, and
what changed said in ``Snapshot.running_since``, as ``cluster.services.pass_snapshot``
hands them over): what a live or simulated pass mostly is.  The target of #18 applies to
the steady pass; the cold one is there to show what keeping the node side between passes
saves.
``--changed``: the old middle case instead of cold, every pass on a new tuple of the same
holding jobs (the same view objects), after a pass on them.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import math
import random
import statistics
import time
from collections.abc import Sequence

from bench import reference
from bench.scheduler_pass import build
from cluster.core.scheduler import PassResult, RunningChange, Snapshot, forget_kept, schedule

STEADY_CHANGES = 5  # holding jobs ended, and jobs started, between two steady passes


def median_pass(pending: int, nodes: int, runs: int, seed: int, *, mode: str = "cold") -> tuple[float, int]:
    """Median seconds of one pass over ``runs`` (after one warm-up), and the jobs started.
    ``mode``: "cold", "steady" or "changed" (see the module docstring)."""
    snap = build(pending, nodes, seed)
    result = schedule(snap)  # warm-up: caches and allocator
    times = []
    for run in range(runs):
        if mode == "changed":
            snap = dataclasses.replace(snap, running=tuple(list(snap.running)))
        elif mode == "steady":
            snap = steady_step(snap, result, seed + run)
        else:
            forget_kept()
        gc.disable()
        try:
            t0 = time.process_time()
            result = schedule(snap)
            times.append(time.process_time() - t0)
        finally:
            gc.enable()
    return statistics.median(times), len(result.starts)


def steady_step(snap: Snapshot, last: PassResult, seed: int) -> Snapshot:
    """The snapshot of the next pass, a second later: a few holding jobs ended and the last
    pass's first starts running; every other view the very same object."""
    rng = random.Random(seed)
    ended = {snap.running[k].job_id for k in rng.sample(range(len(snap.running)), STEADY_CHANGES)}
    starts = {s.job_id: s for s in last.starts[:STEADY_CHANGES]}
    started = []
    for job in snap.pending:
        s = starts.get(job.job_id)
        if s is not None:
            started.append(
                dataclasses.replace(
                    job,
                    state="RUNNING",
                    start_time=snap.now,
                    time_limit=s.time_limit or 0,
                    node_indices=s.node_indices,
                    alloc_cpus=s.cpus_per_node,
                    alloc_mem=s.mem_per_node,
                )
            )
    running = tuple(j for j in snap.running if j.job_id not in ended) + tuple(started)
    pending = tuple(j for j in snap.pending if j.job_id not in starts)
    gone = tuple(j for j in snap.running if j.job_id in ended)
    change = RunningChange(snap.running, running, gone, tuple(started))
    return dataclasses.replace(snap, now=snap.now + 1, running=running, pending=pending, running_since=change)


def fit(points: Sequence[tuple[float, float, float]]) -> tuple[float, float]:
    """Least-squares exponents (b, c) of ``t = a * p**b * n**c`` over (p, n, t) points."""
    rows = [(math.log(p), math.log(n), math.log(t)) for p, n, t in points]
    mx = statistics.fmean(r[0] for r in rows)
    my = statistics.fmean(r[1] for r in rows)
    mz = statistics.fmean(r[2] for r in rows)
    sxx = sum((x - mx) ** 2 for x, _, _ in rows)
    syy = sum((y - my) ** 2 for _, y, _ in rows)
    sxy = sum((x - mx) * (y - my) for x, y, _ in rows)
    sxz = sum((x - mx) * (z - mz) for x, _, z in rows)
    syz = sum((y - my) * (z - mz) for _, y, z in rows)
    det = sxx * syy - sxy * sxy
    if det == 0:
        raise ValueError("need at least two queue depths and two node counts")
    return (sxz * syy - syz * sxy) / det, (syz * sxx - sxz * sxy) / det


def log_exponent(nodes: Sequence[int]) -> float:
    """The exponent log(N) itself shows from the smallest to the largest node count."""
    lo, hi = min(nodes), max(nodes)
    return math.log(math.log(hi) / math.log(lo)) / math.log(hi / lo)


def verdict(b: float, c: float, bound: float) -> str:
    met = b <= 1.0 and c <= bound
    return f"pending exponent {b:.2f} (target <= 1), nodes exponent {c:.2f} (target <= {bound:.3f}): " + (
        "target met" if met else "target NOT met"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench.pass_scaling", description=__doc__.splitlines()[0])
    ap.add_argument("--pending", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    ap.add_argument("--nodes", type=int, nargs="+", default=[1_000, 10_000])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="1k and 10k pending, 3 runs")
    ap.add_argument(
        "--changed",
        action="store_true",
        help="instead of cold: every pass on a new tuple of the same holding jobs",
    )
    args = ap.parse_args(argv)
    if args.quick:
        args.pending, args.runs = [1_000, 10_000], 3
    if len(set(args.pending)) < 2 or len(set(args.nodes)) < 2 or min(args.pending + args.nodes) < 2:
        ap.error("give at least two queue depths and two node counts, each at least 2")

    print(f"  before: {reference.describe()}")
    bound = log_exponent(args.nodes)
    for mode in ("changed" if args.changed else "cold", "steady"):
        table(mode, args.pending, args.nodes, runs=args.runs, seed=args.seed, bound=bound)
    print(f"  after: {reference.describe()}")
    return 0


HEADINGS = {
    "cold": "cold: nothing kept from an earlier pass",
    "steady": f"steady: a pass a second earlier, {STEADY_CHANGES} holding jobs ended, as many started",
    "changed": "a new tuple of the same holding jobs every pass, after a pass on them",
}


def table(mode: str, pending: list[int], nodes: list[int], *, runs: int, seed: int, bound: float) -> None:
    print(f"scheduler pass time (ms, median of {runs}) against queue depth and node count; {HEADINGS[mode]}")
    floor: dict[int, float] = {}
    cells: dict[tuple[int, int], tuple[float, int]] = {}
    for n in nodes:
        floor[n] = median_pass(0, n, runs, seed, mode=mode)[0]
        for p in pending:
            cells[p, n] = median_pass(p, n, runs, seed, mode=mode)
    width = max(12, *(len(f"{n:,} nodes") + 2 for n in nodes))
    print(f"  {'pending':>10}" + "".join(f"{f'{n:,} nodes':>{width}}" for n in nodes))
    print(f"  {'0 (floor)':>10}" + "".join(f"{floor[n] * 1000:>{width}.1f}" for n in nodes))
    for p in pending:
        print(f"  {p:>10,}" + "".join(f"{cells[p, n][0] * 1000:>{width}.1f}" for n in nodes))
    print(
        "  jobs started per pass: "
        + ", ".join(f"{p:,}/{n:,}: {cells[p, n][1]}" for p in pending for n in nodes)
    )
    b, c = fit([(p, n, t) for (p, n), (t, _) in cells.items()])
    print(f"  whole pass:       {verdict(b, c, bound)}")
    above = [(p, n, t - floor[n]) for (p, n), (t, _) in cells.items() if t > floor[n]]
    if len(above) == len(cells):
        b, c = fit(above)
        print(f"  above the floor:  {verdict(b, c, bound)}")


if __name__ == "__main__":
    raise SystemExit(main())
