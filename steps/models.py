"""A job's steps started by srun (``N.0``, ``N.1`` ...); the batch step is derived from the job."""

from __future__ import annotations

from django.db import models

from cluster.models import Job


class Step(models.Model):
    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="steps")
    # slurmwords.step_ids: srun's steps by number from 0, the interactive step SLURM_INTERACTIVE_STEP.
    step_id = models.PositiveBigIntegerField()
    name = models.CharField(max_length=256, default="")
    state = models.CharField(max_length=16, default="RUNNING")
    exit_code = models.IntegerField(default=0)
    exit_signal = models.IntegerField(default=0)
    node_list = models.TextField(default="")
    num_nodes = models.PositiveIntegerField(default=1)
    num_tasks = models.PositiveIntegerField(default=1)
    cpus_per_task = models.PositiveIntegerField(default=1)
    tasks_per_node = models.CharField(max_length=256, default="")
    # [[node, [task ids], [the job's CPU indices on the node]], ...] in node order.
    layout = models.JSONField(default=list)
    overlap = models.BooleanField(default=False, help_text="srun --overlap: shares the job's CPUs")
    interactive = models.BooleanField(
        default=False, help_text="srun --interactive: slurmctld's interactive step, one per job"
    )
    argv = models.JSONField(default=list)
    start_time = models.DateTimeField()
    end_time = models.DateTimeField(null=True, blank=True)
    # {node: [exit_code, signal]} of the nodes whose tasks have all ended.
    reports = models.JSONField(default=dict)
    error = models.CharField(max_length=512, blank=True, default="")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "step_id"], name="steps_one_id_per_job")]
        indexes = [models.Index(fields=["state"])]

    def __str__(self) -> str:
        return f"{self.job_id}.{self.step_id}"
