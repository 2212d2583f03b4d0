"""The reports as a cluster extension: the rollup cycle (reports/services.py)."""

from __future__ import annotations

from collections.abc import Sequence

from django.conf import settings

from cluster.extensions import ClusterExtension, Cycle
from reports import services


class ReportsExtension(ClusterExtension):
    name = "reports"

    def cycles(self) -> Sequence[Cycle]:
        return (Cycle("report_rollup", services.report_rollup, settings.FSCHED_ROLLUP_INTERVAL),)
