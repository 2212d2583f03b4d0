"""Power saving at ``/metrics``: whether it is on, and its programs (ResumeProgram,
SuspendProgram, ResumeFailProgram) running now and failed in the last day.  The nodes'
power states are the core's (``fsched_nodes_power``): they are flags on the nodes."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Count, Q

from cluster import clock
from cluster.extensions import Sample
from power.models import PowerRun, PowerState

FAILURE_WINDOW = timedelta(hours=24)


def samples() -> list[Sample]:
    since = clock.now() - FAILURE_WINDOW
    failed = Q(started__gte=since) & (~Q(failure="") | (Q(exit_code__isnull=False) & ~Q(exit_code=0)))
    rows = {
        r["kind"]: r
        for r in PowerRun.objects.values("kind")
        .annotate(running=Count("id", filter=Q(ended__isnull=True)), failed=Count("id", filter=failed))
        .order_by()
    }
    enabled = PowerState.objects.filter(pk=1).values_list("auto_enabled", flat=True).first()
    out = [
        Sample("fsched_power_save_enabled", "1 when automatic power saving is on.", {}, float(bool(enabled)))
    ]
    for kind in PowerRun.Kind:
        row = rows.get(kind.value, {"running": 0, "failed": 0})
        labels = {"program": kind.value}
        out += [
            Sample("fsched_power_programs_running", "Power programs running now.", labels, row["running"]),
            Sample(
                "fsched_power_programs_failed",
                "Power programs that failed in the last 24 hours.",
                labels,
                row["failed"],
            ),
        ]
    return out
