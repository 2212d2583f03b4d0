"""The latest load indices each node's agent reported (docs/load-thresholds.md)."""

from __future__ import annotations

from django.db import models


class NodeLoad(models.Model):
    """One row per node, replaced by each heartbeat that carries indices.  Keyed by the
    node's name, as the agent names it, so that a node deleted and created again finds
    its figures replaced rather than orphaned."""

    node = models.CharField(max_length=64, unique=True)
    mem = models.BigIntegerField(help_text="available memory, MiB")
    ut = models.FloatField(help_text="CPU utilisation %, 15 s EMA")
    r15s = models.FloatField()
    r1m = models.FloatField()
    r15m = models.FloatField()
    run_queue = models.PositiveIntegerField(help_text="the latest sample's run queue")
    at = models.DateTimeField()

    def __str__(self) -> str:
        return self.node

    def indices(self) -> dict[str, float]:
        return {"mem": self.mem, "ut": self.ut, "r15s": self.r15s, "r1m": self.r1m, "r15m": self.r15m}


class NodeLoadSample(models.Model):
    """The indices over time, for the node page's chart: at most one row per node per load
    check and per ``FSCHED_LOAD_SAMPLE_INTERVAL``, written by the check in one insert and
    pruned by it beyond ``FSCHED_LOAD_HISTORY_HOURS`` (load/history.py)."""

    node = models.CharField(max_length=64)
    time = models.DateTimeField(help_text="when the controller received these figures")
    mem = models.BigIntegerField(help_text="available memory, MiB")
    ut = models.FloatField(help_text="CPU utilisation %, 15 s EMA")
    r15s = models.FloatField()
    r1m = models.FloatField()
    r15m = models.FloatField()

    class Meta:
        indexes = [
            # The chart reads one node's window; the check reads the last minutes of
            # every node and prunes the oldest rows.
            models.Index(fields=["node", "time"], name="load_sample_node_time"),
            models.Index(fields=["time"], name="load_sample_time"),
        ]

    def __str__(self) -> str:
        return f"{self.node} {self.time:%Y-%m-%dT%H:%M:%S}"
