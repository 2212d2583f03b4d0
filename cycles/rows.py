"""The cycles' rows: django-celery-beat's PeriodicTask (one per cycle, task ``fsched.cycle``
with the cycle's name as argument) and our CycleStatus beside it.

Beat's DatabaseScheduler reads the PeriodicTask rows in distributed mode; the embedded
cycle thread reads them through :class:`BeatRows` (installed into ``cluster.cycles``),
looking at beat's change marker (``PeriodicTasks.last_update``, bumped by every save of a
PeriodicTask or an IntervalSchedule) before it reads them again.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
from collections.abc import Mapping
from datetime import datetime, timedelta

from django.db import DatabaseError, transaction
from django_celery_beat.models import IntervalSchedule, PeriodicTask, PeriodicTasks

from cluster import cycles as cluster_cycles
from cluster.models import ClusterConfig
from cycles.defaults import ADMIN, Default, default_for
from cycles.models import CycleStatus

log = logging.getLogger(__name__)

TASK = "fsched.cycle"  # cluster.tasks.cycle: runs the cycle named by its argument


def interval_seconds(schedule: IntervalSchedule) -> float:
    return timedelta(**{schedule.period: schedule.every}).total_seconds()


def interval_for(seconds: float) -> IntervalSchedule:
    """The IntervalSchedule of ``seconds`` (shared by every row of that interval, as beat's
    own admin shares them); below a second or fractional, in microseconds."""
    if seconds <= 0 or not math.isfinite(seconds):
        raise ValueError(f"interval must be a positive number of seconds, not {seconds}")
    if seconds == int(seconds):
        every, period = int(seconds), IntervalSchedule.SECONDS
    else:
        every, period = round(seconds * 1_000_000), IntervalSchedule.MICROSECONDS
    found = IntervalSchedule.objects.filter(every=every, period=period).order_by("pk").first()
    return found or IntervalSchedule.objects.create(every=every, period=period)


# A cycle's run that a worker has not started within this many of its intervals (and at
# least these seconds) is dropped by Celery: the next one is already on its way. Without
# it, runs queued while the workers were busy all ran on their return, back to back (23
# scheduler passes in 4 s, an hour after the interval was set to an hour), where Slurm's
# loops simply start late.
EXPIRY_INTERVALS = 2
EXPIRY_MIN_SECONDS = 5


def expiry_for(seconds: float) -> int:
    """Beat's ``expire_seconds`` for a cycle run every ``seconds``."""
    return max(EXPIRY_MIN_SECONDS, math.ceil(EXPIRY_INTERVALS * seconds))


def expiry_follows_interval(*, instance: PeriodicTask, raw: bool = False, **_: object) -> None:
    """Before any save of a cycle's row, by fsched or on beat's own admin page."""
    if raw or instance.task != TASK or instance.interval_id is None or instance.expires is not None:
        return  # a fixed expiry date set by hand on beat's page is left as set
    instance.expire_seconds = expiry_for(interval_seconds(instance.interval))


def interval_edited(status: CycleStatus) -> bool:
    return not math.isclose(interval_seconds(status.task.interval), status.default_seconds)


def enabled_edited(status: CycleStatus) -> bool:
    return status.task.enabled != status.default_enabled


def source(status: CycleStatus) -> str:
    """Where the row's interval comes from, as the admin shows it."""
    if interval_edited(status):
        return ADMIN
    return (
        f"{status.default_source} ({status.default_where})" if status.default_where else status.default_source
    )


def defaults(options: Mapping[str, object] | None = None) -> dict[str, tuple[Default, str]]:
    """name → (its default, its description) for every cycle of this process."""
    if options is None:
        # Not ClusterConfig.current(): that would create the row (and run during migrate).
        options = ClusterConfig.objects.filter(pk=1).values_list("options", flat=True).first() or {}
    out = {}
    for spec in cluster_cycles.cycle_specs():
        found = default_for(
            interval=spec.interval,
            setting=spec.setting,
            slurm_parameter=spec.slurm_parameter,
            options=options,
            environ=os.environ,
        )
        if found.warning:
            log.warning("%s", found.warning)
        out[spec.name] = (found, (spec.run.__doc__ or "").strip().split("\n")[0][:200])
    return out


@transaction.atomic
def cycles_sync(*, options: Mapping[str, object] | None = None) -> list[str]:
    """A row for every cycle; a row nobody edited follows its new default (a changed
    slurm.conf or setting).  Returns the names of the rows created or changed."""
    changed = []
    for name, (default, description) in defaults(options).items():
        status = CycleStatus.objects.select_related("task__interval").filter(task__name=name).first()
        if status is None:
            task = PeriodicTask.objects.filter(name=name).first() or PeriodicTask(name=name)
            task.task = TASK
            task.args = json.dumps([name])
            task.interval = interval_for(default.seconds)
            task.enabled = default.enabled
            task.description = description
            task.save()
            _store_default(CycleStatus(task=task), default)
            changed.append(name)
            continue
        task = status.task
        fields = []
        if not interval_edited(status) and not math.isclose(default.seconds, status.default_seconds):
            task.interval = interval_for(default.seconds)
            fields.append("interval")
        if not enabled_edited(status) and default.enabled != status.default_enabled:
            task.enabled = default.enabled
            fields.append("enabled")
        if task.expires is None and task.expire_seconds != expiry_for(interval_seconds(task.interval)):
            fields.append("expiry")  # a row of a release without expiries: the save sets it
        if fields:
            task.save()
        if (default.seconds, default.enabled, default.source, default.where) != (
            status.default_seconds,
            status.default_enabled,
            status.default_source,
            status.default_where,
        ):
            _store_default(status, default)
            fields.append("default")
        if fields:
            changed.append(name)
    return changed


def _store_default(status: CycleStatus, default: Default) -> None:
    status.default_seconds = default.seconds
    status.default_enabled = default.enabled
    status.default_source = default.source
    status.default_where = default.where
    status.save()


@transaction.atomic
def cycle_update(*, status: CycleStatus, seconds: float, enabled: bool) -> None:
    """An administrator's edit: beat and the embedded thread see it at their next look."""
    task = PeriodicTask.objects.select_for_update().get(pk=status.task.pk)
    task.interval = interval_for(seconds)
    task.enabled = enabled
    task.save()
    status.task = task


@transaction.atomic
def cycle_reset(*, status: CycleStatus) -> None:
    """Back to the default (slurm.conf, environment or fsched's): it follows it again."""
    cycle_update(status=status, seconds=status.default_seconds, enabled=status.default_enabled)


def synced_after_migrate(*, using: str = "default", **_: object) -> None:
    if using != "default":
        return
    try:
        cycles_sync()
    except DatabaseError as exc:  # a partial migration (``migrate cluster 0003``)
        log.warning("cycles' rows not synchronised after migrate: %s", exc)


def synced_after_config(*, instance: ClusterConfig, raw: bool = False, **_: object) -> None:
    if raw:  # loaddata
        return
    options = dict(instance.options)

    def sync() -> None:
        try:
            cycles_sync(options=options)
        except DatabaseError as exc:
            log.warning("cycles' rows not synchronised after a reconfigure: %s", exc)

    transaction.on_commit(sync)


class BeatRows:
    """The rows as ``cluster.cycles`` reads them: read again only after beat's change marker moved."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._marker: datetime | None = None
        self._plan: dict[str, tuple[float, bool]] = {}

    def plan(self) -> Mapping[str, tuple[float, bool]]:
        marker = PeriodicTasks.objects.filter(ident=1).values_list("last_update", flat=True).first()
        with self._lock:
            if marker is not None and marker == self._marker:
                return self._plan
        plan = {
            name: (timedelta(**{period: every}).total_seconds(), enabled)
            for name, every, period, enabled in PeriodicTask.objects.filter(
                task=TASK, interval__isnull=False
            ).values_list("name", "interval__every", "interval__period", "enabled")
        }
        with self._lock:
            self._marker, self._plan = marker, plan
        return plan

    def record(self, name: str, *, started: datetime, seconds: float, result: str) -> None:
        # An UPDATE, not a save: a run is no change of the schedule (the marker stays).
        CycleStatus.objects.filter(task__name=name).update(
            last_run=started, last_duration=round(seconds, 6), last_result=result[:200]
        )

    def sync(self) -> None:
        cycles_sync()
