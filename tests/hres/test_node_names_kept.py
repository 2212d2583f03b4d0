"""The HRES plugin's node names kept between passes (``UsageMemo.node_names``, #18: two
walks of every node view a pass, at 10,000 nodes, though a pass's views change at every
start and end and their names almost never).

An oracle: random sequences of node tuples (views replaced with the same names, nodes
renamed, added, removed, moved), the kept names and index equal those made afresh.  And a
count: a pass on views replaced but not renamed makes no new index; a rename does.
"""

from __future__ import annotations

import dataclasses
import random

from cluster.core.scheduler import NodeView
from cluster.core.states import NodeBase
from hres.core.plugin import HresPlugin, UsageMemo, node_names
from tests.hres.test_plugin import NOW, snap


def _nodes(names) -> tuple[NodeView, ...]:
    return tuple(NodeView(i, name, 4, 8000, 1, NodeBase.IDLE, 0) for i, name in enumerate(names))


def _next(rng: random.Random, nodes: tuple[NodeView, ...]) -> tuple[NodeView, ...]:
    out = list(nodes)
    step = rng.randrange(6)
    if step == 0 and out:
        k = rng.randrange(len(out))
        out[k] = dataclasses.replace(out[k], name=f"r{rng.randrange(1000)}")
    elif step == 1:
        out.append(NodeView(len(out), f"n{rng.randrange(1000)}", 4, 8000, 1, NodeBase.IDLE, 0))
    elif step == 2 and out:
        out.pop()
    elif step == 3 and len(out) > 1:
        k = rng.randrange(len(out))
        out[k] = dataclasses.replace(out[k], index=out[k].index + 7)  # a gap in the indices
    else:
        for _ in range(rng.randrange(1, 4)):
            if out:
                k = rng.randrange(len(out))
                out[k] = dataclasses.replace(out[k], alloc_cpus=rng.randrange(4))
    return tuple(out)


def test_kept_names_equal_names_made_afresh():
    for seed in range(20):
        rng = random.Random(seed)
        memo = UsageMemo()
        nodes = _nodes([f"n{i}" for i in range(rng.randrange(1, 12))])
        for _ in range(40):
            assert memo.node_names(nodes) == node_names(nodes), seed
            nodes = _next(rng, nodes) if rng.random() < 0.8 else nodes


def test_a_pass_on_views_not_renamed_makes_no_new_index(spec_state, nodes):
    memo = UsageMemo()
    first = snap(nodes, [])
    plugin = HresPlugin(spec_state, memo=memo)
    plugin.begin_pass(first)
    index = plugin._index
    views = list(first.nodes)
    views[3] = dataclasses.replace(views[3], alloc_cpus=2)
    later = dataclasses.replace(first, nodes=tuple(views), now=NOW + 1)
    again = HresPlugin(spec_state, memo=memo)
    again.begin_pass(later)
    assert again._index is index
    views[3] = dataclasses.replace(views[3], name="renamed")
    renamed = dataclasses.replace(first, nodes=tuple(views), now=NOW + 2)
    third = HresPlugin(spec_state, memo=memo)
    third.begin_pass(renamed)
    assert third._index is not index and third._index["renamed"] == 3
    fresh = HresPlugin(spec_state)  # without a memo: made afresh
    fresh.begin_pass(renamed)
    assert fresh._index == third._index and fresh.state == third.state
