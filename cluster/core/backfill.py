"""Backfill planning: a timeline of node releases and whole-node reservations.

Pure module (no Django, no clock of its own).  After the main scheduling loop of a pass,
``cluster.core.scheduler`` hands the pending jobs that are waiting for resources to a
:class:`Timeline`, in priority order, the way Slurm's sched/backfill plugin walks its queue:

* every job that holds resources releases them at its expected end (start + TimeLimit;
  a job without a time limit never does, a job already past its limit or COMPLETING is
  treated as ending now);
* a job that can start now without touching any reservation starts ("backfilled");
* a job that cannot gets a *reservation*: the earliest time at which enough nodes have the
  CPUs and memory it needs free, given the releases, and are not reserved by a job of
  higher priority for any part of its run.  That is conservative backfill: no job tested
  later may delay any job tested earlier.

As in Slurm's node_space_map, reservations hold whole nodes for their window
(``[start, start + time limit)``), while releases are counted per CPU and MB, so a job that
needs half a node can be planned where half a node frees up.  Reservations further than
``window`` seconds ahead are not made (Slurm's ``bf_window``).

Times are float seconds on the snapshot's clock; ``math.inf`` means never / unlimited.
"""

from __future__ import annotations

import math
from bisect import insort
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

INF = math.inf


@dataclass(frozen=True, slots=True)
class Plan:
    """Where and when a job could run.

    ``immediate``: it can start right away on ``nodes``.  Otherwise ``start`` may still equal
    ``now`` when the resources are held by jobs ending now (COMPLETING, past their limit):
    a reservation, not a start.
    """

    start: float
    nodes: tuple[int, ...]  # in the caller's preference order
    immediate: bool = False


class Timeline:
    """Per-node free resources now, future releases, and reservations (one backfill pass).

    ``free_cpus``/``free_mem``/``cap_mem`` are indexed by node index and shared with the caller,
    which updates them when it starts a job (and calls :meth:`add_release`).
    """

    __slots__ = ("cap_cpus", "cap_mem", "free_cpus", "free_mem", "horizon", "now", "releases", "reservations")

    def __init__(
        self,
        *,
        now: float,
        window: float,
        free_cpus: list[int],
        free_mem: list[int],
        cap_mem: list[int],
        cap_cpus: list[int] | None = None,
    ) -> None:
        self.now = now
        self.cap_cpus = cap_cpus  # needed only to plan whole nodes (``plan(whole_node=True)``)
        self.horizon = now + window
        self.free_cpus = free_cpus
        self.free_mem = free_mem
        self.cap_mem = cap_mem
        # node index -> sorted [(end, cpus, mem)] released when a holding job ends
        self.releases: dict[int, list[tuple[float, int, int]]] = {}
        # node index -> sorted [(start, end)] whole-node reservations of higher-priority jobs
        self.reservations: dict[int, list[tuple[float, float]]] = {}

    def add_release(self, node: int, end: float, cpus: int, mem: int) -> None:
        if end == INF:
            return  # never released: nothing to plan with
        insort(self.releases.setdefault(node, []), (max(end, self.now), cpus, mem))

    def load_releases(self, releases: Iterable[tuple[int, float, int, int]]) -> None:
        """Bulk :meth:`add_release` of ``(node, end, cpus, mem)``: one sort per node."""
        now = self.now
        table = self.releases
        for node, end, cpus, mem in releases:
            if end != INF:
                table.setdefault(node, []).append((max(end, now), cpus, mem))
        for events in table.values():
            events.sort()

    def reserve(self, nodes: Iterable[int], start: float, duration: float) -> None:
        for i in nodes:
            insort(self.reservations.setdefault(i, []), (start, start + duration))

    def _ready(self, i: int, cpus: int, mem: int) -> float:
        """Earliest time node ``i`` has ``cpus`` and ``mem`` free (ignoring reservations)."""
        fc = self.free_cpus[i]
        fm = self.free_mem[i]
        rel = self.releases.get(i)
        if rel is None:
            return INF
        for end, dc, dm in rel:
            fc += dc
            fm += dm
            if fc >= cpus and fm >= mem:
                return end
        return INF

    def plan(
        self,
        candidates: Sequence[int],
        *,
        count: int,
        cpus: int,
        mem: int,
        whole_mem: bool,
        duration: float,
        whole_node: bool = False,
        required: Sequence[int] = (),
        excluded: frozenset[int] | set[int] = frozenset(),
        all_now: bool = False,
    ) -> Plan | None:
        """The earliest start for a job on ``count`` of ``candidates`` (preference order).

        ``cpus``/``mem`` are needed on every node (``whole_mem``: all of the node's memory,
        Slurm's ``--mem=0``; ``whole_node``: every CPU and all the memory, ``--exclusive``).
        ``required`` nodes must be part of the plan.  With ``all_now``
        a start-now plan lists every node that could take the job now (for node-selection
        plugins), not just the first ``count``.  None when no start fits within the window.
        """
        now = self.now
        horizon = self.horizon
        fc = self.free_cpus
        fm = self.free_mem
        cap = self.cap_mem
        resv = self.reservations
        releases = self.releases
        ready_of: dict[int, float] = {}
        now_ok: list[int] = []
        starts: list[float] = []  # left ends of every node's feasible start intervals
        ends: list[float] = []  # right ends (inclusive) of the bounded ones
        end_now = now + duration
        capc = self.cap_cpus if whole_node else None
        need_cpus = cpus
        # Without required nodes or ``all_now`` a start-now plan is the first ``count``
        # nodes that fit now, and it wins over any reservation: once they are found the
        # rest of the candidates cannot change the plan, so the scan stops there (a pass
        # tests up to bf_max_job_test jobs, each over every node of its partition).
        stop_at = count if not required and not all_now else 0
        for i in candidates:
            if excluded and i in excluded:
                continue
            need_mem = cap[i] if whole_mem else mem
            if capc is not None:
                # A node smaller than one share never fits (needs exceed what it frees).
                need_cpus = max(capc[i], cpus)
                need_mem = max(cap[i], mem)
            if fc[i] >= need_cpus and fm[i] >= need_mem:
                ready = now
                fits_now = True
            else:
                # Inline _ready(): this loop is the backfill's hot path.
                rel = releases.get(i)
                if rel is None:
                    continue
                free_c = fc[i]
                free_m = fm[i]
                ready = INF
                for end, dc, dm in rel:
                    free_c += dc
                    free_m += dm
                    if free_c >= need_cpus and free_m >= need_mem:
                        ready = end
                        break
                if ready > horizon:
                    continue
                fits_now = False
            ready_of[i] = ready
            rl = resv.get(i)
            if not rl:
                if fits_now:
                    now_ok.append(i)
                    if len(now_ok) == stop_at:
                        return Plan(now, tuple(now_ok), immediate=True)
                starts.append(ready)
                continue
            if fits_now and not any(rs < end_now and re > now for rs, re in rl):
                now_ok.append(i)
                if len(now_ok) == stop_at:
                    return Plan(now, tuple(now_ok), immediate=True)
            # Feasible starts T on this node: T >= ready and [T, T+duration) clear of every
            # reservation, i.e. T <= rs - duration or T >= re for each.
            cur = ready
            for rs, re in rl:
                if re <= cur:
                    continue
                if rs - duration >= cur:
                    starts.append(cur)
                    ends.append(rs - duration)
                cur = re
                if cur > horizon:
                    break
            if cur <= horizon:
                starts.append(cur)

        req_set = set(required)
        if len(now_ok) >= count and req_set.issubset(now_ok):
            if all_now:
                return Plan(now, tuple(now_ok), immediate=True)
            return Plan(now, _pick(now_ok, required, count), immediate=True)
        if len(starts) < count:
            return None
        start = self._earliest(
            starts=starts, ends=ends, count=count, required=required, ready_of=ready_of, duration=duration
        )
        if start is None:
            return None
        if required:
            chosen = [i for i in ready_of if self._free_at(i, start, duration, ready_of[i])]
            return Plan(start, _pick(chosen, required, count))
        # The first ``count`` free at ``start`` in preference order: stop once found.
        first: list[int] = []
        for i, ready in ready_of.items():
            if self._free_at(i, start, duration, ready):
                first.append(i)
                if len(first) == count:
                    break
        return Plan(start, tuple(first))

    def _earliest(
        self,
        *,
        starts: list[float],
        ends: list[float],
        count: int,
        required: Sequence[int],
        ready_of: dict[int, float],
        duration: float,
    ) -> float | None:
        """Sweep the intervals: the first start time covered by ``count`` of them."""
        starts.sort()
        ends.sort()
        j = 0
        n_ends = len(ends)
        n_starts = len(starts)
        for k in range(count - 1, n_starts):
            t = starts[k]
            if k + 1 < n_starts and starts[k + 1] == t:
                continue  # count every interval opening at t first
            while j < n_ends and ends[j] < t:
                j += 1
            if k + 1 - j < count:
                continue
            if required and not all(
                r in ready_of and self._free_at(r, t, duration, ready_of[r]) for r in required
            ):
                continue
            return t
        return None

    def _free_at(self, i: int, t: float, duration: float, ready: float) -> bool:
        if ready > t:
            return False
        rl = self.reservations.get(i)
        if not rl:
            return True
        end = t + duration
        return not any(rs < end and re > t for rs, re in rl)


def _pick(nodes: Sequence[int], required: Sequence[int], count: int) -> tuple[int, ...]:
    """Required nodes first, then the first others in preference order."""
    if not required:
        return tuple(nodes[:count])
    req = set(required)
    others = [i for i in nodes if i not in req]
    return tuple([i for i in nodes if i in req] + others[: count - len(req)])
