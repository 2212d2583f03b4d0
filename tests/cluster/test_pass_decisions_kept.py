"""Every decision of a pass, as the core made them before session 16's cuts of its
per-node work (#18): timeouts and expected ends in one walk, release lists built per
node, backfill's start-now search over the nodes still fitting, ready times read in place.

Each case's :func:`cluster.core.scheduler.schedule` result (starts with their nodes and
charges, every pending job's reason, priority, planned start and planned nodes, timeouts,
the pass's counts) is hashed and compared with the hash the core gave before those
changes, on random clusters (holding jobs COMPLETING, SUSPENDED, without a start or a
limit, on nodes gone; pending jobs with required or excluded nodes, --exclusive, --mem=0,
constraints; small backfill windows and test limits) and on the pass benchmark's busy
clusters (bench.scheduler_pass).  A change to any decision fails here.
"""

from __future__ import annotations

import dataclasses
import hashlib
import random

import pytest

from bench.scheduler_pass import build
from cluster.core.scheduler import JobView, NodeView, PartitionView, SchedulerConfig, Snapshot, schedule

NOW = 100_000.0


def random_snapshot(rng: random.Random) -> Snapshot:
    n = rng.randrange(1, 80)
    nodes = tuple(
        NodeView(
            index=i,
            name=f"n{i:03d}",
            cpus=rng.choice((4, 8, 16)),
            real_memory=rng.choice((1000, 4000, 8000)),
            weight=rng.choice((1, 1, 5)),
            base=rng.choice(("IDLE", "IDLE", "IDLE", "DOWN", "ALLOCATED", "MIXED")),
            flags=rng.choice((0, 0, 0, 0, 1, 2)),
            features=frozenset(rng.sample(["a", "b", "c"], rng.randrange(0, 3))),
            alloc_cpus=rng.choice((0, 0, 0, 2)),
            alloc_mem=rng.choice((0, 0, 100)),
        )
        for i in range(n)
    )
    parts = {
        "p": PartitionView(
            "p", tuple(range(n)), max_time=rng.choice((None, 120)), default_time=rng.choice((None, 30))
        ),
        "q": PartitionView(
            "q", tuple(range(n // 2, n)), priority_tier=rng.choice((1, 2)), max_nodes=rng.choice((None, 3))
        ),
    }
    running = []
    job_id = 1
    for _ in range(rng.randrange(0, 3 * n)):
        at = tuple(rng.sample(range(n + 2), min(rng.randrange(1, 3), n)))  # n, n+1: nodes gone
        running.append(
            JobView(
                job_id=job_id,
                partition=rng.choice(("p", "q", "gone")),
                user="u",
                submit_time=0.0,
                state=rng.choice(("RUNNING",) * 6 + ("SUSPENDED", "COMPLETING", "STOPPED", "CONFIGURING")),
                start_time=rng.choice((None, NOW - 100, NOW - 3000, NOW - 10000, NOW - 60)),
                paused=rng.choice((0, 0, 50)),
                time_limit=rng.choice((None, 0, 1, 5, 30, 60, 200, 5000)),
                node_indices=at,
                # Sometimes not given per node: the whole node, as a holding job's default.
                alloc_cpus=tuple(rng.choice((1, 2, 4)) for _ in at) if rng.random() < 0.85 else (),
                alloc_mem=tuple(rng.choice((0, 100, 500)) for _ in at) if rng.random() < 0.85 else (),
            )
        )
        job_id += 1
    pending = []
    for _ in range(rng.randrange(0, 60)):
        extra: dict = {}
        roll = rng.random()
        if roll < 0.1:
            extra["req_nodes"] = frozenset(f"n{rng.randrange(n + 1):03d}" for _ in range(rng.randrange(1, 3)))
        elif roll < 0.2:
            extra["exc_nodes"] = frozenset(f"n{rng.randrange(n):03d}" for _ in range(2))
        if rng.random() < 0.1:
            extra["exclusive"] = True
        if rng.random() < 0.1:
            extra["features"] = rng.choice(("a", "a|b", "b&c", "z"))
        pending.append(
            JobView(
                job_id=job_id,
                partition=rng.choice(("p", "p", "q", "nope")),
                user="u",
                submit_time=0.0,
                min_nodes=rng.choice((1, 1, 2, 3)),
                num_tasks=rng.choice((1, 2, 4, 8, 16)),
                mem_per_node=rng.choice((None, 0, 100, 2000)),
                time_limit=rng.choice((None, 0, 1, 10, 60, 300)),
                priority=rng.choice((0, 0, 5, 10)),
                **extra,
            )
        )
        job_id += 1
    config = SchedulerConfig(
        bf_window=rng.choice((1440, 60, 5)),
        bf_max_job_test=rng.choice((500, 3)),
        bf_max_job_start=rng.choice((None, 2)),
        max_starts_per_pass=rng.choice((None, None, 3)),
        default_mem_per_node=rng.choice((0, 0, 500)),
        backfill=rng.random() < 0.9,
    )
    return Snapshot(
        now=NOW, nodes=nodes, partitions=parts, pending=tuple(pending), running=tuple(running), config=config
    )


def numbered_as_then(job: JobView, partition: PartitionView | None, now: float) -> int:
    """priority/basic's numbers as the core gave them when the hashes were taken (the tier
    times 10**10 plus the submit order); since session 19 the core counts down from
    Slurm's TOP_PRIORITY instead.  The pass takes its priority function as a parameter,
    so the hashes still check every other decision against the old core."""
    if job.priority:
        return job.priority
    tier = partition.priority_tier if partition is not None else 0
    return max(1, tier * 10**10 + max(1, 10**10 - job.job_id) - job.nice)


def digest(snap: Snapshot) -> str:
    r = schedule(snap, priority=numbered_as_then)
    text = repr((r.starts, r.pending, r.timeouts, r.stats, r.dependencies, r.expired))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def random_digests(seeds: range) -> str:
    """One hash over the passes of many random snapshots (one per seed)."""
    h = hashlib.sha256()
    for seed in seeds:
        h.update(digest(random_snapshot(random.Random(seed))).encode())
    return h.hexdigest()[:16]


def bench_snapshot(pending: int, nodes: int, seed: int, variant: str) -> Snapshot:
    snap = build(pending, nodes, seed)
    if variant == "window":
        return dataclasses.replace(snap, config=SchedulerConfig(bf_window=120))
    if variant == "later":  # five hours on: many holding jobs past their limit
        return dataclasses.replace(snap, now=snap.now + 5 * 3600)
    return snap


# Computed with the core as of d38a021 (before these changes).
RANDOM_BEFORE = {0: "76089126fb6567ff", 1: "c9f637412dc0b5c1", 2: "792cd78e12c45391", 3: "ee8d3ccab29d49cb"}
BENCH_BEFORE = {
    (300, 200, 1, ""): "3515fb91904a45ea",
    (300, 200, 1, "window"): "59721755ac71787f",
    (300, 200, 1, "later"): "69d0d871bf5f479b",
    (1500, 600, 2, ""): "e6985b8ab0baf1d2",
    (800, 1000, 3, ""): "028d7db120a7c5fa",
}


@pytest.mark.parametrize("block", range(4))
def test_random_passes_decide_as_before(block):
    seeds = range(block * 100, block * 100 + 100)
    assert random_digests(seeds) == RANDOM_BEFORE[block]


@pytest.mark.parametrize(
    "case",
    [
        (300, 200, 1, ""),
        (300, 200, 1, "window"),
        (300, 200, 1, "later"),
        (1500, 600, 2, ""),
        (800, 1000, 3, ""),
    ],
)
def test_bench_passes_decide_as_before(case):
    assert digest(bench_snapshot(*case)) == BENCH_BEFORE[case]


def _fresh(snap: Snapshot) -> Snapshot:
    """The same snapshot with its holding jobs in a new tuple: nothing kept applies."""
    return dataclasses.replace(snap, running=tuple(list(snap.running)))


def _outcome(snap: Snapshot):
    r = schedule(snap)
    return (r.starts, r.pending, r.timeouts, r.stats)


@pytest.mark.parametrize("seed", range(6))
def test_a_pass_on_the_last_pass_s_holding_jobs_decides_as_a_fresh_one(seed):
    """The holding jobs' allocations, limits and releases are kept for the next pass on
    the very same tuple of them (the simulator's and live passes between two changes):
    later clocks, other settings, other partition limits and node sizes must still give
    what a pass on the same jobs read afresh gives."""
    rng = random.Random(1000 + seed)
    for _ in range(25):
        snap = random_snapshot(rng)
        schedule(snap)  # keeps its holdings
        later = []
        for dt in (0.0, 45.0, 700.0, 4000.0, 20000.0):
            later.append(dataclasses.replace(snap, now=snap.now + dt))
        later.append(dataclasses.replace(snap, config=SchedulerConfig(backfill=False)))
        later.append(dataclasses.replace(snap, pending=(), now=snap.now + 300))
        parts = {
            name: dataclasses.replace(p, max_time=None, default_time=rng.choice((1, 20)))
            for name, p in snap.partitions.items()
        }
        later.append(dataclasses.replace(snap, partitions=parts))
        nodes = tuple(dataclasses.replace(n, cpus=n.cpus * 2) for n in snap.nodes)
        later.append(dataclasses.replace(snap, nodes=nodes))
        for again in later:
            schedule(snap)  # its holdings kept again (a fresh read replaces them)
            kept = _outcome(again)
            assert kept == _outcome(_fresh(again))
