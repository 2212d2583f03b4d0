"""The node state words of the simulator's log, kept by (state, flags)
(simulator.observe.long_state, #18) against ``sinfo_long`` computed each time, on random
states and flag sets asked for in random order, each several times."""

from __future__ import annotations

import random

import pytest

from cluster.core.states import NodeBase, NodeFlag, sinfo_long
from simulator.observe import long_state


@pytest.mark.parametrize("seed", range(4))
def test_kept_state_words_equal_sinfo_long(seed):
    rng = random.Random(seed)
    flags = list(NodeFlag)
    for _ in range(2000):
        base = rng.choice(list(NodeBase)).value
        value = 0
        for flag in rng.sample(flags, rng.randint(0, 4)):
            value |= int(flag)
        assert long_state(base, value) == sinfo_long(base, value)
