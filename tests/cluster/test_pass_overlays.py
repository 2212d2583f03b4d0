"""The pass core's sorted structures kept as a shared root under a small overlay (#18,
session 18): ``backfill._Times`` (backfill's ready times) and ``scheduler._Marks`` (the
holding jobs' expected ends), against plain sorted lists and dicts on random changes,
derivations and merges.  A steady pass changes a few entries of structures as large as
the cluster (62,000 marks at 10,000 nodes): these copy and shift only their overlay."""

from __future__ import annotations

import random
from bisect import bisect_left, insort

import pytest

from cluster.core.backfill import INF, _Times
from cluster.core.scheduler import _Marks


def times_as_plain(times: _Times) -> dict[int, float]:
    return {i: t for t, i in times.in_order()}


@pytest.mark.parametrize("seed", range(20))
def test_times_read_as_the_dict_they_stand_for(seed):
    rng = random.Random(seed)
    nodes = range(rng.randrange(1, 120))
    plain = {i: rng.choice((-INF, 0.0, float(rng.randrange(50)))) for i in nodes if rng.random() < 0.8}
    times = _Times(sorted((t, i) for i, t in plain.items()), dict(plain))
    for _ in range(40):
        horizon = rng.choice((INF, float(rng.randrange(60))))
        if horizon < times.horizon:
            plain = {i: t for i, t in plain.items() if t <= horizon}
        else:
            horizon = times.horizon
        times = times.derive(horizon)
        for _ in range(rng.randrange(0, 12)):
            i = rng.choice(nodes)
            t = rng.choice((None, -INF, float(rng.randrange(70))))
            if rng.random() < 0.3:
                times.drop(i)
                t = None
            else:
                times.set(i, t)
            if t is None or t > horizon:
                plain.pop(i, None)
            else:
                plain[i] = t
        assert times.size == len(plain)
        assert list(times.in_order()) == sorted((t, i) for i, t in plain.items())
        assert all(times.get(i) == plain.get(i) for i in nodes)
        if times.heavy():
            times = times.compacted()
            assert times_as_plain(times) == plain
    # Derived copies share the root, not copy it, until merged.
    assert times.derive(times.horizon).root is times.root


@pytest.mark.parametrize("seed", range(20))
def test_marks_read_as_the_sorted_list_they_stand_for(seed):
    rng = random.Random(100 + seed)
    plain = sorted(
        (float(rng.randrange(30)), rng.randrange(5), (rng.randrange(4),))
        for _ in range(rng.randrange(0, 150))
    )
    marks = _Marks(plain.copy())
    for _ in range(60):
        was_root = marks.root
        marks = marks.derived()
        if marks.root is not was_root:
            assert sorted(marks.root) == plain  # merged
        for _ in range(rng.randrange(0, 8)):
            mark = (float(rng.randrange(30)), rng.randrange(5), (rng.randrange(4),))
            if rng.random() < 0.5:
                marks.add(mark)
                insort(plain, mark)
            else:
                k = bisect_left(plain, mark)
                present = k < len(plain) and plain[k] == mark
                assert marks.remove(mark) == present
                if present:
                    del plain[k]
        for bound in ((float(rng.randrange(32)),), (float(rng.randrange(32)), INF)):
            assert sorted(marks.before(bound)) == plain[: bisect_left(plain, bound)]
