"""The latest use of each running step's tasks on each node, as the agents report it with
their heartbeats (``step_usage``): what sstat prints.

Imported by :mod:`cluster.models` so that Django registers it with the ``cluster`` app.
"""

from __future__ import annotations

from django.db import models


class StepUsage(models.Model):
    """One step's tasks on one node: ``tasks`` is the report's list as received (each
    task's id, pids and current and largest figures, slurmwords.agent_messages.TaskUsage).
    A row is replaced by each report of its node's agent and removed once a report no
    longer holds its step."""

    job = models.ForeignKey("cluster.Job", on_delete=models.CASCADE, related_name="step_usage")
    step = models.CharField(max_length=16, help_text='"batch" or the step number')
    node = models.CharField(max_length=128)
    tasks = models.JSONField(default=list)
    sampled_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["job", "step", "node"], name="cluster_step_usage_one_per_node")
        ]
        indexes = [models.Index(fields=["node"])]

    def __str__(self) -> str:
        return f"{self.job_id}.{self.step} on {self.node}"


class StepStatistics(models.Model):
    """A step's figures on one node kept for accounting (sacct, seff) after the step has
    ended: ``tasks``, the last report of its agent (what a StepUsage row held, kept past
    it), and ``ends``, each task's figures from its reaping (``step_done``'s, srun steps
    only), which a step shorter than the agent's sampling has alone. ``run`` is the job's
    run the figures are of (a requeued job's batch step starts again)."""

    job = models.ForeignKey("cluster.Job", on_delete=models.CASCADE, related_name="step_statistics")
    run = models.PositiveIntegerField(default=0)
    step = models.CharField(max_length=16, help_text='"batch" or the step number')
    node = models.CharField(max_length=128)
    tasks = models.JSONField(default=list)
    ends = models.JSONField(default=list)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["job", "run", "step", "node"], name="cluster_step_statistics_one_per_node"
            )
        ]

    def __str__(self) -> str:
        return f"{self.job_id}.{self.step} on {self.node} (run {self.run})"
