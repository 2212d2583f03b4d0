"""Power saving's records: each run of a power program, and the controller-wide state.

The node side (power flags, ``power_entered``, ``power_action``) lives on
``cluster.models.Node``; the decisions come from the pure core in ``power.core.policy``.
"""

from __future__ import annotations

from django.db import models


class PowerRun(models.Model):
    """One run of ResumeProgram, SuspendProgram, ResumeFailProgram or a PowerAction.

    Output is not kept (Slurm's power_save.html, "Resume and Suspend Programs"); what the
    console shows is when it ran, for which nodes, how long, its exit code and why a resume
    failed.
    """

    class Kind(models.TextChoices):
        RESUME = "resume"
        SUSPEND = "suspend"
        RESUME_FAIL = "resume_fail"

    kind = models.CharField(max_length=16, choices=Kind.choices, db_index=True)
    program = models.CharField(max_length=256, help_text="PowerAction name or program path")
    argv = models.JSONField(default=list, blank=True)
    nodes = models.TextField(help_text="hostlist expression")
    host = models.CharField(max_length=64, blank=True, default="", help_text="node agent; empty = controller")
    jobs = models.JSONField(default=list, blank=True, help_text="jobs waiting for a resume")
    pid = models.IntegerField(null=True, blank=True)
    started = models.DateTimeField(db_index=True)
    ended = models.DateTimeField(null=True, blank=True)
    exit_code = models.IntegerField(null=True, blank=True, help_text="negative: killed by that signal")
    failure = models.CharField(max_length=512, blank=True, default="", help_text="why it failed")

    class Meta:
        ordering = ["-started", "-id"]

    def __str__(self) -> str:
        return f"{self.kind} {self.nodes} at {self.started:%Y-%m-%dT%H:%M:%S}"

    @property
    def duration(self) -> float | None:
        if self.ended is None:
            return None
        return (self.ended - self.started).total_seconds()

    @property
    def failed(self) -> bool:
        return bool(self.failure) or (self.exit_code is not None and self.exit_code != 0)


class PowerState(models.Model):
    """The controller-wide power-save state (one row), shared by every process.

    ``auto_enabled`` is the sticky "automatic power saving is on" flag (a runtime
    per-node SuspendTime can turn it on until the next reconfigure); ``rates`` is the
    core's last ``RateState``; ``dirty`` asks for a cycle before ``power_save_interval``.
    """

    config_version = models.PositiveIntegerField(default=0)
    auto_enabled = models.BooleanField(default=False)
    rates = models.JSONField(default=dict, blank=True)
    last_run = models.DateTimeField(null=True, blank=True)
    dirty = models.BooleanField(default=False)
    # SuspendExcNodes/Parts/States in force as {"nodes", "parts", "states"} texts: the
    # file's at (re)configure, or what ``scontrol update`` set (KeepPowerSaveSettings
    # keeps them across a reconfigure).  None before the first load.
    exclusions = models.JSONField(null=True, blank=True)

    def __str__(self) -> str:
        return f"power state (auto={'on' if self.auto_enabled else 'off'})"

    @classmethod
    def current(cls) -> PowerState:
        return cls.objects.get_or_create(pk=1)[0]


class NodePowerActions(models.Model):
    """What a node's agent reported at its last registration about the ``Location=slurmd``
    PowerActions of its slurm.conf: each name with why the node cannot run its program
    ("" when it can).  The controller cannot see a node's files; power requests use it."""

    node = models.CharField(max_length=64, unique=True)
    actions = models.JSONField(default=dict, blank=True)
    reported = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.node}: {self.actions}"

    def unrunnable(self) -> dict[str, str]:
        return {name: why for name, why in self.actions.items() if why}


class CloudInstance(models.Model):
    """One cloud instance a node ran on (Slurm's power_save.html, "Cloud Accounting"): its
    InstanceId, InstanceType and Extra from ``time_start`` to ``time_end`` (None while it
    is the node's current instance).  A change of InstanceId or InstanceType, reported by
    the node's agent at registration or set with ``scontrol update``, ends the current
    record and starts a new one; what ``sacctmgr show instance`` and the REST listing show."""

    node_name = models.CharField(max_length=64, db_index=True)
    instance_id = models.CharField(max_length=128, blank=True, default="")
    instance_type = models.CharField(max_length=128, blank=True, default="")
    extra = models.TextField(blank=True, default="")
    time_start = models.DateTimeField()
    time_end = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["time_start", "id"]

    def __str__(self) -> str:
        return f"{self.node_name} {self.instance_id} {self.instance_type}"
