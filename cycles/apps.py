from __future__ import annotations

from django.apps import AppConfig


class CyclesAppConfig(AppConfig):
    """The periodic cycles as rows an administrator edits (django-celery-beat's
    PeriodicTask), read by beat's DatabaseScheduler and by the embedded cycle thread."""

    name = "cycles"
    verbose_name = "Cycles"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from auditlog.registry import auditlog  # noqa: PLC0415
        from django.db.models.signals import post_migrate, post_save, pre_save  # noqa: PLC0415
        from django_celery_beat.models import IntervalSchedule, PeriodicTask  # noqa: PLC0415

        from cluster import cycles  # noqa: PLC0415 - apps are not ready at import
        from cluster.models import ClusterConfig  # noqa: PLC0415
        from cycles import rows  # noqa: PLC0415
        from cycles.models import CycleStatus  # noqa: PLC0415

        # An edit of a cycle is audited; beat's bookkeeping of each run is not.
        auditlog.register(PeriodicTask, exclude_fields=["last_run_at", "total_run_count", "date_changed"])
        auditlog.register(IntervalSchedule)
        auditlog.register(CycleStatus, exclude_fields=["last_run", "last_duration", "last_result"])

        cycles.install_rows(rows.BeatRows())
        pre_save.connect(rows.expiry_follows_interval, sender=PeriodicTask)
        post_migrate.connect(rows.synced_after_migrate, sender=self)
        # A reconfigure (or any save of the configuration) may change sched_interval.
        post_save.connect(rows.synced_after_config, sender=ClusterConfig)
