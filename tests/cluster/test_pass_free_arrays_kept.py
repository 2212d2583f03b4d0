"""The free arrays the pass core keeps per node side (``_Holdings.free``) stay a few,
however many passes ran on node views that changed.

Every pass after a node view changed runs on a new node side, and its holdings derived
from the last keep that side's arrays (four lists of a value per node).  Carrying every
earlier side's arrays into each derivation made a pass copy as many as passes had run
before it (at 10,000 nodes, 8% of the simulator's first 300 virtual seconds and growing).
Decisions are compared with passes on nothing kept, as tests/cluster/test_pass_kept_delta.py
does for the rest of what is kept.
"""

from __future__ import annotations

import dataclasses

from bench.pass_scaling import steady_step
from bench.scheduler_pass import build
from cluster.core import scheduler
from cluster.core.scheduler import forget_kept, schedule


def with_one_node_changed(snap, step: int):
    nodes = list(snap.nodes)
    k = step % len(nodes)
    nodes[k] = dataclasses.replace(nodes[k])  # a new view of the same node: a new side
    return dataclasses.replace(snap, nodes=tuple(nodes))


def test_free_arrays_kept_for_a_few_sides_only():
    snap = build(300, 200, 3)
    forget_kept()
    result = schedule(snap)
    sequence, kept, kept_sizes = [], [], []
    for step in range(30):
        snap = with_one_node_changed(steady_step(snap, result, 500 + step), step)
        result = schedule(snap)
        sequence.append(snap)
        kept.append(result)
        kept_sizes.append(len(scheduler._last_holdings.free))
    assert max(kept_sizes) <= scheduler._FREE_KEPT, kept_sizes
    for step, (snap, result) in enumerate(zip(sequence, kept, strict=True)):
        forget_kept()
        fresh = schedule(snap)
        assert (result.starts, result.pending, result.timeouts, result.stats) == (
            fresh.starts,
            fresh.pending,
            fresh.timeouts,
            fresh.stats,
        ), f"step {step}"
