"""The configuration in force's SchedulerParameters, as the pass and the cycles use them
(cluster/core/sched_params.py parses and checks them)."""

from __future__ import annotations

import logging

from django.conf import settings

from cluster.core.sched_params import SchedParams, main_loop_budget, parse_scheduler_parameters
from cluster.core.scheduler import SchedulerConfig
from cluster.models import ClusterConfig
from cluster.services import pass_snapshot

log = logging.getLogger(__name__)


def config() -> ClusterConfig:
    """The configuration in force (``ClusterConfig.current``), whose revision a pass would
    otherwise read several times: kept inside ``pass_snapshot.keep()`` until its row is
    written."""
    return pass_snapshot.kept_value("cluster.config", (ClusterConfig,), ClusterConfig.current)


def current() -> SchedParams:
    return pass_snapshot.kept_value("cluster.sched_params", (ClusterConfig,), _parsed)


def _parsed() -> SchedParams:
    text = ClusterConfig.current().options.get("SchedulerParameters")
    try:
        return parse_scheduler_parameters(text)
    except ValueError as exc:
        # Checked when slurm.conf is read; a value stored before that check existed must
        # not stop every pass, so it is taken as slurmctld takes a bad one: the defaults.
        log.error("SchedulerParameters: %s; using the defaults", exc)
        return SchedParams()


def pass_config(*, backfill: bool) -> SchedulerConfig:
    """The core's configuration for one pass."""
    params = current()
    return SchedulerConfig(
        backfill=backfill,
        bf_max_job_test=params.bf_max_job_test,
        bf_window=params.bf_window,
        max_starts_per_pass=params.sched_max_job_start or None,
        bf_max_job_start=params.bf_max_job_start or None,
        max_sched_time=main_loop_budget(params, config().option_int("MessageTimeout", 10)),
    )


def event_queue_depth() -> int:
    """The jobs per partition an event-driven pass considers: slurm.conf's
    default_queue_depth, else the controller's FSCHED_QUEUE_DEPTH."""
    return current().default_queue_depth or settings.FSCHED_QUEUE_DEPTH
