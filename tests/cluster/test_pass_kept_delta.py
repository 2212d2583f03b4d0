"""The pass core's node side and holdings kept between passes and brought up to date by
what changed (cluster.core.scheduler: ``_NodeSide.updated``, ``_Holdings.derived``) decide
as a pass that builds them anew.

A sequence of passes on one random cluster, each a little after the last with a few
holding jobs ended, started or changed (state, limit, paused time), a few node views
replaced (state, flags, weight, features, size, what they say is allocated), sometimes
the partitions' limits changed: every pass of the sequence run with what the passes
before it kept, against the same pass with nothing kept (``forget_kept``), every decision
compared; what changed in the holding jobs sometimes said (``Snapshot.running_since``),
sometimes found.  Between the kept passes, start estimates (one probe job, the default node
order) run as a request thread's dry run does, on the same views: they must not change
what the next kept pass finds.
"""

from __future__ import annotations

import dataclasses
import random

import pytest

from bench.pass_scaling import steady_step
from bench.scheduler_pass import build
from cluster.core.scheduler import JobView, NodeView, RunningChange, Snapshot, forget_kept, schedule
from tests.cluster.test_pass_decisions_kept import random_snapshot


def heavy_first(node: NodeView) -> tuple[int, ...]:
    """Another node order (as power saving passes one): heaviest first."""
    return (-node.weight, node.index)


def new_holding(rng: random.Random, job_id: int, snap: Snapshot) -> JobView:
    n = len(snap.nodes)
    at = tuple(rng.sample(range(n + 1), min(rng.randrange(1, 3), n)))  # n: a node gone
    per_node = rng.random() < 0.85
    return JobView(
        job_id=job_id,
        partition=rng.choice(("p", "q", "gone")),
        user="u",
        submit_time=0.0,
        state=rng.choice(("RUNNING",) * 5 + ("SUSPENDED", "COMPLETING", "CONFIGURING")),
        start_time=rng.choice((None, snap.now, snap.now - 120, snap.now - 5000)),
        paused=rng.choice((0, 0, 30)),
        time_limit=rng.choice((None, 0, 1, 5, 60, 300)),
        node_indices=at,
        alloc_cpus=tuple(rng.choice((1, 2, 4)) for _ in at) if per_node else (),
        alloc_mem=tuple(rng.choice((0, 100, 500)) for _ in at) if per_node else (),
    )


def changed_node(rng: random.Random, node: NodeView) -> NodeView:
    field = rng.choice(("flags", "base", "weight", "features", "cpus", "alloc", "same"))
    if field == "flags":
        return dataclasses.replace(node, flags=rng.choice((0, 1, 2, 0)))
    if field == "base":
        return dataclasses.replace(node, base=rng.choice(("IDLE", "DOWN", "MIXED")))
    if field == "weight":
        return dataclasses.replace(node, weight=rng.choice((1, 5, 9)))
    if field == "features":
        return dataclasses.replace(node, features=frozenset(rng.sample(["a", "b", "c"], rng.randrange(0, 3))))
    if field == "cpus":
        return dataclasses.replace(node, cpus=rng.choice((4, 8, 16, 32)))
    if field == "alloc":
        # Up to the whole node: what it says is allocated then decides what it has free.
        return dataclasses.replace(
            node,
            alloc_cpus=rng.choice((0, 2, node.cpus)),
            alloc_mem=rng.choice((0, 300, node.real_memory)),
        )
    return dataclasses.replace(node)  # a new view of the same node


def next_snapshot(rng: random.Random, snap: Snapshot, job_ids: list[int]) -> Snapshot:
    running = list(snap.running)
    for _ in range(rng.randrange(0, 4)):  # ended
        if running:
            running.pop(rng.randrange(len(running)))
    for _ in range(rng.randrange(0, 3)):  # changed in place
        if running:
            k = rng.randrange(len(running))
            running[k] = dataclasses.replace(
                running[k],
                state=rng.choice(("RUNNING", "COMPLETING", "SUSPENDED")),
                paused=running[k].paused + rng.choice((0, 40)),
                time_limit=rng.choice((running[k].time_limit, 2, None)),
            )
    for _ in range(rng.randrange(0, 4)):  # started
        job_ids[0] += 1
        running.insert(rng.randrange(len(running) + 1), new_holding(rng, job_ids[0], snap))
    nodes = list(snap.nodes)
    if rng.random() < 0.5:
        for _ in range(rng.randrange(1, 3)):
            k = rng.randrange(len(nodes))
            nodes[k] = changed_node(rng, nodes[k])
    parts = snap.partitions
    if rng.random() < 0.1:
        parts = {
            name: dataclasses.replace(p, default_time=rng.choice((None, 5, 30))) for name, p in parts.items()
        }
    pending = snap.pending
    if rng.random() < 0.3 and pending:
        pending = pending[1:]
    result = tuple(running)
    since = None
    if rng.random() < 0.6:  # said, as cluster.services.pass_snapshot says it
        now_ids = {id(j) for j in result}
        was_ids = {id(j) for j in snap.running}
        gone = tuple(j for j in snap.running if id(j) not in now_ids)
        came = tuple(j for j in result if id(j) not in was_ids)
        since = RunningChange(snap.running, result, gone, came)
    elif rng.random() < 0.3:  # said of another tuple: not to be used
        since = RunningChange(snap.running, result[:-1], (), ())
    return dataclasses.replace(
        snap,
        now=snap.now + rng.choice((0.0, 1.0, 30.0, 400.0)),
        nodes=tuple(nodes) if nodes != list(snap.nodes) or rng.random() < 0.3 else snap.nodes,
        running=result,
        partitions=parts,
        pending=pending,
        running_since=since,
    )


def decisions(snap: Snapshot, node_key=None) -> tuple:
    r = schedule(snap, node_key=node_key) if node_key else schedule(snap)
    return (r.starts, r.pending, r.timeouts, r.stats, r.dependencies, r.expired)


def probe(snap: Snapshot) -> Snapshot:
    job = JobView(job_id=10**6, partition="p", user="u", submit_time=0.0, num_tasks=2, time_limit=30)
    return dataclasses.replace(snap, pending=(job,))


@pytest.mark.parametrize("seed", range(12))
def test_passes_on_kept_state_decide_as_passes_built_anew(seed):
    rng = random.Random(7000 + seed)
    snap = random_snapshot(rng)
    while not snap.nodes or not snap.running:
        snap = random_snapshot(rng)
    node_key = heavy_first if seed % 3 == 0 else None
    job_ids = [max(j.job_id for j in snap.running + snap.pending) + 1]
    sequence = [snap]
    for _ in range(30):
        sequence.append(next_snapshot(rng, sequence[-1], job_ids))

    forget_kept()
    kept = []
    for k, step in enumerate(sequence):
        kept.append(decisions(step, node_key))
        if k % 4 == 1:
            schedule(probe(step))  # a start estimate between two passes
    fresh = []
    for step in sequence:
        forget_kept()
        fresh.append(decisions(step, node_key))
    for k, (a, b) in enumerate(zip(kept, fresh, strict=True)):
        assert a == b, f"pass {k} of the sequence decided otherwise on kept state"


@pytest.mark.parametrize("seed", range(3))
def test_steady_passes_on_the_bench_cluster_decide_as_passes_built_anew(seed):
    """The pass benchmark's busy cluster (bench.pass_scaling's steady passes: a few holding
    jobs ended and the last pass's first starts running, a second later), where backfill
    starts jobs on nodes whose release lists are kept: a pass must not leave its own
    starts in what the next pass finds."""
    snap = build(300, 200, seed)
    forget_kept()
    result = schedule(snap)
    for step in range(8):
        snap = steady_step(snap, result, seed * 100 + step)
        result = schedule(snap)
        again = schedule(snap)  # on what that pass kept
        forget_kept()
        fresh = schedule(snap)
        for r in (result, again):
            assert (r.starts, r.pending, r.timeouts, r.stats) == (
                fresh.starts,
                fresh.pending,
                fresh.timeouts,
                fresh.stats,
            ), f"step {step}"


@pytest.mark.parametrize("block", range(4))
@pytest.mark.parametrize("started", [True, False])
def test_nodes_filled_by_their_own_account_between_passes(block, started):
    """Between two passes some nodes report all their CPUs and memory allocated (views of
    their own, the node order unchanged), and maybe a job started: what backfill kept of
    the earlier holdings and the earlier node side must be looked at again on those nodes."""
    for seed in range(block * 25, block * 25 + 25):
        rng = random.Random(9000 + seed)
        snap = random_snapshot(rng)
        if not snap.nodes or not snap.pending:
            continue
        forget_kept()
        schedule(snap)
        nodes = list(snap.nodes)
        for k in rng.sample(range(len(nodes)), min(3, len(nodes))):
            nodes[k] = dataclasses.replace(nodes[k], alloc_cpus=nodes[k].cpus, alloc_mem=nodes[k].real_memory)
        later = dataclasses.replace(snap, now=snap.now + 5, nodes=tuple(nodes))
        if started:
            came = new_holding(rng, 10**5, snap)
            running = (*snap.running, came)
            change = RunningChange(snap.running, running, (), (came,))
            later = dataclasses.replace(later, running=running, running_since=change)
        kept = decisions(later)
        forget_kept()
        assert kept == decisions(later), seed
