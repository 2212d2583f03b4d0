"""The earlier runs of requeued jobs: what ``sacct -D`` lists before a job's last run.

Slurm's accounting keeps each run of a requeued job as its own record (slurmctld's
``batch_requeue_fini`` starts a new one); fsched keeps one Job row, which a requeue
(``requeue_now``) resets for the next run, so the run that ended is kept here first.

Imported by :mod:`cluster.models` so that Django registers it with the ``cluster`` app.
"""

from __future__ import annotations

from django.db import models


class JobRun(models.Model):
    """One finished run of a job that was requeued after it: the fields a job's own
    accounting line shows that a requeue resets, as they were when that run ended."""

    job = models.ForeignKey("cluster.Job", on_delete=models.CASCADE, related_name="earlier_runs")
    run = models.PositiveIntegerField(help_text="the job's restart count during this run (0: the first)")
    # What the job could be changed in while pending again (scontrol update): this run's.
    name = models.CharField(max_length=256)
    partition = models.CharField(max_length=64)
    account = models.CharField(max_length=64, blank=True)
    qos = models.CharField(max_length=64, blank=True)
    time_limit = models.PositiveIntegerField(null=True, blank=True)
    submit_time = models.DateTimeField()
    eligible_time = models.DateTimeField(null=True, blank=True)
    start_time = models.DateTimeField()
    end_time = models.DateTimeField()
    state = models.CharField(max_length=16, help_text="what ended the run: REQUEUED, NODE_FAIL ...")
    reason = models.CharField(max_length=64, blank=True)
    exit_code = models.IntegerField(default=0)
    exit_signal = models.IntegerField(default=0)
    node_list = models.TextField(blank=True)
    nnodes = models.PositiveIntegerField(default=0)
    alloc_cpus = models.PositiveIntegerField(default=0)
    alloc_tres = models.TextField(blank=True)
    paused_seconds = models.PositiveIntegerField(default=0)
    max_rss_kb = models.PositiveBigIntegerField(null=True, blank=True)
    total_cpu_secs = models.FloatField(null=True, blank=True)
    # The run's steps as accounting lists them (the API's step objects): its ``batch`` step
    # if its script was launched.
    steps = models.JSONField(default=list, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "run"], name="cluster_job_run_once")]

    def __str__(self) -> str:
        return f"{self.job_id} run {self.run} ({self.state})"
