"""The core's own parts of a pass, as extensions like any other: reservations, cluster
licenses and the array throttle (registered by cluster.apps, ordered by the settings)."""

from __future__ import annotations

from collections.abc import Sequence

from django.conf import settings
from django.db import transaction

from cluster.core.arrays import ArrayThrottlePlugin
from cluster.core.licenses import LicensePlugin, plain_alloc
from cluster.core.reservations import ReservationPlugin
from cluster.core.scheduler import SchedulerPlugin
from cluster.core.states import HOLDING_JOB_STATES
from cluster.extensions import LICENSE_MODES, LICENSE_ROWS, Allocation, ClusterExtension, Cycle, PassContext
from cluster.models import Job
from cluster.services import pass_snapshot, rows
from cluster.services import reservations as reservation_services

_LICENSE_ROW = ("id", "licenses", "licenses_alloc", "reservation")


def holding_license_rows() -> list[tuple[int, str, str, str]]:
    """(id, licenses, licenses_alloc, reservation) of the jobs holding resources that
    asked for licenses, by id: every pass reads them (the licenses' and HRES' plugins) and
    the simulator's log after each instant, kept between passes and brought up to date
    from the job rows written since (a submission or a start wrote the job table before
    nearly every pass, and all of them were read again: 4% of a simulated run at 10,000
    nodes; shared: read-only)."""
    return pass_snapshot.kept_rows("licenses.holding_rows", Job, _LICENSE_ROW, _holding_with_licenses())


def _read_holding_license_rows() -> list[tuple[int, str, str, str]]:
    return rows.select(Job, _LICENSE_ROW, _holding_with_licenses(), order_by=("id",))


def _holding_with_licenses() -> rows.Where:
    return {"state": _HOLDING, "licenses": rows.Not("")}


# The last rows parsed and what they hold: the kept rows are the same list until the job
# table is written, so they are parsed once (compared by identity: a list read afresh is
# parsed again whatever it holds).
_held_memo: tuple[list[tuple[int, str, str, str]], dict[int, list[tuple[str, int]]]] | None = None


def held_licenses(found: list[tuple[int, str, str, str]]) -> dict[int, list[tuple[str, int]]]:
    """job id -> the cluster licenses its LicensesAlloc says it holds, of the rows of
    :func:`holding_license_rows` that have one (shared: read-only)."""
    global _held_memo  # noqa: PLW0603 - one per process, replaced whole
    memo = _held_memo
    if memo is not None and memo[0] is found:
        return memo[1]
    held = {job_id: plain_alloc(alloc) for job_id, _lic, alloc, _resv in found if alloc}
    _held_memo = (found, held)
    return held


_HOLDING = sorted(s.value for s in HOLDING_JOB_STATES)


class ReservationsExtension(ClusterExtension):
    """A job of a reservation not active yet waits for that alone: first of the gates."""

    name = "reservations"

    def pass_plugins(self, ctx: PassContext) -> Sequence[SchedulerPlugin]:
        views = reservation_services.pass_views(ctx.now)
        return (ReservationPlugin(views, reservation_services.pending_accounts()),)

    def cycles(self) -> Sequence[Cycle]:
        # A MAINT reservation's nodes are flagged MAINTENANCE when it begins, not when it
        # was created, and lose the flag when it ends.
        return (
            Cycle(
                "maintenance",
                run_maintenance,
                settings.FSCHED_HEALTH_INTERVAL,
                setting="FSCHED_HEALTH_INTERVAL",
            ),
        )


def run_maintenance() -> str:
    """MAINT reservations' nodes flagged MAINTENANCE when they begin, unflagged when they end."""
    with transaction.atomic():
        changed = reservation_services.maintenance_sync()
    return f"changed={len(changed)}"


_PLUGIN = "licenses.plugin"


class LicensesExtension(ClusterExtension):
    """slurm.conf's Licenses=: cheap counters.  What running jobs hold comes from their
    LicensesAlloc, written when they started; names an extension manages (hres) are
    left to it (``ctx.shared[LICENSE_MODES]``)."""

    name = "licenses"

    def prepare_pass(self, ctx: PassContext) -> None:
        ctx.shared[LICENSE_ROWS] = holding_license_rows()

    def pass_plugins(self, ctx: PassContext) -> Sequence[SchedulerPlugin]:
        held = held_licenses(ctx.shared[LICENSE_ROWS])
        plugin = LicensePlugin(ctx.cfg.licenses, ctx.shared.get(LICENSE_MODES, {}), held)
        ctx.shared[_PLUGIN] = plugin
        return (plugin,)

    def jobs_allocated(self, ctx: PassContext, allocation: Allocation) -> None:
        taken = ctx.shared[_PLUGIN].taken
        for job_id in allocation.kept():
            allocation.licenses.setdefault(job_id, []).extend(f"{n}:{c}" for n, c in taken.get(job_id, ()))


class ArraysExtension(ClusterExtension):
    """``sbatch -a 1-100%N``: at most N tasks of an array at once."""

    name = "arrays"

    def pass_plugins(self, ctx: PassContext) -> Sequence[SchedulerPlugin]:
        return (ArrayThrottlePlugin(),)
