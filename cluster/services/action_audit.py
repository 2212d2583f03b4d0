"""An audit entry for an action a person took from the console.

Jobs are not registered with django-auditlog (the scheduler changes them thousands of times
a minute), and a node's own entry shows only the fields that changed: neither says which
action was asked for nor why.  Each console action therefore records one entry of its
own, on the object acted on, with the action, the person's optional reason and the
before/after of what the action is about.  Its correlation id is the request's
(config/request_id.py, through ``AUDITLOG_CID_GETTER``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from auditlog import get_logentry_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import models


def action_audit_record(
    *,
    actor: AbstractBaseUser,
    instance: models.Model,
    action: str,
    reason: str = "",
    changes: dict[str, list[Any]] | None = None,
) -> Any:
    """Store the entry: ``changes`` maps a field to ``[before, after]`` as auditlog's do."""
    entry_model = get_logentry_model()
    return entry_model.objects.log_create(
        instance,
        force_log=True,
        action=entry_model.Action.UPDATE,
        changes={k: [str(v[0]), str(v[1])] for k, v in (changes or {}).items()},
        actor=actor,
        additional_data={"action": action, "reason": reason},
    )


def action_audited(
    *,
    actor: AbstractBaseUser,
    instance: models.Model,
    watched: Sequence[str],
    action: str,
    reason: str,
    act: Callable[[], object],
) -> None:
    """Run ``act`` on ``instance`` and record its entry with the ``watched`` attributes
    that changed, before and after (read again from the database after ``act``)."""
    before = {f: getattr(instance, f) for f in watched}
    act()
    instance.refresh_from_db()
    changes = {f: [before[f], getattr(instance, f)] for f in watched if before[f] != getattr(instance, f)}
    action_audit_record(actor=actor, instance=instance, action=action, reason=reason, changes=changes)
