"""Backfill's :meth:`Timeline.plan` against a brute-force reading of its contract.

The planner stops scanning candidates once its answer cannot change (the first ``count``
nodes that fit now; the first ``count`` free at the planned start): this checks, on
many random timelines, that the plan is still the one the definition gives, found here
by trying every possible start time on every node.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from cluster.core.backfill import INF, Plan, Timeline

NOW = 1_000.0


@dataclass
class Case:
    cap_cpus: list[int]
    cap_mem: list[int]
    free_cpus: list[int]
    free_mem: list[int]
    releases: list[tuple[int, float, int, int]]
    reservations: list[tuple[list[int], float, float]]
    window: float


def random_case(rng: random.Random) -> Case:
    size = rng.randint(1, 14)
    cap_cpus = [rng.choice((4, 8, 16)) for _ in range(size)]
    cap_mem = [rng.choice((1000, 4000)) for _ in range(size)]
    free_cpus = [rng.randint(0, c) for c in cap_cpus]
    free_mem = [rng.randint(0, m) for m in cap_mem]
    releases = []
    for i in range(size):
        for _ in range(rng.randint(0, 3)):
            end = rng.choice((NOW - 50, NOW, NOW + rng.choice((60, 120, 300, 900)), INF))
            releases.append((i, end, rng.randint(1, cap_cpus[i]), rng.randint(0, cap_mem[i])))
    reservations = []
    for _ in range(rng.randint(0, 4)):
        nodes = rng.sample(range(size), rng.randint(1, size))
        reservations.append((nodes, NOW + rng.choice((0, 60, 200, 600)), rng.choice((60, 300, 1200))))
    return Case(cap_cpus, cap_mem, free_cpus, free_mem, releases, reservations, rng.choice((600, 3600)))


def timeline(case: Case) -> Timeline:
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
    return line


def oracle(case: Case, candidates: list[int], ask: dict) -> Plan | None:
    """The plan by definition: start now on the first nodes that fit now and meet no
    reservation; else the earliest time (within the window) at which enough nodes have
    what the job needs freed and stay clear of every reservation for its whole run."""
    count, duration = ask["count"], ask["duration"]
    required, excluded = ask["required"], ask["excluded"]
    horizon = NOW + case.window
    resv: dict[int, list[tuple[float, float]]] = {}
    for nodes, start, length in case.reservations:
        for i in nodes:
            resv.setdefault(i, []).append((start, start + length))

    def needs(i: int) -> tuple[int, int]:
        cpus = ask["cpus"]
        mem = case.cap_mem[i] if ask["whole_mem"] else ask["mem"]
        if ask["whole_node"]:
            return max(case.cap_cpus[i], cpus), max(case.cap_mem[i], mem)
        return cpus, mem

    def clear(i: int, t: float) -> bool:
        return not any(rs < t + duration and re > t for rs, re in resv.get(i, ()))

    ready: dict[int, float] = {}
    fits_now = []
    for i in candidates:
        if i in excluded:
            continue
        cpus, mem = needs(i)
        if case.free_cpus[i] >= cpus and case.free_mem[i] >= mem:
            ready[i] = NOW
            fits_now.append(i)
            continue
        fc, fm, when = case.free_cpus[i], case.free_mem[i], INF
        for end, dc, dm in sorted((max(e, NOW), c, m) for n, e, c, m in case.releases if n == i and e != INF):
            fc, fm = fc + dc, fm + dm
            if fc >= cpus and fm >= mem:
                when = end
                break
        if when <= horizon:
            ready[i] = when

    def pick(nodes: list[int]) -> tuple[int, ...]:
        others = [i for i in nodes if i not in required]
        return tuple([i for i in nodes if i in required] + others[: count - len(required)])

    now_ok = [i for i in fits_now if clear(i, NOW)]
    if len(now_ok) >= count and set(required) <= set(now_ok):
        return Plan(NOW, tuple(now_ok) if ask["all_now"] else pick(now_ok), immediate=True)
    times = sorted({t for t in ready.values()} | {re for rl in resv.values() for _, re in rl})
    for t in times:
        if t > horizon:
            break
        free = [i for i in ready if ready[i] <= t and clear(i, t)]
        if len(free) >= count and set(required) <= set(free):
            return Plan(t, pick(free))
    return None


def test_plan_is_the_plan_its_definition_gives():
    rng = random.Random(18)
    checked = immediate = planned = 0
    for _ in range(3000):
        case = random_case(rng)
        size = len(case.cap_cpus)
        candidates = rng.sample(range(size), rng.randint(1, size))
        required = []
        if rng.random() < 0.2 and len(candidates) > 2:
            required = rng.sample(candidates, rng.randint(1, 2))
        excluded = frozenset()
        if rng.random() < 0.2:
            excluded = frozenset(rng.sample(range(size), 1)) - set(required)
        ask = {
            "count": rng.randint(max(1, len(required)), min(size, 4)),
            "cpus": rng.choice((1, 2, 4, 8)),
            "mem": rng.choice((0, 500, 2000)),
            "whole_mem": rng.random() < 0.15,
            "whole_node": rng.random() < 0.15,
            "duration": rng.choice((60.0, 300.0, 900.0, INF)),
            "required": required,
            "excluded": excluded,
            "all_now": rng.random() < 0.15,
        }
        if ask["whole_mem"]:
            ask["mem"] = 0  # as the scheduler asks for --mem=0
        got = timeline(case).plan(candidates, **ask)
        assert got == oracle(case, candidates, ask), (case, candidates, ask)
        checked += 1
        immediate += got is not None and got.immediate
        planned += got is not None and not got.immediate
    # The random timelines exercise both kinds of answer, not only "no plan".
    assert immediate > 300 and planned > 300, (checked, immediate, planned)
