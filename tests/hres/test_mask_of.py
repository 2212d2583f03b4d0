"""A bitset of node indices (hres.core.layers.mask_of), built from binary digits past a
few dozen indices: the same int as OR-ing each bit in, the old way, at every size."""

from __future__ import annotations

import dataclasses
import random

import pytest

from hres.core.config import parse_resources
from hres.core.layers import _DIGITS_FROM, build_state, mask_of


def _ored(indices):
    m = 0
    for i in indices:
        m |= 1 << i
    return m


@pytest.mark.parametrize("seed", range(20))
def test_the_same_bitset_as_oring_each_index(seed):
    rng = random.Random(seed)
    for size in (0, 1, _DIGITS_FROM - 1, _DIGITS_FROM, _DIGITS_FROM + 1, 200, 5000):
        indices = [rng.randrange(0, max(1, size * 2)) for _ in range(size)]  # repeats too
        assert mask_of(indices) == _ored(indices)
        assert mask_of(iter(indices)) == _ored(indices)
        assert mask_of(tuple(sorted(indices))) == _ored(indices)
    assert mask_of(range(_DIGITS_FROM, 3 * _DIGITS_FROM)) == _ored(range(_DIGITS_FROM, 3 * _DIGITS_FROM))
    assert mask_of([0] * 100) == 1


FLAT = """---
- resource: flat
  mode: MODE_2
  layers:
    - layer_name: top
      nodes: ["n[0-99]"]
      count: 4
"""


def test_a_states_mask_skips_unknown_names():
    config = parse_resources(FLAT)
    nodes = tuple(f"n{i}" for i in range(100))
    state = build_state(config, nodes)
    names = [*nodes[::3], "other", "n7", *nodes[50:90]]
    assert state.mask(names) == _ored(state.node_index[n] for n in names if n in state.node_index)


class _Counted(dict):
    gets = 0

    def get(self, *args):
        type(self).gets += 1
        return super().get(*args)


def test_the_mask_of_a_kept_tuple_of_names_is_computed_once():
    nodes = tuple(f"n{i}" for i in range(100))
    state = build_state(parse_resources(FLAT), nodes)
    object.__setattr__(state, "node_index", _Counted(state.node_index))
    pool = nodes[10:90]
    first = state.mask(pool)
    assert (_Counted.gets, state.mask(pool), _Counted.gets) == (80, first, 80)
    # Another tuple of the same names, or a list, is looked up again: the same mask.
    assert state.mask(tuple(list(pool))) == first and _Counted.gets == 160
    assert state.mask(list(pool)) == first and _Counted.gets == 240
    # A state copied by dataclasses.replace keeps none of them.
    assert dataclasses.replace(state, nodes=nodes[::-1])._masks == {}
