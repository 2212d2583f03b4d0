"""What of the hierarchical resources must be shared by every controller process.

The layers themselves are not stored: each process rebuilds its :class:`hres.core.layers.HresState`
from the resources.yaml in force (:class:`ResourcesFile`) plus the runtime updates
(:class:`LayerUpdate`, replayed in order), and the usage from the running jobs'
``LicensesAlloc``.  So several server processes and Celery workers always agree, and a
restart loses nothing that Slurm's hres.html says must survive.
"""

from __future__ import annotations

from django.db import models


class ResourcesFile(models.Model):
    """The resources.yaml in force (one row): its text, validated when it was loaded."""

    path = models.CharField(max_length=1024, blank=True, default="", help_text="empty: no resources.yaml")
    text = models.TextField(blank=True, default="")
    version = models.PositiveIntegerField(default=0)
    loaded_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.path or '(no resources.yaml)'} (v{self.version})"

    @classmethod
    def current(cls) -> ResourcesFile:
        return cls.objects.get_or_create(pk=1)[0]


class LayerUpdate(models.Model):
    """One ``scontrol update HRESName=...`` in force, replayed over resources.yaml.

    ``changes`` holds what was given: ``nodes`` (as typed, with ``+``/``-``), ``count``,
    ``base``, ``disable_layer``, ``disable_hres``.  A reconfigure or restart reads
    resources.yaml again and drops these (Slurm's hres.html, "Runtime Updates"), except the
    node changes of dynamic and cloud nodes (``keep``).
    """

    time = models.DateTimeField()
    user = models.CharField(max_length=64, blank=True, default="")
    resource = models.CharField(max_length=128)
    layer = models.CharField(max_length=128, blank=True, default="")
    changes = models.JSONField(default=dict)
    keep = models.BooleanField(default=False, help_text="survives a reconfigure (dynamic nodes)")

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        what = f"{self.resource}/{self.layer}" if self.layer else self.resource
        return f"{what}: {self.changes}"


class JobPluginRun(models.Model):
    """What hres/lua knows of one run of a job on one resource with a plugin: the job's
    plugin arguments and ``prep`` as the pre-run left it (payload included), fixed when
    the job starts and sent to its nodes.  ``epilog_done``: the controller epilog (or the
    revoke) has run for this run, so it is never called twice."""

    job = models.ForeignKey("cluster.Job", on_delete=models.CASCADE, related_name="hres_plugin_runs")
    run = models.PositiveIntegerField(help_text="the job's restart count")
    resource = models.CharField(max_length=128)
    position = models.PositiveIntegerField(default=0, help_text="the resource's place in resources.yaml")
    prep = models.JSONField(default=dict)
    nodes = models.TextField(blank=True, default="", help_text="the run's nodes, for its epilog")
    epilog_done = models.BooleanField(default=False, db_index=True)

    class Meta:
        ordering = ["job_id", "run", "position"]
        constraints = [
            models.UniqueConstraint(fields=["job", "run", "resource"], name="hres_job_plugin_run_unique")
        ]

    def __str__(self) -> str:
        return f"job {self.job_id} run {self.run}: {self.resource}"
