"""``scontrol setdebug LEVEL``: the controller's debug level changed while it runs.

As slurmctld's ``_slurm_rpc_set_debug_level``: an administrator's change only; the level
holds until the next reconfigure, which reads slurm.conf's SlurmctldDebug again. It is
kept in the configuration's SlurmctldDebug (``scontrol show config`` prints it), so that
every server process and worker, which follow that option (cluster/log_levels.py), take it
at their next read of the configuration. The change is an event of the configuration with
who made it, old and new."""

from __future__ import annotations

from datetime import datetime

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from cluster import clock, publish
from cluster.models import ClusterConfig, Event
from cluster.services.errors import PermissionDenied, ServiceError
from slurmwords.debug_levels import setdebug_level

DEFAULT = "info"  # slurmctld's level without SlurmctldDebug


def debug_level_set(*, actor: AbstractBaseUser, level: object, now: datetime | None = None) -> str:
    """The new level's name (``debug2``) once every process will follow it."""
    if not actor.is_staff:
        raise PermissionDenied("Access/permission denied")
    name = (
        setdebug_level(str(level)) if isinstance(level, (str, int)) and not isinstance(level, bool) else None
    )
    if name is None:
        raise ServiceError(f"invalid debug level: {level}", field="level")
    when = now or clock.now()
    with transaction.atomic():
        cfg = ClusterConfig.for_update()
        before = cfg.options.get("SlurmctldDebug")
        old = str(before) if before not in (None, "") else DEFAULT
        cfg.options = {**cfg.options, "SlurmctldDebug": name}
        cfg.save(update_fields=["options"])
        Event.objects.create(
            time=when,
            kind=Event.Kind.CONFIG,
            old_state=old,
            new_state=name,
            reason="setdebug",
            user=actor.get_username(),
            detail={"options": {"SlurmctldDebug": [before, name]}},
        )
    publish.console_changed("config")
    return name
