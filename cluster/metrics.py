"""``/metrics``: the cluster in Prometheus' text format, read when it is scraped.

A custom collector (prometheus-client's ``Collector``) reads the cluster at each scrape in
a fixed number of queries whatever its size: the core's figures (cluster.overview, four
queries), the jobs per state (one), sdiag's scheduler row (one), the agents' queue (two),
then each extension's samples (cluster.extensions.metric_samples: hres' layers, the
accounting limits, power saving).  Nothing is counted in the hot paths: a controller that
nobody scrapes pays nothing.  docs/metrics.md lists every metric.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime

from django.utils import timezone
from prometheus_client.core import CollectorRegistry, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from cluster import extensions, overview
from cluster.extensions import Sample
from cluster.models import SchedulerStats
from cluster.services import diagnostics


def _gauge(name: str, help_text: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, help_text, value=value)


def _labelled(name: str, help_text: str, label: str, values: dict[str, int]) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, help_text, labels=[label])
    for key, value in values.items():
        family.add_metric([key], value)
    return family


def _core(now: datetime) -> Iterator[Metric]:
    f = overview.read_figures(now=now)
    yield _labelled(
        "fsched_nodes", "Nodes per state (sinfo's long state, without its suffix).", "state", f.node_states
    )
    yield _labelled(
        "fsched_nodes_power", "Nodes per power state (on, or the power flag set).", "power", f.power_states
    )
    yield _gauge(
        "fsched_nodes_not_responding", "Nodes whose agent has not been heard from.", f.not_responding
    )
    yield _gauge("fsched_agents", "Node agents connected (holding at least one responding node).", f.agents)
    for name, bar, unit in (("cpus", f.cpus, ""), ("memory", f.memory, "_megabytes"), ("gpus", f.gpus, "")):
        yield _gauge(f"fsched_{name}{unit}", f"{bar.label} configured on the nodes.", bar.total or 0)
        yield _gauge(f"fsched_{name}_allocated{unit}", f"{bar.label} allocated to jobs.", bar.used)
    yield _labelled(
        "fsched_jobs",
        "Jobs per state, as the controller holds them (squeue --states=all).",
        "state",
        overview.job_counts_by_state(),
    )
    reasons = {r.reason: r.count for r in f.pending_reasons}
    yield _labelled("fsched_jobs_pending", "Pending jobs per reason (squeue's REASON).", "reason", reasons)
    yield _gauge(
        "fsched_agent_queue_size",
        "Launches and cancels sent to agents and not yet answered.",
        diagnostics.agent_queue(),
    )
    yield from _scheduler(now, pending=sum(reasons.values()))


def _scheduler(now: datetime, *, pending: int) -> Iterator[Metric]:
    """sdiag's figures of the main and backfill schedulers since its last reset (midnight UTC)."""
    row = SchedulerStats.objects.filter(pk=1).first()
    if row is None or row.since < diagnostics.midnight(now):
        row = SchedulerStats(since=diagnostics.midnight(now))
    kinds = {
        "main": (row.main_cycles, row.main_last_us, row.main_max_us, row.main_sum_us),
        "backfill": (row.bf_cycles, row.bf_last_us, row.bf_max_us, row.bf_sum_us),
    }
    families = {
        "cycles": GaugeMetricFamily(
            "fsched_scheduler_cycles", "Scheduler passes since sdiag's reset.", labels=["scheduler"]
        ),
        "last": GaugeMetricFamily(
            "fsched_scheduler_last_pass_seconds", "Time the last pass took.", labels=["scheduler"]
        ),
        "max": GaugeMetricFamily(
            "fsched_scheduler_max_pass_seconds", "Longest pass since sdiag's reset.", labels=["scheduler"]
        ),
        "mean": GaugeMetricFamily(
            "fsched_scheduler_mean_pass_seconds", "Mean pass since sdiag's reset.", labels=["scheduler"]
        ),
    }
    for kind, (cycles, last, most, total) in kinds.items():
        families["cycles"].add_metric([kind], cycles)
        families["last"].add_metric([kind], last / 1e6)
        families["max"].add_metric([kind], most / 1e6)
        families["mean"].add_metric([kind], total / cycles / 1e6 if cycles else 0)
    yield from families.values()
    yield _gauge("fsched_scheduler_backlog", "Pending jobs the scheduler has to place.", pending)
    yield _gauge("fsched_backfill_last_depth", "Jobs the last backfill pass considered.", row.bf_last_depth)
    yield _gauge(
        "fsched_scheduler_stats_since_seconds",
        "When sdiag's figures started (Unix time).",
        row.since.timestamp(),
    )


def families(samples: Iterable[Sample]) -> Iterator[Metric]:
    """Extension samples grouped into one gauge family per name, in their first order."""
    grouped: dict[str, list[Sample]] = {}
    for sample in samples:
        grouped.setdefault(sample.name, []).append(sample)
    for name, group in grouped.items():
        labels = sorted(group[0].labels)
        family = GaugeMetricFamily(name, group[0].help, labels=labels)
        for sample in group:
            family.add_metric([str(sample.labels.get(k, "")) for k in labels], sample.value)
        yield family


class ClusterCollector(Collector):
    """Reads the cluster at every scrape (no state kept between scrapes)."""

    def collect(self) -> Iterable[Metric]:
        now = timezone.now()
        yield from _core(now)
        yield from families(extensions.metric_samples())


def registry() -> CollectorRegistry:
    """A registry of the cluster's metrics alone (not the process's, which would differ
    between the server processes a load balancer spreads scrapes over)."""
    found = CollectorRegistry(auto_describe=False)
    found.register(ClusterCollector())
    return found
