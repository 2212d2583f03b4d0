"""Backfill's start-now search (``Timeline._start_now``, #18: a pass's work not grown by
every busy node).

A job that can start now is found by a scan of the nodes' free CPUs and memory alone,
skipping the nodes already known full; the release lists of busy nodes are walked only
for the jobs that must wait.  Checked here: that answer stays the one the definition gives
(the brute force of ``test_backfill_plan_oracle``) over sequences of plans on one timeline,
started as the scheduler starts them (resources taken, releases added, reservations made),
so the remembered prefix of full nodes is exercised; and that a start-now plan reads no
busy node's release list.
"""

from __future__ import annotations

import random

from cluster.core.backfill import INF, Timeline
from tests.cluster.test_backfill_plan_oracle import NOW, Case, oracle, random_case


def _ask(rng: random.Random, size: int, candidates: list[int]) -> dict:
    required: list[int] = []
    if rng.random() < 0.15 and len(candidates) > 2:
        required = rng.sample(candidates, 1)
    excluded: frozenset[int] = frozenset()
    if rng.random() < 0.15:
        excluded = frozenset(rng.sample(range(size), 1)) - set(required)
    ask = {
        "count": rng.randint(max(1, len(required)), min(size, 3)),
        "cpus": rng.choice((1, 1, 2, 4)),
        "mem": rng.choice((0, 200, 1000)),
        "whole_mem": rng.random() < 0.1,
        "whole_node": rng.random() < 0.1,
        "duration": rng.choice((60.0, 300.0, 900.0, INF)),
        "required": required,
        "excluded": excluded,
        "all_now": rng.random() < 0.1,
    }
    if ask["whole_mem"]:
        ask["mem"] = 0
    return ask


def test_a_sequence_of_plans_on_one_timeline_is_the_definition_s():
    rng = random.Random(1818)
    immediate = planned = 0
    for _ in range(600):
        case = random_case(rng)
        size = len(case.cap_cpus)
        line = Timeline(
            now=NOW,
            window=case.window,
            free_cpus=list(case.free_cpus),
            free_mem=list(case.free_mem),
            cap_mem=case.cap_mem,
            cap_cpus=case.cap_cpus,
        )
        line.load_releases(case.releases)
        for nodes, start, duration in case.reservations:
            line.reserve(nodes, start, duration)
        # The candidate lists are the partitions' orders: the same objects job after job.
        orders = [rng.sample(range(size), rng.randint(1, size)) for _ in range(2)]
        for _ in range(8):
            candidates = rng.choice(orders)
            ask = _ask(rng, size, candidates)
            now_case = Case(
                case.cap_cpus,
                case.cap_mem,
                list(line.free_cpus),
                list(line.free_mem),
                case.releases,
                case.reservations,
                case.window,
            )
            got = line.plan(candidates, **ask)
            assert got == oracle(now_case, candidates, ask), (now_case, candidates, ask)
            if got is None:
                continue
            if got.immediate:
                immediate += 1
                # Started as the scheduler starts it: its share taken now, given back at its end.
                for i in got.nodes[: ask["count"]]:
                    cpus = ask["cpus"] if not ask["whole_node"] else case.cap_cpus[i]
                    take_c = min(line.free_cpus[i], cpus)
                    take_m = min(line.free_mem[i], ask["mem"])
                    line.free_cpus[i] -= take_c
                    line.free_mem[i] -= take_m
                    end = NOW + ask["duration"]
                    line.add_release(i, end, take_c, take_m)
                    case.releases.append((i, end, take_c, take_m))
            else:
                planned += 1
                line.reserve(got.nodes, got.start, ask["duration"])
                case.reservations.append((list(got.nodes), got.start, ask["duration"]))
    assert immediate > 300 and planned > 100, (immediate, planned)


class _CountingReleases(dict):
    """The timeline's release lists, counting the nodes whose list a plan looked up."""

    looked: int = 0

    def get(self, key, default=None):
        self.looked += 1
        return super().get(key, default)


def test_a_start_now_plan_reads_no_busy_node_s_releases():
    size = 1000
    free_cpus = [0] * (size - 1) + [8]  # every node full but the last
    line = Timeline(
        now=NOW,
        window=3600,
        free_cpus=free_cpus,
        free_mem=[1000] * size,
        cap_mem=[1000] * size,
        cap_cpus=[8] * size,
    )
    line.load_releases((i, NOW + 60 * (i % 30 + 1), 8, 0) for i in range(size - 1))
    counting = _CountingReleases(line.releases)
    line.releases = counting
    order = list(range(size))
    plan = line.plan(order, count=1, cpus=4, mem=100, whole_mem=False, duration=600.0)
    assert plan is not None and plan.immediate and plan.nodes == (size - 1,)
    assert counting.looked == 0
    # A job that must wait still gets its planned start from the releases.
    later = line.plan(order, count=2, cpus=8, mem=100, whole_mem=False, duration=600.0)
    assert later is not None and not later.immediate and later.start == NOW + 60
    assert counting.looked > 0
