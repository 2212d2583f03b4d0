"""The active features a (re)configure leaves (power.services._features_at_load), now read
as five columns instead of node instances (#18: at 10,000 nodes the instances were most of
it), against the instance-by-instance computation it replaced, on random nodes (features,
active features, powered down or not) and random helpers.conf lines, and without one.

A read that took the wrong column, lost the powered-down flag or wrote a node whose text
did not change (or missed one that did) fails here.
"""

from __future__ import annotations

import random

import pytest

from cluster.core.states import NodeFlag
from cluster.models import Node
from power import services
from power.core.features import HelperLine, NodeFeatures, active_at_load, join_features, split_features

pytestmark = pytest.mark.django_db

FEATURES = ["a", "b", "c", "gpu", "fast"]


def _expected(features: NodeFeatures | None) -> dict[str, str]:
    """The computation as it was: every node's instance."""
    out = {}
    for node in Node.objects.all():
        available = split_features(node.features)
        if features is None:
            active = available
        else:
            active = active_at_load(
                available,
                split_features(node.active_features),
                features.changeable(node.name),
                powered_down=bool(node.flags & NodeFlag.POWERED_DOWN),
            )
        out[node.name] = join_features(active, node.features)
    return out


def _some(rng: random.Random) -> str:
    return ",".join(rng.sample(FEATURES, rng.randint(0, 3)))


@pytest.mark.parametrize("seed", range(6))
def test_active_features_at_load_as_before(seed):
    rng = random.Random(seed)
    names = [f"n{i}" for i in range(rng.randint(1, 30))]
    for name in names:
        Node.objects.create(
            name=name,
            features=_some(rng),
            active_features=_some(rng),
            flags=rng.choice([0, 0, int(NodeFlag.POWERED_DOWN), int(NodeFlag.POWERED_DOWN | NodeFlag.DRAIN)]),
        )
    lines = tuple(
        HelperLine(
            nodes=None if rng.random() < 0.3 else frozenset(rng.sample(names, rng.randint(1, len(names)))),
            features=frozenset(rng.sample(FEATURES, rng.randint(1, 3))),
            helper="/bin/true",
            source=f"helpers.conf:{k + 1}",
        )
        for k in range(rng.randint(0, 3))
    )
    features = None if seed % 3 == 0 else NodeFeatures(lines=lines)
    expected = _expected(features)
    before = dict(Node.objects.values_list("name", "active_features"))
    services._features_at_load(features)
    after = dict(Node.objects.values_list("name", "active_features"))
    assert after == expected
    assert after != before or seed % 3 != 0  # something changed (every seed without helpers)
