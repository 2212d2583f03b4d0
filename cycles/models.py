"""What django-celery-beat's PeriodicTask has no place for: where a cycle's default comes
from, and how its last run went.  The interval and ``enabled`` are the PeriodicTask's own,
which beat's DatabaseScheduler and the embedded cycle thread both read."""

from __future__ import annotations

from django.db import models
from django_celery_beat.models import PeriodicTask

SOURCES = [(s, s) for s in ("slurm.conf", "environment", "default")]


class CycleStatus(models.Model):
    task = models.OneToOneField(
        PeriodicTask, on_delete=models.CASCADE, primary_key=True, related_name="fsched_cycle"
    )
    # The row's values when nobody edits it, and what sets them: a row whose interval or
    # state differs from these was edited by hand, and a reconfigure leaves it alone.
    default_seconds = models.FloatField()
    default_enabled = models.BooleanField(default=True)
    default_source = models.CharField(max_length=16, choices=SOURCES)
    default_where = models.CharField(max_length=80, blank=True)
    last_run = models.DateTimeField(null=True, blank=True)
    last_duration = models.FloatField(null=True, blank=True, help_text="seconds")
    last_result = models.CharField(max_length=200, blank=True)

    class Meta:
        verbose_name = "cycle"
        ordering = ["task__name"]

    def __str__(self) -> str:
        return self.task.name
