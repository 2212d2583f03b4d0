"""The Celery app (distributed mode); beat's schedule comes from cluster.cycles.periodic()."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("fsched")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["cluster"])


@app.on_after_finalize.connect
def _beat_schedule(sender: Celery, **_: object) -> None:
    import django  # noqa: PLC0415

    django.setup()  # the extensions' cycles are known once the apps are ready
    from cluster.cycles import periodic  # noqa: PLC0415 - needs Django set up

    for name, (_func, interval) in periodic().items():
        sender.add_periodic_task(interval, sender.signature("fsched.cycle", args=(name,)), name=name)
