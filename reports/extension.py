"""The reports as a cluster extension: the rollup cycle (reports/services.py), which also
renders the scheduled reports it made due (reports/scheduled.py)."""

from __future__ import annotations

from collections.abc import Sequence

from django.conf import settings

from cluster.extensions import ClusterExtension, Cycle
from reports import scheduled, services


def rollup_and_scheduled() -> str:
    """The rollup, then the saved reports whose period it completed."""
    return f"{services.report_rollup()}; {scheduled.scheduled_reports_run()}"


class ReportsExtension(ClusterExtension):
    name = "reports"

    def cycles(self) -> Sequence[Cycle]:
        return (
            Cycle(
                "report_rollup",
                rollup_and_scheduled,
                settings.FSCHED_ROLLUP_INTERVAL,
                setting="FSCHED_ROLLUP_INTERVAL",
            ),
        )
