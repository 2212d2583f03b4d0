"""One hour of history as slurmdbd's hourly rollup keeps it, from plain records.

Times are epoch seconds.  The caller reads the rows (jobs, node state changes,
reservations) and writes the figures; this module only adds up.

Cluster usage per TRES (cpu, mem in MB, node), as slurmdbd's cluster usage tables and
``sreport cluster utilization`` name its parts:

* ``alloc``: used by jobs, plus the part of an advanced reservation no job used (Slurm
  counts a reservation's idle time as allocated to it);
* ``down``: on nodes DOWN or fully drained (DRAINED: drained and running nothing);
* ``pdown``: on nodes POWERED_DOWN or FUTURE, and in MAINT reservations ("PLND Down",
  planned down); reservations with IGNORE_JOBS are not tracked, as sreport's man page says;
* ``plan``: not allocated or down while eligible jobs waited ("Planned", once called
  "Reserved"); what eligible jobs asked for beyond that is ``over`` ("Over Comm");
* ``idle``: the rest;
* ``resv``: the part of ``alloc`` that reservations held without a job (fsched's own
  figure, for the console).

Per association (account, user): TRES-seconds and billing-seconds of the jobs.
Per (account, user, CPU count): jobs started and ended, their waits and run times as sums
and as histograms, for the job size, wait and run-time reports and the throughput.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

HOUR = 3600
TRES = ("cpu", "mem", "node")

# Bucket edges (seconds) of the wait and run-time histograms: 1 min, 10 min, 1 h, 6 h, 1 day.
DURATION_EDGES = (60, 600, 3600, 6 * 3600, 24 * 3600)
DURATION_LABELS = ("< 1 min", "1-10 min", "10 min-1 h", "1-6 h", "6-24 h", ">= 1 day")


def duration_bucket(seconds: float) -> int:
    return bisect.bisect_right(DURATION_EDGES, seconds)


def node_category(state: str) -> str:
    """A long node state (``IDLE+DRAIN``, ``IDLE+CLOUD+POWERED_DOWN``) as the part of the
    cluster utilisation its time goes to: ``pdown``, ``down`` or ``up``.  Power comes first:
    a powered-down node that is also drained is planned down, as slurmdbd counts it."""
    words = set(state.upper().split("+"))
    if words & {"POWERED_DOWN", "FUTURE"}:
        return "pdown"
    if "DOWN" in words or (words & {"DRAIN", "FAIL"} and not words & {"ALLOCATED", "MIXED", "COMPLETING"}):
        return "down"
    return "up"


@dataclass(frozen=True)
class NodeInfo:
    name: str
    cpus: int
    mem: int


@dataclass(frozen=True)
class JobSpan:
    """A job as the rollup sees it.  ``start`` None: never started; ``end`` None: still
    running (or pending)."""

    id: int
    account: str
    user: str
    cpus: int
    mem: int
    nodes: int
    billing: float
    gpus: int
    eligible: float
    start: float | None
    end: float | None
    reservation: str = ""
    hosts: tuple[str, ...] = ()


@dataclass(frozen=True)
class ResvSpan:
    name: str
    start: float
    end: float
    cpus: int
    mem: int
    nodes: int
    maint: bool = False


@dataclass
class ClusterFigures:
    count: int = 0
    alloc: float = 0.0
    down: float = 0.0
    pdown: float = 0.0
    plan: float = 0.0
    idle: float = 0.0
    resv: float = 0.0
    over: float = 0.0


@dataclass
class AssocFigures:
    cpu: float = 0.0
    mem: float = 0.0
    node: float = 0.0
    billing: float = 0.0
    gpu: float = 0.0


@dataclass
class JobFigures:
    started: int = 0
    ended: int = 0
    cpu_secs: float = 0.0
    wait_secs: float = 0.0
    run_secs: float = 0.0
    wait_hist: list[int] = field(default_factory=lambda: [0] * len(DURATION_LABELS))
    run_hist: list[int] = field(default_factory=lambda: [0] * len(DURATION_LABELS))


@dataclass
class HourFigures:
    cluster: dict[str, ClusterFigures]
    assocs: dict[tuple[str, str], AssocFigures]
    jobs: dict[tuple[str, str, int], JobFigures]


def overlap(a0: float, a1: float, b0: float, b1: float) -> float:
    return max(0.0, min(a1, b1) - max(a0, b0))


def union_length(spans: list[tuple[float, float]]) -> float:
    total, reach = 0.0, float("-inf")
    for a, b in sorted(spans):
        if b > reach:
            total += b - max(a, reach)
            reach = b
    return total


def node_segments(
    initial: Mapping[str, str], changes: Iterable[tuple[float, str, str]], start: float, end: float
) -> dict[str, list[tuple[float, float, str]]]:
    """Each node's ``(from, to, category)`` over ``[start, end)``: ``initial`` is the state
    at ``start``, ``changes`` are ``(time, node, new state)`` in time order."""
    at = dict.fromkeys(initial, start)
    cat = {name: node_category(state) for name, state in initial.items()}
    out: dict[str, list[tuple[float, float, str]]] = {name: [] for name in initial}
    for t, name, state in changes:
        if name not in cat or not start <= t < end:
            continue
        new = node_category(state)
        if new != cat[name]:
            if t > at[name]:
                out[name].append((at[name], t, cat[name]))
            at[name], cat[name] = t, new
    for name in initial:
        if end > at[name]:
            out[name].append((at[name], end, cat[name]))
    return out


def roll_hour(
    start: float,
    nodes: Sequence[NodeInfo],
    segments: Mapping[str, Sequence[tuple[float, float, str]]],
    jobs: Iterable[JobSpan],
    reservations: Iterable[ResvSpan] = (),
) -> HourFigures:
    """The figures of the hour ``[start, start + 3600)``."""
    end = start + HOUR
    cluster = {t: ClusterFigures() for t in TRES}
    per_unit = {n.name: {"cpu": n.cpus, "mem": n.mem, "node": 1} for n in nodes}
    for tres in TRES:
        cluster[tres].count = sum(u[tres] for u in per_unit.values())
    for name, segs in segments.items():
        units = per_unit.get(name)
        if units is None:
            continue
        for a, b, category in segs:
            secs = overlap(a, b, start, end)
            if category in ("down", "pdown"):
                for tres in TRES:
                    setattr(cluster[tres], category, getattr(cluster[tres], category) + secs * units[tres])
    assocs: dict[tuple[str, str], AssocFigures] = {}
    stats: dict[tuple[str, str, int], JobFigures] = {}
    plan = dict.fromkeys(TRES, 0.0)
    used_in_resv: dict[str, dict[str, float]] = {}
    busy: dict[str, list[tuple[float, float]]] = {}
    for job in jobs:
        size = {"cpu": job.cpus, "mem": job.mem, "node": job.nodes}
        key3 = (job.account, job.user, job.cpus)
        if job.start is None or job.start >= end:
            # Waiting: its request is held for it while it is eligible (slurmdbd's planned time).
            stop = job.end if job.end is not None else end
            secs = overlap(job.eligible, stop, start, end)
            for tres in TRES:
                plan[tres] += secs * size[tres]
            if job.start is None:
                continue
        else:
            secs = overlap(job.eligible, job.start, start, end)
            for tres in TRES:
                plan[tres] += secs * size[tres]
        run_end = job.end if job.end is not None else end
        secs = overlap(job.start, run_end, start, end)
        if secs > 0:
            for tres in ("cpu", "mem"):
                cluster[tres].alloc += secs * size[tres]
            # A node is allocated while any job holds it: two jobs sharing one count once.
            if job.hosts:
                span = (max(job.start, start), min(run_end, end))
                for host in job.hosts:
                    busy.setdefault(host, []).append(span)
            else:
                cluster["node"].alloc += secs * job.nodes
            a = assocs.setdefault((job.account, job.user), AssocFigures())
            a.cpu += secs * job.cpus
            a.mem += secs * job.mem
            a.node += secs * job.nodes
            a.billing += secs * job.billing
            a.gpu += secs * job.gpus
            if job.reservation:
                r = used_in_resv.setdefault(job.reservation, dict.fromkeys(TRES, 0.0))
                for tres in TRES:
                    r[tres] += secs * size[tres]
        started = start <= job.start < end
        ended = job.end is not None and start <= job.end < end
        if secs > 0 or started or ended:
            s = stats.setdefault(key3, JobFigures())
            s.cpu_secs += secs * job.cpus
            if started:
                wait = max(0.0, job.start - job.eligible)
                s.started += 1
                s.wait_secs += wait
                s.wait_hist[duration_bucket(wait)] += 1
            if ended and job.end is not None:
                run = max(0.0, job.end - job.start)
                s.ended += 1
                s.run_secs += run
                s.run_hist[duration_bucket(run)] += 1
    cluster["node"].alloc += sum(union_length(spans) for spans in busy.values())
    for resv in reservations:
        secs = overlap(resv.start, resv.end, start, end)
        if secs <= 0:
            continue
        held = {"cpu": resv.cpus, "mem": resv.mem, "node": resv.nodes}
        used = used_in_resv.get(resv.name, {})
        for tres in TRES:
            spare = max(0.0, secs * held[tres] - used.get(tres, 0.0))
            if resv.maint:
                cluster[tres].pdown += spare
            else:
                cluster[tres].resv += spare
                cluster[tres].alloc += spare
    for tres in TRES:
        c = cluster[tres]
        total = float(c.count * HOUR)
        # A draining node still running a job: the job's time is allocated, not down.
        c.alloc = min(c.alloc, total)
        c.resv = min(c.resv, c.alloc)
        c.down = min(c.down, total - c.alloc)
        c.pdown = min(c.pdown, total - c.alloc - c.down)
        left = total - c.alloc - c.down - c.pdown
        c.plan = min(plan[tres], left)
        c.over = plan[tres] - c.plan
        c.idle = left - c.plan
    return HourFigures(cluster=cluster, assocs=assocs, jobs=stats)
