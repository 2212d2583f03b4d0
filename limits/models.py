"""The accounting database (Slurm's resource_limits.html, "Configuration"): clusters, the account
tree, users, associations (cluster, account, user, optional partition), QOS and TRES, the
decayed usage of every association and QOS, and per-job accounting state.

Limits are stored as sacctmgr writes them: counts as integers (NULL = not set here), times
in minutes, TRES limits as TRES strings (``cpu=1500,mem=200G``), so the admin edits the
same text an administrator types and the audit log shows it before/after.  The limit
columns are generated from the pure core's :class:`limits.core.policy.AssocLimits` and
:class:`limits.core.policy.QOSLimits`, so the two never drift apart.  Everything here is written
through :mod:`limits.services` only.
"""

from __future__ import annotations

import dataclasses

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models

from cluster.models import Job
from limits.core.policy import AssocLimits, QOSLimits
from slurmwords.tres import TresError, parse_tres_limits

TRES_LIMIT_FIELDS = {
    f.name
    for cls in (AssocLimits, QOSLimits)
    for f in dataclasses.fields(cls)
    if f.default_factory is not dataclasses.MISSING
}
ASSOC_LIMIT_FIELDS = tuple(f.name for f in dataclasses.fields(AssocLimits))
QOS_LIMIT_FIELDS = tuple(f.name for f in dataclasses.fields(QOSLimits))


def validate_tres(value: str) -> None:
    """A TRES limit string as sacctmgr takes it (``cpu=100,gres/gpu=2``)."""
    try:
        parse_tres_limits(value)
    except TresError as exc:
        raise ValidationError(str(exc)) from None


def _limit_columns(limits_cls: type) -> dict[str, models.Field]:
    out: dict[str, models.Field] = {}
    for f in dataclasses.fields(limits_cls):
        label = f.name
        if f.name in TRES_LIMIT_FIELDS:
            out[f.name] = models.CharField(
                max_length=512, blank=True, default="", validators=[validate_tres], help_text="TRES string"
            )
        else:
            minutes = "wall" in f.name
            out[f.name] = models.IntegerField(
                null=True,
                blank=True,
                validators=[MinValueValidator(0)],
                help_text=("minutes; " if minutes else "") + f"empty = not set ({label})",
            )
    return out


def _abstract(name: str, limits_cls: type) -> type[models.Model]:
    attrs = {
        "__module__": __name__,
        "Meta": type("Meta", (), {"abstract": True}),
        **_limit_columns(limits_cls),
    }
    return type(name, (models.Model,), attrs)


AssocLimitColumns = _abstract("AssocLimitColumns", AssocLimits)
QOSLimitColumns = _abstract("QOSLimitColumns", QOSLimits)


class LimitsState(models.Model):
    """One row: ``version`` is bumped by every limits change, so each server process
    rebuilds its cached :class:`limits.core.policy.Policy` at once; the usage cycle's clock."""

    version = models.PositiveBigIntegerField(default=0)
    # Changed with the version: a cache key that cannot repeat (the version can, after a
    # database is rebuilt or a test rolled back).
    token = models.CharField(max_length=32, blank=True, default="")
    last_cycle = models.FloatField(null=True, blank=True, help_text="epoch of the last usage cycle")
    last_reset = models.FloatField(null=True, blank=True, help_text="epoch of the last usage reset")

    def __str__(self) -> str:
        return f"limits v{self.version}"


class Cluster(models.Model):
    name = models.CharField(max_length=64, unique=True)

    def __str__(self) -> str:
        return self.name


class Tres(models.Model):
    """A trackable resource (``cpu``, ``gres/gpu``): Slurm's tres table."""

    name = models.CharField(max_length=128, unique=True)

    class Meta:
        verbose_name = "TRES"
        verbose_name_plural = "TRES"

    def __str__(self) -> str:
        return self.name


class QOS(QOSLimitColumns):
    name = models.CharField(max_length=64, unique=True)
    description = models.CharField(max_length=256, blank=True, default="")
    priority = models.PositiveIntegerField(default=0)
    flags = models.CharField(max_length=256, blank=True, default="", help_text="comma separated")
    usage_factor = models.FloatField(default=1.0, validators=[MinValueValidator(0)])
    limit_factor = models.FloatField(null=True, blank=True, validators=[MinValueValidator(0)])
    grace_time = models.PositiveIntegerField(default=0, help_text="seconds")
    # The QOS whose jobs this QOS's jobs may preempt (PreemptType=preempt/qos), as sacctmgr
    # prints Preempt: comma-separated names.
    preempt = models.CharField(max_length=512, blank=True, default="")
    tres_decay_half_life = models.CharField(
        max_length=256, blank=True, default="", help_text="TresDecayHalfLife: seconds per TRES, cpu=0"
    )

    class Meta:
        verbose_name = "QOS"
        verbose_name_plural = "QOS"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Account(models.Model):
    """An account; its place in the tree is its account association's ``parent``."""

    name = models.CharField(max_length=64, unique=True)
    description = models.CharField(max_length=256, blank=True, default="")
    organization = models.CharField(max_length=256, blank=True, default="")

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class LimitsUser(models.Model):
    """A user as sacctmgr knows it (not the login account): default account and QOS."""

    name = models.CharField(max_length=64, unique=True)
    default_account = models.ForeignKey(Account, null=True, blank=True, on_delete=models.SET_NULL)
    default_qos = models.ForeignKey(QOS, null=True, blank=True, on_delete=models.SET_NULL)
    admin_level = models.CharField(max_length=16, default="None")
    default_wckey = models.CharField(max_length=256, blank=True, default="")

    class Meta:
        verbose_name = "user"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class WCKey(models.Model):
    """A workload characterization key a user may charge jobs to (sacctmgr's wckey
    records; Slurm's TrackWCKey and AccountingStorageEnforce=wckeys)."""

    cluster = models.ForeignKey("Cluster", on_delete=models.CASCADE, related_name="wckeys")
    user = models.ForeignKey(LimitsUser, on_delete=models.CASCADE, related_name="wckeys")
    name = models.CharField(max_length=256)

    class Meta:
        verbose_name = "WCKey"
        constraints = [
            models.UniqueConstraint(fields=["cluster", "user", "name"], name="limits_wckey_unique")
        ]
        ordering = ["name", "user__name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.user.name})"


class Coordinator(models.Model):
    """``sacctmgr add coordinator``: a user who manages the jobs (and sees the private data)
    of an account and of every account beneath it."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="coordinators")
    user = models.ForeignKey(LimitsUser, on_delete=models.CASCADE, related_name="coordinated")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["account", "user"], name="limits_coordinator_unique")]
        ordering = ["account__name", "user__name"]

    def __str__(self) -> str:
        return f"{self.user.name} coordinates {self.account.name}"


class Association(AssocLimitColumns):
    """(cluster, account, user, partition).  Without a user it is the account's node in the
    tree (``parent`` is its parent account, NULL for root); with one it is a user
    association hanging under its account.  ``qos`` NULL inherits the parent's list."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="associations")
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="associations")
    user = models.ForeignKey(LimitsUser, null=True, blank=True, on_delete=models.CASCADE)
    partition = models.CharField(max_length=64, blank=True, default="")
    parent = models.ForeignKey(
        Account, null=True, blank=True, on_delete=models.PROTECT, related_name="child_associations"
    )
    fairshare = models.CharField(max_length=16, default="1", help_text="an integer or 'parent'")
    # NULL (not "") means "inherit the parent's list": the two differ, as in Slurm.
    qos = models.CharField(  # noqa: DJ001
        max_length=512, null=True, blank=True, help_text="comma separated; empty inherits"
    )
    default_qos = models.ForeignKey(QOS, null=True, blank=True, on_delete=models.SET_NULL)
    tres_decay_half_life = models.CharField(max_length=256, blank=True, default="")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["cluster", "account", "user", "partition"], name="limits_assoc_unique"
            ),
            models.UniqueConstraint(
                fields=["cluster", "account"],
                condition=models.Q(user__isnull=True),
                name="limits_account_assoc_unique",
            ),
        ]
        ordering = ["cluster__name", "account__name", "user__name", "partition"]

    def __str__(self) -> str:
        who = f"/{self.user.name}" if self.user_id else ""
        part = f"/{self.partition}" if self.partition else ""
        return f"{self.cluster.name}:{self.account.name}{who}{part}"


class Usage(models.Model):
    """The decayed usage of one association or QOS (``key`` is the core's usage key joined
    with ``|``): RawUsage in billing-seconds, GrpTRESMins usage in TRES-seconds, GrpWall."""

    key = models.CharField(max_length=300, unique=True)
    raw_usage = models.FloatField(default=0.0)
    tres_seconds = models.JSONField(default=dict)
    wall_seconds = models.FloatField(default=0.0)

    def __str__(self) -> str:
        return self.key


class JobAccounting(models.Model):
    """What the limits keep per job: when it began accruing age priority and the
    UsageFactor booked when it started (the UsageFactor NOTE of Slurm's resource_limits.html)."""

    job = models.OneToOneField(Job, primary_key=True, on_delete=models.CASCADE, related_name="accounting")
    accrue_time = models.FloatField(null=True, blank=True)
    usage_factor = models.FloatField(null=True, blank=True)

    def __str__(self) -> str:
        return f"job {self.job_id}"
