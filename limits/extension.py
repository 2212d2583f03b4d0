"""What the cluster core asks of the accounting limits, as a cluster extension."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from django.conf import settings

from cluster.core.scheduler import PassResult, SchedulerPlugin, Snapshot
from cluster.extensions import (
    AccountRoles,
    ClusterExtension,
    Cycle,
    OverviewPanel,
    PassContext,
    PriorityReport,
    Sample,
)
from limits import coordinators, metrics, pending, priority_report, selectors, services
from limits.models import QOS


class LimitsExtension(ClusterExtension):
    """AccountingStorageEnforce: the submission's account and QOS, the pass's gates
    before any node search, multifactor priorities and the usage cycle."""

    name = "limits"

    def config_loaded(self, checked: Any, *, actor: str, recover: bool, version: int) -> None:
        # Start and reconfigure: PriorityUsageResetPeriod=NOW, UsageFactor rebooked.
        services.usage_reload()

    def submit_fields(self, common: Mapping[str, Any], *, count: int, now: datetime, cfg: Any) -> Mapping:
        return services.submit_fields(common, count=count, now=now, cfg=cfg)

    def pass_plugins(self, ctx: PassContext) -> Sequence[SchedulerPlugin]:
        return services.pass_plugins()

    def pass_priority(self, ctx: PassContext, snap: Snapshot) -> Mapping[str, Any]:
        return services.pass_priority(snap, ctx.plugins)

    def priority_report(self, ctx: PassContext, snap: Snapshot) -> PriorityReport | None:
        return priority_report.priority_report(snap, ctx.plugins)

    def priority_type(self) -> str | None:
        return selectors.MULTIFACTOR if selectors.context().multifactor else None

    def after_apply(self, ctx: PassContext, result: PassResult) -> None:
        services.apply_pass(result, ctx.plugins, ctx.now)

    def metrics(self) -> Sequence[Sample]:
        return metrics.samples()

    def overview_panels(self) -> Sequence[OverviewPanel]:
        return metrics.panels()

    def cycles(self) -> Sequence[Cycle]:
        # Charge running jobs, decay, reset.
        return (
            Cycle(
                "usage",
                services.usage_cycle_run,
                settings.FSCHED_USAGE_INTERVAL,
                setting="FSCHED_USAGE_INTERVAL",
            ),
        )

    def qos_preemption(self) -> Mapping[str, tuple[int, frozenset[str]]]:
        # sacctmgr modify qos high set Preempt=low
        out = {}
        for row in QOS.objects.all():
            preempts = frozenset(n.strip() for n in (row.preempt or "").split(",") if n.strip())
            out[row.name] = (row.priority, preempts)
        return out

    def account_roles(self, username: str) -> AccountRoles:
        return coordinators.account_roles(username)

    def pending_causes(self, job: Any) -> list:
        return pending.pending_causes(job)
