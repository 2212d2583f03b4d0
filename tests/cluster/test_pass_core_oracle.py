"""The pass core's per-node work on plain ints gives what the enum operations gave.

``is_usable`` and ``flag_names`` test flags with int masks and bases by their value, and
the core's pass builds its node arrays (usable, free, the main scheduler's copies) in
one loop over plain values: each is compared here with the computation it replaced,
kept in this file, on every base state and random flag masks and on random clusters
(fixed seeds).
"""

from __future__ import annotations

import random

import pytest

from cluster.core import scheduler, states
from cluster.core.states import NodeBase, NodeFlag

ALL_FLAGS = [f for f in NodeFlag if f]


def old_is_usable(base, flags):
    base = NodeBase(base)
    if base in (NodeBase.DOWN, NodeBase.FUTURE):
        return False
    unusable = NodeFlag.DRAIN | NodeFlag.NOT_RESPONDING | NodeFlag.POWER_DOWN | NodeFlag.POWERING_DOWN
    return not flags & unusable


def old_flag_names(flags, base=None):
    names = []
    for f in states._LONG_FLAG_ORDER:
        if flags & f:
            if f is NodeFlag.DYNAMIC:
                names.append("DYNAMIC_FUTURE" if base == NodeBase.FUTURE else "DYNAMIC_NORM")
            else:
                names.append(str(f.name))
    return names


def _masks(rng, count):
    out = [0, *(int(f) for f in ALL_FLAGS)]
    out += [sum(int(f) for f in ALL_FLAGS if rng.random() < p) for p in (0.1, 0.3, 0.6) for _ in range(count)]
    return out


def test_is_usable_and_flag_names_as_before():
    rng = random.Random(7)
    for flags in _masks(rng, 400):
        for base in [*NodeBase, *(b.value for b in NodeBase)]:
            assert states.is_usable(base, flags) == old_is_usable(base, flags), (base, flags)
            assert states.is_usable(base, NodeFlag(flags)) == old_is_usable(base, NodeFlag(flags))
            assert states.flag_names(flags, base) == old_flag_names(flags, base), (base, flags)
        assert states.flag_names(flags) == old_flag_names(flags)


def test_an_unknown_base_is_refused_as_before():
    with pytest.raises(ValueError, match="NodeBase"):
        states.is_usable("BOGUS", 0)
    node = scheduler.NodeView(index=0, name="n0", cpus=4, real_memory=100, weight=1, base="BOGUS", flags=0)
    snap = scheduler.Snapshot(now=0.0, nodes=(node,), partitions={}, pending=(), running=())
    with pytest.raises(ValueError, match="NodeBase"):
        scheduler.schedule(snap)


def old_arrays(snap):
    """The node arrays as _Pass.__init__ built them before (one enum call per node)."""
    size = max((n.index for n in snap.nodes), default=-1) + 1
    cap_cpus, cap_mem, usable = [0] * size, [0] * size, [False] * size
    for n in snap.nodes:
        cap_cpus[n.index] = n.cpus
        cap_mem[n.index] = n.real_memory
        usable[n.index] = old_is_usable(NodeBase(n.base), n.flags)
    used_cpus, used_mem = [0] * size, [0] * size
    for job in snap.running:
        k = len(job.node_indices)
        cpus = job.alloc_cpus
        if len(cpus) != k:
            cpus = [cap_cpus[i] if 0 <= i < size else 0 for i in job.node_indices]
        mems = job.alloc_mem if len(job.alloc_mem) == k else [0] * k
        for i, c, m in zip(job.node_indices, cpus, mems, strict=True):
            if 0 <= i < size:
                used_cpus[i] += c
                used_mem[i] += m
    for n in snap.nodes:
        used_cpus[n.index] = max(used_cpus[n.index], n.alloc_cpus)
        used_mem[n.index] = max(used_mem[n.index], n.alloc_mem)
    free_cpus = [max(0, c - u) for c, u in zip(cap_cpus, used_cpus, strict=True)]
    free_mem = [max(0, m - u) for m, u in zip(cap_mem, used_mem, strict=True)]
    return {
        "cap_cpus": cap_cpus,
        "cap_mem": cap_mem,
        "usable": usable,
        "free_cpus": free_cpus,
        "free_mem": free_mem,
        "main_cpus": [f if ok else -1 for f, ok in zip(free_cpus, usable, strict=True)],
        "main_mem": [f if ok else -1 for f, ok in zip(free_mem, usable, strict=True)],
        "index_of": {n.name: n.index for n in snap.nodes},
    }


def random_snapshot(rng):
    count = rng.randrange(1, 60)
    indices = rng.sample(range(count + rng.randrange(0, 10)), count)  # gaps: indices need not be dense
    masks = _masks(rng, 10)
    nodes = tuple(
        scheduler.NodeView(
            index=i,
            name=f"n{i:03d}",
            cpus=rng.choice([4, 16, 64]),
            real_memory=rng.choice([1000, 64000]),
            weight=1,
            base=rng.choice(list(NodeBase)).value,
            flags=rng.choice(masks),
            alloc_cpus=rng.choice([0, 0, 2, 70]),
            alloc_mem=rng.choice([0, 0, 500]),
        )
        for i in indices
    )
    running = []
    for job_id in range(1, rng.randrange(0, 40)):
        at = tuple(rng.sample(indices, rng.randrange(1, min(4, count) + 1)))
        if rng.random() < 0.1:
            at += (max(indices) + 5,)  # a node no longer in the snapshot
        k = len(at)
        running.append(
            scheduler.JobView(
                job_id=job_id,
                partition="p",
                user="u",
                submit_time=0.0,
                state="RUNNING",
                node_indices=at,
                # Sometimes not given per node: the whole node, as a holding job's default.
                alloc_cpus=tuple(rng.choice([1, 2, 8]) for _ in range(k)) if rng.random() < 0.8 else (),
                alloc_mem=tuple(rng.choice([0, 100, 4000]) for _ in range(k)) if rng.random() < 0.8 else (),
            )
        )
    parts = {"p": scheduler.PartitionView(name="p", node_indices=tuple(sorted(indices)))}
    return scheduler.Snapshot(now=0.0, nodes=nodes, partitions=parts, pending=(), running=tuple(running))


@pytest.mark.parametrize("seed", range(20))
def test_the_pass_node_arrays_as_before(seed):
    rng = random.Random(seed)
    for _ in range(10):
        snap = random_snapshot(rng)
        got = scheduler._Pass(snap, (), scheduler.node_order_key)
        for name, want in old_arrays(snap).items():
            assert getattr(got, name) == want, name


def old_timeouts(snap):
    """The pass's timeouts as computed before (the limit resolved for every job)."""
    out = []
    for job in snap.running:
        if job.state != scheduler.JobState.RUNNING or job.start_time is None:
            continue
        limit = scheduler.resolve_time_limit(job, snap.partitions.get(job.partition))
        if limit is not None and job.start_time + job.paused + limit * 60 <= snap.now:
            out.append(scheduler.Timeout(job.job_id))
    return tuple(sorted(out, key=lambda t: t.job_id))


@pytest.mark.parametrize("seed", range(10))
def test_timeouts_as_before(seed):
    rng = random.Random(seed)
    parts = {
        "a": scheduler.PartitionView(name="a", node_indices=(0,), max_time=60, default_time=10),
        "b": scheduler.PartitionView(name="b", node_indices=(0,), max_time=30),
        "c": scheduler.PartitionView(name="c", node_indices=(0,)),
    }
    running = tuple(
        scheduler.JobView(
            job_id=job_id,
            partition=rng.choice(["a", "b", "c", "gone"]),
            user="u",
            submit_time=0.0,
            state=rng.choice(["RUNNING", "RUNNING", "SUSPENDED", "COMPLETING", "STOPPED"]),
            start_time=rng.choice([None, 0.0, 600.0, 1800.0]),
            paused=rng.choice([0, 0, 300]),
            time_limit=rng.choice([None, None, 0, 5, 20, 45]),
        )
        for job_id in rng.sample(range(1, 500), 200)
    )
    node = scheduler.NodeView(index=0, name="n0", cpus=4, real_memory=100, weight=1, base="IDLE", flags=0)
    for now in (0.0, 1200.0, 2400.0, 4000.0):
        snap = scheduler.Snapshot(now=now, nodes=(node,), partitions=parts, pending=(), running=running)
        assert scheduler.schedule(snap).timeouts == old_timeouts(snap)
