"""The cluster at a glance: one read that the dashboard and ``/metrics`` share.

:func:`read_figures` is the core's part in four queries whatever the cluster's size: the
nodes (one row each, a few columns), the jobs per state, the pending jobs per reason, and
the GPUs held by running jobs.  :func:`read_overview` adds the extensions' dashboard panels
(each a fixed number of queries: cluster.extensions.overview_panels) and the 24-hour trend
(one query, and a write every SAMPLE_EVERY).  The dashboard's publisher calls it once per
cycle for every open dashboard (cluster/overview_publisher.py).
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import DatabaseError, transaction
from django.db.models import Count

from cluster import extensions, selectors
from cluster.core import states
from cluster.core.states import HOLDING_JOB_STATES, JobState, NodeFlag
from cluster.extensions import OverviewPanel, UsageBar
from cluster.models import Event, Job, Node, OverviewSample
from slurmwords.memory import format_memory_mb
from slurmwords.tres import TresError, gres_tres

log = logging.getLogger(__name__)

# sinfo's state suffixes (powered down, not responding...) are shown as labels of their own.
_SUFFIX_CHARS = "".join(c for c, _ in selectors.NODE_SUFFIXES)
# A node's power state, from its flags, first match wins (scontrol's POWERING_UP,
# POWERING_DOWN, POWERED_DOWN and POWER_DOWN, lower-cased); "on" when none is set.
POWER_STATES: tuple[tuple[NodeFlag, str], ...] = (
    (NodeFlag.POWERING_UP, "powering_up"),
    (NodeFlag.POWERING_DOWN, "powering_down"),
    (NodeFlag.POWERED_DOWN, "powered_down"),
    (NodeFlag.POWER_DOWN, "power_down"),
)
POWER_ON = "on"
TOP_REASONS = 5
EVENTS = 10
TREND_SPAN = timedelta(hours=24)
SAMPLE_EVERY = timedelta(minutes=5)  # 288 rows for a day
GPU = "gres/gpu"


def node_state_word(base: str, flags: int) -> str:
    """sinfo's long state (``%T``) without its suffix: ``idle``, ``mixed``, ``drained``."""
    return states.sinfo_long(base, flags).rstrip(_SUFFIX_CHARS)


def power_state(flags: int) -> str:
    for flag, word in POWER_STATES:
        if flags & flag:
            return word
    return POWER_ON


def _gpus(gres: str) -> int:
    try:
        return gres_tres(gres).get(GPU, 0) if gres else 0
    except TresError:
        return 0  # a node's or job's text the parser refuses holds no GPU we can count


@dataclass(frozen=True)
class ClusterFigures:
    """The core's figures, as one read found them."""

    taken: datetime
    node_states: dict[str, int]  # sinfo long state word -> nodes
    node_colours: dict[str, str]  # that word -> the grid's colour class (sinfo's short word)
    power_states: dict[str, int]  # POWER_STATES word or "on" -> nodes
    nodes_total: int
    nodes_unavailable: int  # the scheduler may not place work there (cluster.core.states.is_usable)
    not_responding: int
    agents: int  # distinct agents holding a responding node
    cpus: UsageBar
    memory: UsageBar
    gpus: UsageBar
    job_counts: list[selectors.JobCount]  # active states, and states entered in the last day
    pending_reasons: list[selectors.ReasonCount]  # every reason, most common first

    @property
    def jobs_running(self) -> int:
        return sum(c.count for c in self.job_counts if c.state == JobState.RUNNING)

    @property
    def jobs_pending(self) -> int:
        return sum(c.count for c in self.job_counts if c.state == JobState.PENDING)


def read_figures(*, now: datetime) -> ClusterFigures:
    """The core's figures in four queries."""
    node_states: Counter[str] = Counter()
    colours: dict[str, str] = {}
    power: Counter[str] = Counter()
    cpus = cpus_alloc = mem = mem_alloc = gpus = unavailable = not_responding = 0
    agents: set[str] = set()
    rows = Node.objects.values_list(
        "base_state", "flags", "cpus", "alloc_cpus", "real_memory", "alloc_mem", "gres", "agent_id"
    )
    for base, flags, n_cpus, n_alloc, n_mem, n_mem_alloc, gres, agent in rows:
        word = node_state_word(base, flags)
        node_states[word] += 1
        colours.setdefault(word, states.sinfo_short(base, flags).rstrip(_SUFFIX_CHARS))
        power[power_state(flags)] += 1
        cpus += n_cpus
        cpus_alloc += n_alloc
        mem += n_mem
        mem_alloc += n_mem_alloc
        gpus += _gpus(gres)
        unavailable += not states.is_usable(base, flags)
        if flags & NodeFlag.NOT_RESPONDING:
            not_responding += 1
        elif agent:
            agents.add(agent)
    # Jobs name their GPUs per node (--gres=gpu:2): times the nodes they hold.
    gpu_jobs = (
        Job.objects.filter(state__in=[s.value for s in HOLDING_JOB_STATES])
        .exclude(gres="")
        .values_list("gres", "alloc")
    )
    gpus_alloc = sum(_gpus(gres) * max(1, len(alloc or {})) for gres, alloc in gpu_jobs)
    return ClusterFigures(
        taken=now,
        node_states=dict(sorted(node_states.items())),
        node_colours=colours,
        power_states=dict(sorted(power.items())),
        nodes_total=sum(node_states.values()),
        nodes_unavailable=unavailable,
        not_responding=not_responding,
        agents=len(agents),
        cpus=UsageBar("CPUs", cpus_alloc, cpus, f"{cpus_alloc}/{cpus}"),
        memory=UsageBar("Memory", mem_alloc, mem, f"{format_memory_mb(mem_alloc)}/{format_memory_mb(mem)}"),
        gpus=UsageBar("GPUs", min(gpus_alloc, gpus), gpus, f"{min(gpus_alloc, gpus)}/{gpus}"),
        job_counts=selectors.job_state_counts(now=now),
        pending_reasons=selectors.pending_reasons(),
    )


@dataclass(frozen=True)
class Trend:
    """The last day's samples (oldest first) as SVG polylines of a WIDTH x HEIGHT box."""

    start: datetime
    times: list[datetime] = field(default_factory=list)
    running: list[int] = field(default_factory=list)
    pending: list[int] = field(default_factory=list)
    cpu_pct: list[int] = field(default_factory=list)

    WIDTH = 288
    HEIGHT = 60

    def _x(self, t: datetime) -> float:
        return round(self.WIDTH * (t - self.start) / TREND_SPAN, 1)

    def _points(self, values: list[int], top: int) -> str:
        top = max(top, 1)
        return " ".join(
            f"{self._x(t)},{round(self.HEIGHT - self.HEIGHT * v / top, 1)}"
            for t, v in zip(self.times, values, strict=True)
        )

    @property
    def jobs_top(self) -> int:
        return max([*self.running, *self.pending, 1])

    @property
    def running_points(self) -> str:
        return self._points(self.running, self.jobs_top)

    @property
    def pending_points(self) -> str:
        return self._points(self.pending, self.jobs_top)

    @property
    def cpu_points(self) -> str:
        return self._points(self.cpu_pct, 100)


def _trend(figures: ClusterFigures, *, record: bool) -> Trend:
    """The last day's samples, and with ``record`` this one added when the latest is
    SAMPLE_EVERY old."""
    now = figures.taken
    start = now - TREND_SPAN
    rows = list(
        OverviewSample.objects.filter(time__gte=start)
        .order_by("time")
        .values_list("time", "jobs_running", "jobs_pending", "cpus_alloc", "cpus_total")
    )
    if record and (not rows or now - rows[-1][0] >= SAMPLE_EVERY):
        cpus = figures.cpus
        fresh = (now, figures.jobs_running, figures.jobs_pending, int(cpus.used), int(cpus.total or 0))
        try:
            with transaction.atomic():
                OverviewSample.objects.create(
                    time=now,
                    jobs_running=fresh[1],
                    jobs_pending=fresh[2],
                    cpus_alloc=fresh[3],
                    cpus_total=fresh[4],
                    nodes_unavailable=figures.nodes_unavailable,
                )
                OverviewSample.objects.filter(time__lt=start).delete()
        except DatabaseError as exc:  # a busy database: the next pass takes the sample
            log.warning("the dashboard's trend sample was not stored: %s", exc)
        else:
            rows.append(fresh)
    return Trend(
        start=start,
        times=[r[0] for r in rows],
        running=[r[1] for r in rows],
        pending=[r[2] for r in rows],
        cpu_pct=[round(100 * r[3] / r[4]) if r[4] else 0 for r in rows],
    )


@dataclass(frozen=True)
class Overview:
    figures: ClusterFigures
    panels: list[OverviewPanel]
    trend: Trend
    events: list[Event]

    @property
    def node_states(self) -> list[tuple[str, str, int]]:
        """(state word, colour class, nodes) in the grid legend's order."""
        order = {name: i for i, (name, _) in enumerate(selectors.NODE_COLOURS)}
        f = self.figures
        rows = [(word, f.node_colours[word], n) for word, n in f.node_states.items()]
        return sorted(rows, key=lambda r: (order.get(r[1], len(order)), r[0]))

    @property
    def top_reasons(self) -> list[selectors.ReasonCount]:
        return self.figures.pending_reasons[:TOP_REASONS]

    @property
    def shares(self) -> list[UsageBar]:
        f = self.figures
        return [f.cpus, f.memory, f.gpus] if f.gpus.total else [f.cpus, f.memory]


def read_overview(*, now: datetime, record: bool = False) -> Overview:
    """Everything the dashboard shows, in a fixed number of queries.  ``record``: take the
    trend's sample when one is due (the publisher does; a page's GET writes nothing)."""
    figures = read_figures(now=now)
    return Overview(
        figures=figures,
        panels=extensions.overview_panels(),
        trend=_trend(figures, record=record),
        events=selectors.recent_events(limit=EVENTS),
    )


def job_counts_by_state() -> dict[str, int]:
    """Jobs per state over the whole job table (one query): /metrics' ``fsched_jobs``."""
    rows = Job.objects.values("state").annotate(n=Count("id")).order_by()
    counts = dict.fromkeys((s.value for s in JobState), 0)
    counts.update({r["state"]: r["n"] for r in rows})
    return counts
