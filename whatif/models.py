"""A what-if: one workload simulated under two configurations, A and B (docs/whatif.md).

The row keeps both configurations' files, so that B can be picked again later as a saved
configuration ("name"), whatever the cluster's configuration has become; and both reports
once the simulations end."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class WhatIf(models.Model):
    QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
    STATES = ((QUEUED, QUEUED), (RUNNING, RUNNING), (DONE, DONE), (FAILED, FAILED))

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    created = models.DateTimeField()
    name = models.CharField(max_length=64, blank=True, default="", help_text="B saved under this name")
    base = models.CharField(max_length=128, default="current", help_text="what A is: current or a saved name")
    files_a = models.JSONField(default=dict)
    files_b = models.JSONField(default=dict)
    changes = models.JSONField(default=list, help_text="[[what, before, after], ...] from A to B")
    workload = models.CharField(max_length=256, help_text="history:DAYS, sample, or an uploaded file's name")
    workload_text = models.TextField(blank=True, default="")
    state = models.CharField(max_length=8, choices=STATES, default=QUEUED)
    progress = models.JSONField(default=dict)
    report_a = models.JSONField(null=True, blank=True)
    report_b = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    finished = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("-id",)
        constraints = [
            models.UniqueConstraint(fields=["name"], condition=~models.Q(name=""), name="whatif_unique_name")
        ]

    def __str__(self) -> str:
        return f"what-if {self.pk}"
