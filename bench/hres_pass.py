"""Benchmark: a scheduler pass with hierarchical resources on 20,000 pending jobs, 2,048 nodes.

    .venv/bin/python bench/hres_pass.py [--jobs 20000] [--nodes 2048] [--runs 5] [--seed 1]

The cluster and queue of ``bench/scheduler_pass.py`` (busy nodes, four partitions, mixed
jobs), with the three resources of the example in Slurm's hres.html scaled up to the node
count: ``flat`` (Mode 2: top, 4 mids, 16 lows), ``natural`` (Mode 1: top and 16 lows) and
``power`` (Mode 3: racks of 32 nodes, rows of 512, one datacenter, with base usage).  A quarter of the
running jobs hold charges of all three; every pending job asks ``flat:1,natural:1,power:N``.
Times :func:`cluster.core.scheduler.schedule` with :class:`hres.core.plugin.HresPlugin` (a new
plugin per pass, as the adapter makes one, so ``begin_pass`` rebuilding usage is counted)
and, for comparison, the same pass without HRES.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.scheduler_pass import build
from cluster.core.scheduler import schedule
from hres.core.config import parse_resources
from hres.core.layers import Charge, Refusal, build_state, plan
from hres.core.plugin import HresPlugin
from slurmwords.licenses import LicenseItem


def resources_yaml(names: list[str]) -> str:
    n = len(names)

    def span(lo: int, hi: int) -> str:
        return f'["{names[lo]}-{names[hi - 1]}"]' if hi - lo > 1 else f'["{names[lo]}"]'

    def hostlist(lo: int, hi: int) -> str:
        # names are nodeNNNN: a bracketed range keeps the file short.
        return f'["node[{names[lo][4:]}-{names[hi - 1][4:]}]"]' if hi - lo > 1 else span(lo, hi)

    lines = ["- resource: flat", "  mode: MODE_2", "  layers:"]
    lines.append(f"    - {{layer_name: top, nodes: {hostlist(0, n)}, count: 8000}}")
    for k in range(4):
        lo, hi = k * n // 4, (k + 1) * n // 4
        lines.append(f"    - {{layer_name: mid{k + 1}, nodes: {hostlist(lo, hi)}, count: 2500}}")
    for k in range(16):
        lo, hi = k * n // 16, (k + 1) * n // 16
        lines.append(f"    - {{layer_name: low{k + 1}, nodes: {hostlist(lo, hi)}, count: 700}}")
    lines += ["- resource: natural", "  mode: MODE_1", "  layers:"]
    lines.append(f"    - {{layer_name: top, nodes: {hostlist(0, n)}, count: 2000}}")
    for k in range(16):
        lo, hi = k * n // 16, (k + 1) * n // 16
        lines.append(f"    - {{layer_name: low{k + 1}, nodes: {hostlist(lo, hi)}, count: 400}}")
    lines += ["- resource: power", "  mode: MODE_3", "  topology: blok1", "  layers:"]
    racks = max(1, n // 32)
    rows = max(1, racks // 16)
    for r in range(racks):
        lo, hi = r * n // racks, (r + 1) * n // racks
        lines.append(
            f"    - {{layer_name: rack{r + 1}, parent_name: row{r * rows // racks + 1}, "
            f"nodes: {hostlist(lo, hi)}, count: 60000, base: [{{name: pdu, value: 2000}}]}}"
        )
    for w in range(rows):
        lines.append(
            f"    - {{layer_name: row{w + 1}, parent_name: datacenter, count: 800000, "
            f"base: [{{name: net, value: 3000}}]}}"
        )
    lines.append("    - {layer_name: datacenter, count: 3000000, base: [{name: ac, value: 10000}]}")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=20_000)
    ap.add_argument("--nodes", type=int, default=2_048)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--idle", action="store_true", help="no running jobs: nodes are free, so the layers are what binds"
    )
    args = ap.parse_args()

    rng = random.Random(args.seed)
    snap = build(args.jobs, args.nodes, args.seed)
    if args.idle:
        snap = dataclasses.replace(snap, running=())
    names = [n.name for n in snap.nodes]
    config = parse_resources(resources_yaml(names), cluster_nodes=names)
    state = build_state(config, names)

    # A quarter of the running jobs hold all three resources (as the ORM would record).
    charges: dict[int, tuple[Charge, ...]] = {}
    running = []
    for job in snap.running:
        if rng.random() < 0.25:
            items = [
                LicenseItem("flat", 1),
                LicenseItem("natural", 1),
                LicenseItem("power", rng.choice((200, 500))),
            ]
            got = plan(state, items, job.node_indices)
            if not isinstance(got, Refusal):
                state = state.charge(got)
                charges[job.job_id] = got
                running.append(dataclasses.replace(job, licenses=",".join(str(i) for i in items)))
                continue
        running.append(job)
    empty = build_state(config, names)
    pending = tuple(
        dataclasses.replace(j, licenses=f"flat:1,natural:1,power:{rng.choice((250, 500, 1000))}")
        for j in snap.pending
    )
    snap = dataclasses.replace(snap, pending=pending, running=tuple(running))

    base_times = []
    for _ in range(max(1, args.runs // 2)):
        t0 = time.perf_counter()
        schedule(snap)
        base_times.append(time.perf_counter() - t0)

    times = []
    result = plugin = None
    for _ in range(args.runs):
        t0 = time.perf_counter()
        plugin = HresPlugin(empty, charges)
        result = schedule(snap, [plugin])
        times.append(time.perf_counter() - t0)
    assert result is not None and plugin is not None
    median = statistics.median(times)
    decisions = len(result.starts) + len(result.pending)
    reasons: dict[str, int] = {}
    for p in result.pending:
        reasons[p.reason] = reasons.get(p.reason, 0) + 1
    layers = sum(len(r.structure.layers) for r in empty.resources)
    s = result.stats
    print(
        f"HRES scheduler pass: {args.jobs} pending jobs, {args.nodes} nodes, {len(snap.running)} running "
        f"jobs ({len(charges)} holding HRES), {layers} layers in 3 resources"
    )
    print(f"median pass time: {median * 1000:.1f} ms over {args.runs} runs (min {min(times) * 1000:.1f} ms)")
    print(f"same pass without HRES: {statistics.median(base_times) * 1000:.1f} ms")
    print(f"decisions/s: {decisions / median:,.0f}")
    print(
        f"started {s.started} ({s.backfilled} by backfill, {len(plugin.started)} charged), "
        f"backfill tested {s.bf_tested}, fit attempts {s.fit_attempts}"
    )
    print("pending reasons: " + ", ".join(f"{k}={v}" for k, v in sorted(reasons.items())))


if __name__ == "__main__":
    main()
