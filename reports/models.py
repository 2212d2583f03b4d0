"""The rollup tables: usage by the hour and by the day, as slurmdbd keeps them.

Each table holds both periods (``period`` = ``hour`` or ``day``); a day's rows are the sums
of its hours.  Reports read day rows for whole days and hour rows only for the ragged ends
of a range, so a report over a year reads about 365 rows per key, never the raw jobs.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Period(models.TextChoices):
    HOUR = "hour"
    DAY = "day"


class RollupState(models.Model):
    """The watermark: every hour before ``rolled_to`` is in the tables (one row)."""

    rolled_to = models.DateTimeField(null=True, blank=True)
    last_run = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"rolled to {self.rolled_to}"


class ClusterUsage(models.Model):
    """Cluster utilisation of one TRES (cpu, mem, node) in one hour or day: ``count`` units
    (the TRES count; a day's is the hourly mean) and seconds of units in each part."""

    period = models.CharField(max_length=4, choices=Period.choices)
    start = models.DateTimeField()
    tres = models.CharField(max_length=16)
    count = models.BigIntegerField(default=0)
    alloc_secs = models.FloatField(default=0)
    down_secs = models.FloatField(default=0)
    pdown_secs = models.FloatField(default=0)
    plan_secs = models.FloatField(default=0)
    idle_secs = models.FloatField(default=0)
    resv_secs = models.FloatField(default=0)
    over_secs = models.FloatField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["period", "start", "tres"], name="reports_cluster_unique")
        ]

    def __str__(self) -> str:
        return f"{self.period} {self.start:%Y-%m-%dT%H} {self.tres}"


class AssocUsage(models.Model):
    """TRES-seconds and billing-seconds of one (account, user) in one hour or day."""

    period = models.CharField(max_length=4, choices=Period.choices)
    start = models.DateTimeField()
    account = models.CharField(max_length=64)
    user = models.CharField(max_length=64)
    cpu_secs = models.FloatField(default=0)
    mem_secs = models.FloatField(default=0, help_text="MB-seconds")
    node_secs = models.FloatField(default=0)
    billing_secs = models.FloatField(default=0)
    gpu_secs = models.FloatField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["period", "start", "account", "user"], name="reports_assoc_unique"
            )
        ]
        indexes = [models.Index(fields=["period", "start"])]

    def __str__(self) -> str:
        return f"{self.period} {self.start:%Y-%m-%dT%H} {self.account}/{self.user}"


class JobUsage(models.Model):
    """Jobs of one (account, user) with one CPU count in one hour or day: how many started
    and ended, their CPU-seconds, the sums of their waits (of those started) and run times
    (of those ended), and both as histograms (reports.core.rollup.DURATION_LABELS)."""

    period = models.CharField(max_length=4, choices=Period.choices)
    start = models.DateTimeField()
    account = models.CharField(max_length=64)
    user = models.CharField(max_length=64)
    cpus = models.PositiveIntegerField()
    started = models.PositiveIntegerField(default=0)
    ended = models.PositiveIntegerField(default=0)
    cpu_secs = models.FloatField(default=0)
    wait_secs = models.FloatField(default=0)
    run_secs = models.FloatField(default=0)
    wait_hist = models.JSONField(default=list)
    run_hist = models.JSONField(default=list)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["period", "start", "account", "user", "cpus"], name="reports_job_unique"
            )
        ]
        indexes = [models.Index(fields=["period", "start"])]

    def __str__(self) -> str:
        return f"{self.period} {self.start:%Y-%m-%dT%H} {self.account}/{self.user} {self.cpus} CPUs"


class EventCount(models.Model):
    """How many times something happened in one hour or day, counted from the events:
    ``load_drain`` (a node drained by the load check; ``name`` the node) and ``load_stop``
    (a job stopped by it; ``name`` the job's user)."""

    period = models.CharField(max_length=4, choices=Period.choices)
    start = models.DateTimeField()
    what = models.CharField(max_length=16)
    name = models.CharField(max_length=64)
    count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["period", "start", "what", "name"], name="reports_event_unique")
        ]

    def __str__(self) -> str:
        return f"{self.period} {self.start:%Y-%m-%dT%H} {self.what} {self.name}: {self.count}"


class Sample(models.Model):
    """A figure that has no history in the raw rows, sampled by the rollup cycle each hour
    (the last sample of the hour stands; a day holds its hours' mean): ``hres`` (a layer's
    ``used`` of its ``total``) and ``pending`` (the pending jobs held for one reason)."""

    period = models.CharField(max_length=4, choices=Period.choices)
    start = models.DateTimeField()
    kind = models.CharField(max_length=8)
    name = models.CharField(max_length=128)
    value = models.FloatField(default=0)
    total = models.FloatField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["period", "start", "kind", "name"], name="reports_sample_unique")
        ]

    def __str__(self) -> str:
        return f"{self.period} {self.start:%Y-%m-%dT%H} {self.kind} {self.name}: {self.value}/{self.total}"


class NodeHours(models.Model):
    """One node's seconds down and planned down (powered down, FUTURE) in one hour or day;
    only nodes that were not up the whole period have a row."""

    period = models.CharField(max_length=4, choices=Period.choices)
    start = models.DateTimeField()
    node = models.CharField(max_length=64)
    down_secs = models.FloatField(default=0)
    pdown_secs = models.FloatField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["period", "start", "node"], name="reports_node_unique")
        ]

    def __str__(self) -> str:
        return f"{self.period} {self.start:%Y-%m-%dT%H} {self.node}"


class Schedule(models.TextChoices):
    DAILY = "daily"
    WEEKLY = "weekly"
    MONTHLY = "monthly"


class SavedReport(models.Model):
    """A report a user saved with a schedule: the cycle renders it over the day, week
    (Monday to Sunday) or month just ended, keeps the file and emails it to the owner when
    email is configured."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="saved_reports"
    )
    report = models.CharField(max_length=16)
    accounts = models.CharField(max_length=1024, blank=True, default="")
    users = models.CharField(max_length=1024, blank=True, default="")
    schedule = models.CharField(max_length=8, choices=Schedule.choices)
    format = models.CharField(max_length=4, default="csv")
    next_run = models.DateTimeField()
    created = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.report} {self.schedule} for {self.owner}"


class ReportFile(models.Model):
    """One rendering of a saved report, kept for download."""

    saved = models.ForeignKey(SavedReport, on_delete=models.CASCADE, related_name="files")
    start = models.DateTimeField()
    end = models.DateTimeField()
    created = models.DateTimeField()
    filename = models.CharField(max_length=128)
    content = models.BinaryField()
    emailed = models.BooleanField(default=False)

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self) -> str:
        return self.filename
