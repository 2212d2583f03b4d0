"""The load indices over time, for the node page's chart: written and pruned by the load
check (load/services.py), read by load/charts.py.

Each check adds at most one sample per node, in one insert, and only for a node whose
latest figures are fresh and at least ``FSCHED_LOAD_SAMPLE_INTERVAL`` (60 s) newer than
its last sample: the agents report every 5 s, and a row per node every 5 s would be 17,280
rows per node per day, a row per minute is 1,440.  The drain/stop/continue moments need no
sample of their own: their events carry the figures the check judged.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Max, Min

from cluster.services import pass_snapshot
from load.models import NodeLoad, NodeLoadSample

FIELDS = ("mem", "ut", "r15s", "r1m", "r15m")


def retention() -> timedelta:
    return timedelta(hours=settings.FSCHED_LOAD_HISTORY_HOURS)


def record(latest: Iterable[NodeLoad], *, now: datetime, check_interval: float | None = None) -> int:
    """One sample for each node of ``latest`` (its fresh figures) that is due; how many.
    ``check_interval``: the load check's interval in force (its setting by default)."""
    rows = list(latest)
    if not rows:
        return 0
    interval = timedelta(seconds=settings.FSCHED_LOAD_SAMPLE_INTERVAL)
    check = timedelta(seconds=settings.FSCHED_LOAD_INTERVAL if check_interval is None else check_interval)
    # Checks come every FSCHED_LOAD_INTERVAL and heartbeats jitter: a gap of half a check
    # short of the interval still counts as due, or a 60 s interval would often take 90 s.
    due_gap = max(timedelta(0), interval - check / 2)
    lookback = now - interval - check * 2
    last = dict(
        NodeLoadSample.objects.filter(time__gte=lookback)
        .values("node")
        .annotate(last=Max("time"))
        .values_list("node", "last")
    )
    new = [
        NodeLoadSample(node=r.node, time=r.at, **{f: getattr(r, f) for f in FIELDS})
        for r in rows
        if r.node not in last or (r.at > last[r.node] and r.at - last[r.node] >= due_gap)
    ]
    NodeLoadSample.objects.bulk_create(new)
    return len(new)


def prune(*, now: datetime) -> int:
    """Delete the samples older than the retention; how many."""
    cutoff = now - retention()
    # The oldest sample, kept by the simulator until one is written: a check with none to
    # delete runs no DELETE.
    oldest = pass_snapshot.kept_value(
        "load.oldest_sample", (NodeLoadSample,), lambda: NodeLoadSample.objects.aggregate(t=Min("time"))["t"]
    )
    if oldest is None or oldest >= cutoff:
        return 0
    deleted, _ = NodeLoadSample.objects.filter(time__lt=cutoff).delete()
    return deleted
