"""The Celery app (distributed mode).  Beat's schedule is the cycles' rows in the database
(django-celery-beat's DatabaseScheduler, settings.CELERY_BEAT_SCHEDULER): beat brings them
up to date at its start (cluster.cycles.sync_rows) and reads them again whenever they
change, so an edit in the admin is in force without a restart."""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import beat_init, worker_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("fsched")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["cluster", "whatif"])


@beat_init.connect
def _rows_for_beat(**_: object) -> None:
    import django  # noqa: PLC0415

    django.setup()  # the extensions' cycles are known once the apps are ready
    from cluster.cycles import sync_rows  # noqa: PLC0415 - needs Django set up

    sync_rows()


@worker_init.connect
def _collector_for_worker(**_: object) -> None:
    """The worker runs the passes and cycles and holds their kept state (cluster/collector.py),
    and logs at SlurmctldDebug's level as the server does (cluster/log_levels.py)."""
    from cluster import collector, log_levels  # noqa: PLC0415

    collector.tune()
    log_levels.follow()
