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

import heapq
import math
from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress, islice, repeat
from operator import itemgetter, le

INF = math.inf

Request = tuple[int, int, bool, bool]  # CPUs and MB a node must have free, whole memory, whole node


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

    __slots__ = (
        "base_ready",
        "cap_cpus",
        "cap_mem",
        "dirty",
        "fitting",
        "free_cpus",
        "free_mem",
        "free_now",
        "horizon",
        "indexes",
        "now",
        "owned",
        "releases",
        "reservations",
        "started_on",
    )

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
        # The nodes whose release list is this timeline's to change; None: all of them.
        # The others are shared with what the pass core keeps for the next pass
        # (borrow_releases), copied before a change.
        self.owned: set[int] | None = None
        # node index -> sorted [(start, end)] whole-node reservations of higher-priority jobs
        self.reservations: dict[int, list[tuple[float, float]]] = {}
        # (id(candidates), request) -> (candidates, a list whose items from the given
        # position on are the candidates that still have one share of the request free
        # now, in order).  The caller only ever takes resources
        # during a backfill pass (it starts jobs, none ends), so a node that lacks a share
        # once never has it again and no later start-now search of that request needs to
        # look at it: each search walks the nodes that fit, not the whole partition.
        self.fitting: dict[tuple, tuple[Sequence[int], list[int], int]] = {}
        # (id(candidates), request) -> the candidates' ready times for that request: see
        # _ReadyIndex.  Kept current by reserve, and by _plan_indexed for add_release.
        self.indexes: dict[tuple, _ReadyIndex] = {}
        # Ready times kept from earlier passes (BaseReady), when the caller has them:
        # (candidates, request) -> the kept times of a state that differs from this
        # timeline's on the ``dirty`` nodes only (those the caller started jobs on before
        # handing the timeline over, and every node of an add_release since), and in
        # ``now``: releases before now not raised to it.
        self.base_ready: Callable[[Sequence[int], Request], BaseReady | None] | None = None
        self.dirty: set[int] = set()
        # As base_ready, for the start-now searches (BaseReady.free_now): may answer None
        # where base_ready would build the times (a cold pass: not worth a build alone).
        self.free_now: Callable[[Sequence[int], Request], BaseReady | None] | None = None
        # Every node of an add_release, in order: an index looks again at those added since
        # it last did when it is next read (_plan_indexed), rather than every index at
        # every start (most indexes are read a few times a pass, or never again).
        self.started_on: list[int] = []

    def add_release(self, node: int, end: float, cpus: int, mem: int) -> None:
        """A job started on ``node`` now, until ``end``: the caller has taken its resources
        from ``free_cpus``/``free_mem`` and calls this for every node it took them on (with
        ``end`` INF too), so that the planned starts of later jobs see the change."""
        if end != INF:
            events = self.releases.get(node)
            if events is None:
                events = self.releases[node] = []
            elif self.owned is not None and node not in self.owned:
                events = self.releases[node] = events.copy()
                self.owned.add(node)
            insort(events, (max(end, self.now), cpus, mem))
        self.dirty.add(node)
        self.started_on.append(node)

    def load_releases(self, releases: Iterable[tuple[int, float, int, int]]) -> None:
        """Bulk :meth:`add_release` of ``(node, end, cpus, mem)``: one sort per node."""
        now = self.now
        table = self.releases
        for node, end, cpus, mem in releases:
            if end != INF:
                table.setdefault(node, []).append((max(end, now), cpus, mem))
        for events in table.values():
            events.sort()

    def take_releases(self, table: dict[int, list[tuple[float, int, int]]]) -> None:
        """:meth:`load_releases` of lists the caller built per node, each ``(end, cpus,
        mem)`` with ``now <= end < INF``: taken over (and sorted) rather than copied."""
        for events in table.values():
            events.sort()
        self.releases = table

    def borrow_releases(self, table: dict[int, list[tuple[float, int, int]]], owned: set[int]) -> None:
        """Releases as :meth:`take_releases` takes them, the lists already sorted: the
        table is taken over, but of its lists only those of ``owned`` nodes; the others
        are read as they are and copied before a change (shared with other passes)."""
        self.releases = table
        self.owned = owned

    def reserve(self, nodes: Iterable[int], start: float, duration: float) -> None:
        nodes = list(nodes)
        resv = self.reservations
        first = list(dict.fromkeys(i for i in nodes if not resv.get(i)))  # reserved from now on
        for i in nodes:
            insort(resv.setdefault(i, []), (start, start + duration))
        for index in self.indexes.values():
            members = index.members
            times = index.times
            for i in nodes:
                if i in members:
                    times.drop(i)
            if first:
                index.reserved_nodes.extend(i for i in first if i in members)

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
        immediate = self._start_now(
            candidates,
            count=count,
            cpus=cpus,
            mem=mem,
            whole_mem=whole_mem,
            duration=duration,
            whole_node=whole_node,
            required=required,
            excluded=excluded,
            all_now=all_now,
        )
        if immediate is not None:
            return immediate
        if not required and not excluded:
            return self._plan_indexed(
                candidates,
                count=count,
                cpus=cpus,
                mem=mem,
                whole_mem=whole_mem,
                duration=duration,
                whole_node=whole_node,
            )
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
            _starts_between(rl, ready, duration, horizon, starts=starts, ends=ends)

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
        return Plan(start, self._first_free(ready_of, ready_of, start, duration, count))

    def ready_at(self, i: int, need_cpus: int, need_mem: int) -> float:
        """When node ``i`` has ``need_cpus`` and ``need_mem`` free: now, the end of the
        release that frees enough, or INF."""
        fc = self.free_cpus[i]
        fm = self.free_mem[i]
        if fc >= need_cpus and fm >= need_mem:
            return self.now
        rel = self.releases.get(i)
        if rel is None:
            return INF
        for end, dc, dm in rel:
            fc += dc
            fm += dm
            if fc >= need_cpus and fm >= need_mem:
                return end
        return INF

    def needs(self, i: int, cpus: int, mem: int, whole_mem: bool, whole_node: bool) -> tuple[int, int]:
        """What node ``i`` must have free for one share of the request (as :meth:`plan`)."""
        cap = self.cap_mem
        need_mem = cap[i] if whole_mem else mem
        if whole_node:
            assert self.cap_cpus is not None
            return max(self.cap_cpus[i], cpus), max(cap[i], mem)
        return cpus, need_mem

    def _plan_indexed(
        self,
        candidates: Sequence[int],
        *,
        count: int,
        cpus: int,
        mem: int,
        whole_mem: bool,
        duration: float,
        whole_node: bool,
    ) -> Plan | None:
        """:meth:`plan` for a job that cannot start now and names no node: the same
        answer, from the candidates' ready times kept sorted across the jobs of the pass
        (most nodes are reserved for nobody, so a ready time is all that counts of them)
        rather than every node's releases walked again for every job."""
        key = (id(candidates), cpus, mem, whole_mem, whole_node)
        index = self.indexes.get(key)
        if index is None or index.candidates is not candidates:
            base = self.base_ready(candidates, key[1:]) if self.base_ready is not None else None
            if base is not None and base.candidates is candidates:
                index = self.indexes[key] = _ReadyIndex.from_base(self, base)
            else:
                index = self.indexes[key] = _ReadyIndex(
                    self, candidates, cpus=cpus, mem=mem, whole_mem=whole_mem, whole_node=whole_node
                )
        log = self.started_on
        if index.seen != len(log):
            for i in index.members.intersection(islice(log, index.seen, None)):
                index.refresh(self, i)
            index.seen = len(log)
        times = index.times
        # The start is at the latest the count-th ready time of the nodes reserved for
        # nobody (free from then on, for good), or now (kept times may be past ones): a
        # reserved node's starts past it change neither the sweep nor the nodes chosen,
        # so none is listed (a reserved node ready later is not looked at, and a long
        # reservation list is read only so far).
        horizon = self.horizon
        if times.size >= count:
            kth = next(islice(times.in_order(), count - 1, None), None)
            if kth is not None and kth[0] < horizon:
                horizon = max(kth[0], self.now)
        # Only the reserved candidates are looked at job by job; the others' ready times
        # are read from the index in place, not copied (a partition's worth per job).
        extra: list[float] = []
        ends: list[float] = []
        reserved_ready: dict[int, float] = {}
        held = index.reserved
        for i in index.reserved_nodes:
            ready = held.get(i)
            if ready is None:
                ready = held[i] = self.ready_at(i, *self.needs(i, cpus, mem, whole_mem, whole_node))
            if ready > horizon:
                continue
            reserved_ready[i] = ready
            _starts_between(self.reservations[i], ready, duration, horizon, starts=extra, ends=ends)
        if times.size + len(extra) < count:
            return None
        starts: Iterable[float] = map(itemgetter(0), times.in_order())
        if extra:
            extra.sort()
            starts = heapq.merge(starts, extra)
        ends.sort()
        start = _earliest_sorted(starts, ends, count)
        if start is None:
            return None
        # An index from kept ready times holds times before now for the nodes ready now
        # (BaseReady): any of them counts as now, and the sweep's answer too.
        start = max(start, self.now)
        if index.position is None:  # a candidate listed twice: walk them in order
            first = self._first_ready(
                candidates, times.get, reserved_ready, start=start, duration=duration, count=count
            )
            return Plan(start, first)
        # The first ``count`` in preference order of the nodes free at ``start``: those
        # reserved for nobody and ready by then (a prefix of the sorted ready times, about
        # ``count`` nodes as ``start`` is the count-th such time) and the reserved ones
        # clear at ``start``, rather than a walk of the candidates up to the last chosen.
        free = []
        for ready, i in times.in_order():
            if ready > start:
                break
            free.append(i)
        place = index.position.__getitem__
        chosen = heapq.nsmallest(count, free, key=place)
        if reserved_ready:
            # Places are unique: a reserved node placed after the count-th free unreserved
            # one cannot be chosen, so only those before it have their reservations
            # checked (most of a partition's reserved nodes, where multi-node jobs hold
            # reservations on many).
            last = place(chosen[-1]) if chosen and len(chosen) == count else None
            clear = [
                i
                for i, ready in reserved_ready.items()
                if (last is None or place(i) < last) and self._free_at(i, start, duration, ready)
            ]
            if clear:
                chosen = heapq.nsmallest(count, chosen + clear, key=place)
        return Plan(start, tuple(chosen))

    def _first_ready(
        self,
        candidates: Sequence[int],
        get: Callable[[int], float | None],
        reserved_ready: Mapping[int, float],
        *,
        start: float,
        duration: float,
        count: int,
    ) -> tuple[int, ...]:
        """:meth:`_first_free` over the two parts of ``_plan_indexed``'s ready times:
        ``get`` of nodes reserved for nobody (free at ``start`` once ready by then),
        ``reserved_ready`` of the reserved ones (their reservations checked too)."""
        first: list[int] = []
        for i in candidates:
            r = get(i)
            if r is None:
                r = reserved_ready.get(i)
                if r is None or not self._free_at(i, start, duration, r):
                    continue
            elif r > start:
                continue
            first.append(i)
            if len(first) == count:
                break
        return tuple(first)

    def _start_now(
        self,
        candidates: Sequence[int],
        *,
        count: int,
        cpus: int,
        mem: int,
        whole_mem: bool,
        duration: float,
        whole_node: bool,
        required: Sequence[int],
        excluded: frozenset[int] | set[int],
        all_now: bool,
    ) -> Plan | None:
        """:meth:`plan`'s answer when the job can start now, else None: the nodes that fit
        now, found by two comparisons per node that had a share free at the last search
        of the same request (``cpus`` at least 1).  Most jobs backfill starts are found here,
        so the release lists and reservations of busy nodes (the whole earliest-start
        search) are walked only for the jobs that must wait."""
        now = self.now
        fc = self.free_cpus
        fm = self.free_mem
        cap = self.cap_mem
        resv = self.reservations
        end_now = now + duration
        capc = self.cap_cpus if whole_node else None
        need_cpus = cpus
        stop_at = count if not required and not all_now else 0
        key = (id(candidates), cpus, mem, whole_mem, whole_node)
        entry = self.fitting.get(key)
        if entry is not None and entry[0] is candidates:
            _, fits, lo = entry
            own = True
        else:
            fits, lo, own = candidates, 0, False
        kept: list[int] = []  # the nodes of ``fits[lo:]`` walked that still have a share free
        now_ok: list[int] = []
        if not own and self.free_now is not None:
            base = self.free_now(candidates, (cpus, mem, whole_mem, whole_node))
            if base is not None and base.candidates is candidates and base.free_now is not None:
                fits, lo, own = base.free_now.copy(), 0, True
        if own:
            walk: Iterator[int] = islice(fits, lo, None)
        else:
            # The first search of the request: a node without ``cpus`` free (every share
            # needs that many) never fits, so the partition's busy nodes are passed over
            # at C speed, here and for the rest of the pass.
            walk = compress(candidates, map(le, repeat(cpus), map(fc.__getitem__, candidates)))
        for k, i in enumerate(walk, lo):
            need_mem = cap[i] if whole_mem else mem
            if capc is not None:
                need_cpus = max(capc[i], cpus)
                need_mem = max(cap[i], mem)
            if fc[i] < need_cpus or fm[i] < need_mem:
                continue  # for the rest of the pass
            kept.append(i)
            if excluded and i in excluded:
                continue
            rl = resv.get(i)
            if rl and any(rs < end_now and re > now for rs, re in rl):
                continue
            now_ok.append(i)
            if len(now_ok) == stop_at:
                if own:
                    # The walked nodes that still fit moved up against the rest, in place:
                    # no copy of the (partition-long) rest per search.
                    lo = k + 1 - len(kept)
                    fits[lo : k + 1] = kept
                    self.fitting[key] = (candidates, fits, lo)
                else:
                    position = _places(candidates)[1]
                    if position is None:  # a candidate listed twice: the rest filtered
                        kept.extend(walk)
                    else:  # the rest copied, at C speed too, the busy nodes left in
                        kept.extend(candidates[position[i] + 1 :])
                    self.fitting[key] = (candidates, kept, 0)
                return Plan(now, tuple(now_ok), immediate=True)
        self.fitting[key] = (candidates, kept, 0)
        if len(now_ok) >= count and set(required).issubset(now_ok):
            if all_now:
                return Plan(now, tuple(now_ok), immediate=True)
            return Plan(now, _pick(now_ok, required, count), immediate=True)
        return None

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

    def _first_free(
        self, order: Iterable[int], ready_of: Mapping[int, float], start: float, duration: float, count: int
    ) -> tuple[int, ...]:
        """The first ``count`` nodes of ``order`` (preference order) free at ``start``."""
        first: list[int] = []
        for i in order:
            ready = ready_of.get(i)
            if ready is not None and self._free_at(i, start, duration, ready):
                first.append(i)
                if len(first) == count:
                    break
        return tuple(first)

    def _free_at(self, i: int, t: float, duration: float, ready: float) -> bool:
        if ready > t:
            return False
        rl = self.reservations.get(i)
        if not rl:
            return True
        end = t + duration
        return not any(rs < end and re > t for rs, re in rl)


def _starts_between(
    reservations: Sequence[tuple[float, float]],
    ready: float,
    duration: float,
    horizon: float,
    *,
    starts: list[float],
    ends: list[float],
) -> None:
    """The feasible starts T on a reserved node, added to ``starts``/``ends``: T >= ready
    and [T, T+duration) clear of every reservation, i.e. T <= rs - duration or T >= re."""
    cur = ready
    for rs, re in reservations:
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


def _earliest_sorted(starts: Iterable[float], ends: Sequence[float], count: int) -> float | None:
    """:meth:`Timeline._earliest` without required nodes, on ``starts`` already in order
    (read lazily: the sweep mostly stops within the first ``count`` or so) and ``ends``
    sorted: the first start time covered by ``count`` intervals."""
    j = 0
    n_ends = len(ends)
    seen = 0
    it = iter(starts)
    t = next(it, None)
    while t is not None:
        seen += 1
        following = next(it, None)
        if following == t:
            t = following
            continue  # count every interval opening at t first
        if seen >= count:
            while j < n_ends and ends[j] < t:
                j += 1
            if seen - j >= count:
                return t
        t = following
    return None


def _pick(nodes: Sequence[int], required: Sequence[int], count: int) -> tuple[int, ...]:
    """Required nodes first, then the first others in preference order."""
    if not required:
        return tuple(nodes[:count])
    req = set(required)
    others = [i for i in nodes if i not in req]
    return tuple([i for i in nodes if i in req] + others[: count - len(req)])


# id(candidates) -> (candidates, their set, node -> its place in the preference order or
# None if a node is listed twice).  The pass core keeps its candidate lists (a partition's
# usable nodes by allocation order) from pass to pass while the nodes stay as they were,
# so most passes find them here instead of walking whole partitions to build them again.
# A candidate list is never changed once planned with (the core's are kept unchanged).
_PLACES: dict[int, tuple[Sequence[int], frozenset[int], dict[int, int] | None]] = {}


def _places(candidates: Sequence[int]) -> tuple[frozenset[int], dict[int, int] | None]:
    got = _PLACES.get(id(candidates))
    if got is not None and got[0] is candidates:
        return got[1], got[2]
    members = frozenset(candidates)
    position: dict[int, int] | None = {i: k for k, i in enumerate(candidates)}
    if len(position) != len(candidates):
        position = None
    if len(_PLACES) >= 64:
        _PLACES.clear()
    _PLACES[id(candidates)] = (candidates, members, position)
    return members, position


_ABSENT = object()


class _Times:
    """Node -> time, and the ``(time, node)`` pairs in order, for the nodes at or before
    ``horizon``: a sorted ``root`` (with ``root_at``, node -> its time there), shared and
    never changed, under an overlay of the nodes whose time changed since (``over``: node
    -> new time, or None when it has none) whose pairs are in ``extra``.  A change costs
    a bisection into the overlay, not a shift of a list of all the candidates (as many
    as a partition's nodes, thousands of times a pass); a root pair whose node is in the
    overlay is passed over when read.  Only the overlay is copied to derive another."""

    __slots__ = ("cut", "extra", "horizon", "lo", "over", "root", "root_at", "size")

    def __init__(
        self, root: list[tuple[float, int]], root_at: dict[int, float], horizon: float = INF
    ) -> None:
        self.root = root
        self.root_at = root_at
        self.horizon = horizon
        # root[:cut] are the pairs at or before the horizon; root[:lo] are all overlaid.
        self.cut = len(root) if horizon == INF else bisect_right(root, (horizon, INF))
        self.lo = 0
        self.over: dict[int, float | None] = {}
        self.extra: list[tuple[float, int]] = []
        self.size = self.cut  # how many nodes have a time

    def derive(self, horizon: float) -> _Times:
        """A copy to change, of the times at or before ``horizon`` (at most this one's)."""
        new = object.__new__(_Times)
        new.root = root = self.root
        new.root_at = root_at = self.root_at
        new.horizon = horizon
        new.cut = cut = bisect_right(root, (horizon, INF), 0, self.cut)
        new.lo = min(self.lo, cut)
        new.over = over = {i: t if t is not None and t <= horizon else None for i, t in self.over.items()}
        new.extra = extra = self.extra[: bisect_right(self.extra, (horizon, INF))]
        hidden = 0
        for i in over:
            t = root_at.get(i)
            if t is not None and t <= horizon:
                hidden += 1
        new.size = cut - hidden + len(extra)
        return new

    def get(self, i: int) -> float | None:
        t = self.over.get(i, _ABSENT)
        if t is _ABSENT:
            t = self.root_at.get(i)
            if t is not None and t > self.horizon:
                return None
        return t  # type: ignore[return-value]

    def set(self, i: int, t: float | None) -> None:
        """Node ``i``'s time is now ``t`` (None: it has none; a time past the horizon
        counts as none)."""
        if t is not None and t > self.horizon:
            t = None
        over = self.over
        old = over.get(i, _ABSENT)
        if old is _ABSENT:
            r = self.root_at.get(i)
            if r is not None and r <= self.horizon:
                self.size -= 1
            elif t is None:
                return  # had none, has none
        elif old is not None:
            if old == t:
                return
            extra = self.extra
            del extra[bisect_left(extra, (old, i))]
            self.size -= 1
        over[i] = t
        if t is not None:
            insort(self.extra, (t, i))
            self.size += 1

    def drop(self, i: int) -> None:
        """:meth:`set` to None."""
        over = self.over
        old = over.get(i, _ABSENT)
        if old is None:
            return
        if old is _ABSENT:
            r = self.root_at.get(i)
            if r is None or r > self.horizon:
                return
        else:
            extra = self.extra
            del extra[bisect_left(extra, (old, i))]
        self.size -= 1
        over[i] = None

    def in_order(self) -> Iterator[tuple[float, int]]:
        """The ``(time, node)`` pairs, sorted, read lazily."""
        root = self.root
        over = self.over
        lo, cut = self.lo, self.cut
        while lo < cut and root[lo][1] in over:
            lo += 1  # a root pair overlaid stays so: never looked at again
        self.lo = lo
        if not over:
            return islice(root, lo, cut)
        return _merged(islice(root, lo, cut), over, self.extra)

    def compacted(self) -> _Times:
        """The same times with the overlay merged into a new root."""
        over = self.over
        pairs = [p for p in islice(self.root, self.lo, self.cut) if p[1] not in over]
        pairs.extend(self.extra)
        pairs.sort()  # two sorted runs: a merge
        return _Times(pairs, {i: t for t, i in pairs}, self.horizon)

    def heavy(self) -> bool:
        """Whether the overlay is worth merging (reading past it costs more than a merge)."""
        return len(self.over) > 16 + self.cut // 16


def _merged(
    root: Iterator[tuple[float, int]], over: Mapping[int, float | None], extra: list[tuple[float, int]]
) -> Iterator[tuple[float, int]]:
    """The pairs of ``root`` whose node is not in ``over``, merged with ``extra``."""
    j = 0
    n = len(extra)
    for p in root:
        if p[1] in over:
            continue
        while j < n and extra[j] < p:
            yield extra[j]
            j += 1
        yield p
    yield from islice(extra, j, None)


class _ReadyIndex:
    """One candidate list's ready times for one request (CPUs, memory, whole node/memory):
    for each candidate reserved for nobody, when it first has the share free (within the
    window), and those times sorted (``times``).  A node leaves it for good once reserved
    (its reservations are looked at job by job: ``reserved_nodes``, the reserved
    candidates in the order they were first reserved) and is looked at again, when the
    index is next read, after a start changed what it has free (:meth:`Timeline.add_release`,
    ``seen``)."""

    __slots__ = (
        "candidates",
        "cpus",
        "mem",
        "members",
        "position",
        "reserved",
        "reserved_nodes",
        "seen",
        "times",
        "whole_mem",
        "whole_node",
    )

    def __init__(
        self,
        line: Timeline,
        candidates: Sequence[int],
        *,
        cpus: int,
        mem: int,
        whole_mem: bool,
        whole_node: bool,
    ) -> None:
        self.candidates = candidates
        self.cpus = cpus
        self.mem = mem
        self.whole_mem = whole_mem
        self.whole_node = whole_node
        self.members, self.position = _places(candidates)
        # The reserved candidates' ready times as last asked for (what ready_at reads of a
        # node changes only with an add_release on it, which forgets its entry).
        self.reserved: dict[int, float] = {}
        self.seen = len(line.started_on)  # of the timeline's add_release nodes, looked at
        members = self.members
        self.reserved_nodes = [i for i, rl in line.reservations.items() if rl and i in members]
        # line.ready_at(i, *line.needs(i, ...)) for every candidate, inlined: an index
        # covers a whole partition, and is built once per request shape per pass.
        ready_of: dict[int, float] = {}
        now = line.now
        horizon = line.horizon
        resv = line.reservations
        releases = line.releases
        fc = line.free_cpus
        fm = line.free_mem
        cap = line.cap_mem
        capc = line.cap_cpus
        need_cpus = cpus
        need_mem = mem
        for i in candidates:
            if resv.get(i):
                continue
            if whole_node:
                assert capc is not None
                need_cpus = max(capc[i], cpus)
                need_mem = max(cap[i], mem)
            elif whole_mem:
                need_mem = cap[i]
            free_c = fc[i]
            free_m = fm[i]
            if free_c >= need_cpus and free_m >= need_mem:
                if now <= horizon:
                    ready_of[i] = now
                continue
            rel = releases.get(i)
            if rel is None:
                continue
            for end, dc, dm in rel:
                free_c += dc
                free_m += dm
                if free_c >= need_cpus and free_m >= need_mem:
                    if end <= horizon:
                        ready_of[i] = end
                    break
        # (ready time, node), sorted: the times in order, and which nodes are ready by when.
        self.times = _Times(sorted([(ready, i) for i, ready in ready_of.items()]), ready_of, horizon)

    @classmethod
    def from_base(cls, line: Timeline, base: BaseReady) -> _ReadyIndex:
        """The index :meth:`__init__` builds, from ready times kept from earlier passes:
        theirs for every candidate but the ``dirty`` and reserved ones, which are looked
        at again, and those past the window, left out.  A kept time before now stands for
        now (:class:`BaseReady`): the times are read as such (``_plan_indexed``)."""
        index = object.__new__(cls)
        candidates = base.candidates
        index.candidates = candidates
        index.cpus, index.mem, index.whole_mem, index.whole_node = base.request
        index.members, index.position = _places(candidates)
        index.reserved = {}
        index.seen = len(line.started_on)
        members = index.members
        index.reserved_nodes = [i for i, rl in line.reservations.items() if rl and i in members]
        times = index.times = base.times.derive(line.horizon)
        needs = line.needs
        request = base.request
        for i in {i for i in line.dirty if i in members}.union(index.reserved_nodes):
            if line.reservations.get(i):
                times.drop(i)
                continue
            times.set(i, line.ready_at(i, *needs(i, *request)))
        return index

    def refresh(self, line: Timeline, i: int) -> None:
        """Look again at candidate ``i``, after a start on it."""
        if line.reservations.get(i):
            self.reserved.pop(i, None)
            return
        self.times.set(
            i, line.ready_at(i, *line.needs(i, self.cpus, self.mem, self.whole_mem, self.whole_node))
        )


class BaseReady:
    """One candidate list's ready times for one request ``(cpus, mem, whole_mem,
    whole_node)`` against the holding jobs alone (free resources and release lists before
    any start of a pass, releases not raised to a pass's now), for the pass core to keep
    between passes: node -> -INF when the share is free, else the end of the release that
    frees it (nodes it never frees left out), and ``(time, node)`` sorted (``times``).

    A pass's ready time of such a node is ``max(now, kept)``: releases before now are
    raised to now, and when the share frees within them it frees at now; otherwise at the
    same release as before, all of them freeing CPUs and memory (none negative: the
    caller's to check).  ``free_now``: the candidates with the share free, in
    their order (None when a candidate is listed twice): no node outside it has the share
    free in a pass on these holdings, whose starts only take resources, so a pass's first
    start-now search of the request walks a copy of it, not the whole candidate list.
    Never changed once built (shared by passes)."""

    __slots__ = ("candidates", "free_now", "request", "times")

    def __init__(
        self, candidates: Sequence[int], request: Request, times: _Times, free_now: list[int] | None
    ) -> None:
        self.candidates = candidates
        self.request = request
        self.times = times
        self.free_now = free_now

    @classmethod
    def build(
        cls,
        candidates: Sequence[int],
        request: Request,
        *,
        free: tuple[list[int], list[int]],
        caps: tuple[list[int], list[int]],
        releases: Mapping[int, list[tuple[float, int, int]]],
    ) -> BaseReady:
        # _base_time for every candidate, inline: a whole partition, on a cold pass.
        ready: dict[int, float] = {}
        free_now: list[int] = []
        cpus, mem, whole_mem, whole_node = request
        cap_cpus, cap_mem = caps
        fc, fm = free
        need_cpus, need_mem = cpus, mem
        for i in candidates:
            if whole_node:
                need_cpus = max(cap_cpus[i], cpus)
                need_mem = max(cap_mem[i], mem)
            elif whole_mem:
                need_mem = cap_mem[i]
            free_c = fc[i]
            free_m = fm[i]
            if free_c >= need_cpus and free_m >= need_mem:
                ready[i] = -INF
                free_now.append(i)
                continue
            rel = releases.get(i)
            if rel is None:
                continue
            for end, dc, dm in rel:
                free_c += dc
                free_m += dm
                if free_c >= need_cpus and free_m >= need_mem:
                    ready[i] = end
                    break
        times = _Times(sorted([(t, i) for i, t in ready.items()]), ready)
        return cls(candidates, request, times, free_now if _places(candidates)[1] is not None else None)

    def patched(
        self,
        nodes: Iterable[int],
        *,
        free: tuple[list[int], list[int]],
        caps: tuple[list[int], list[int]],
        releases: Mapping[int, list[tuple[float, int, int]]],
    ) -> BaseReady:
        """These times with those of ``nodes`` (the ones whose holdings changed) anew."""
        members, position = _places(self.candidates)
        times = self.times.derive(INF)
        free_now = self.free_now
        copied = False
        for i in nodes:
            if i not in members:
                continue
            t = _base_time(i, self.request, free, caps, releases)
            times.set(i, t if t != INF else None)
            if free_now is None:
                continue
            assert position is not None
            # Not the time: -INF too when a COMPLETING job's release frees the share.
            fits = _share_free(i, self.request, free, caps)
            k = bisect_left(free_now, position[i], key=position.__getitem__)
            if fits == (k < len(free_now) and free_now[k] == i):
                continue
            if not copied:
                free_now = free_now.copy()
                copied = True
            if fits:
                free_now.insert(k, i)
            else:
                del free_now[k]
        if times.heavy():
            times = times.compacted()
        return BaseReady(self.candidates, self.request, times, free_now)


def _share_free(
    i: int, request: Request, free: tuple[list[int], list[int]], caps: tuple[list[int], list[int]]
) -> bool:
    """Whether node ``i`` has one share of ``request`` free (:class:`BaseReady`'s test)."""
    cpus, mem, whole_mem, whole_node = request
    need_cpus, need_mem = cpus, mem
    if whole_node:
        need_cpus = max(caps[0][i], cpus)
        need_mem = max(caps[1][i], mem)
    elif whole_mem:
        need_mem = caps[1][i]
    return free[0][i] >= need_cpus and free[1][i] >= need_mem


def _base_time(
    i: int,
    request: Request,
    free: tuple[list[int], list[int]],
    caps: tuple[list[int], list[int]],
    releases: Mapping[int, list[tuple[float, int, int]]],
) -> float:
    """Node ``i``'s :class:`BaseReady` time (INF: never)."""
    cpus, mem, whole_mem, whole_node = request
    cap_cpus, cap_mem = caps
    need_cpus, need_mem = cpus, mem
    if whole_node:
        need_cpus = max(cap_cpus[i], cpus)
        need_mem = max(cap_mem[i], mem)
    elif whole_mem:
        need_mem = cap_mem[i]
    free_c = free[0][i]
    free_m = free[1][i]
    if free_c >= need_cpus and free_m >= need_mem:
        return -INF
    for end, dc, dm in releases.get(i, ()):
        free_c += dc
        free_m += dm
        if free_c >= need_cpus and free_m >= need_mem:
            return end
    return INF
