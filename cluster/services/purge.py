"""Purging old records by age: the one way the audit trail shrinks (``manage.py fsched_purge``,
and the report rollup for slurmdbd's ``PurgeJobAfter``/``PurgeEventAfter``).

The admin and the API cannot delete events or log entries (cluster.record_admin); this
deletes those older than a given age and records that it did (who, when, the cut-offs and
how many rows) in an Event that no purge deletes: reason ``purge``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from auditlog import get_logentry_model
from django.contrib.admin.models import LogEntry as AdminLogEntry
from django.db import transaction

from cluster import clock
from cluster.models import Event, Job, SubmitKey
from cluster.services.errors import ServiceError

log = logging.getLogger(__name__)

PURGE_REASON = "purge"
# An Idempotency-Key protects a retry after a broken connection, which comes within
# seconds or minutes; a day is ample.
DEFAULT_SUBMIT_KEY_DAYS = 1.0
MAX_DAYS = 36500.0  # timedelta's range ends near 2.7 million days; a century is enough


@dataclass(frozen=True)
class PurgeResult:
    events: int
    jobs: int
    auditlog_entries: int
    admin_entries: int
    submit_keys: int
    dry_run: bool
    record_id: int | None  # the Event recording the purge (None on a dry run)


def records_purge(
    *,
    actor: str,
    events_days: float | None = None,
    auditlog_days: float | None = None,
    jobs_days: float | None = None,
    submit_key_days: float | None = DEFAULT_SUBMIT_KEY_DAYS,
    dry_run: bool = False,
    now: datetime | None = None,
) -> PurgeResult:
    """Delete the records older than the ages given in days (None: that kind is kept).

    Events recording an earlier purge are never deleted.  ``auditlog_days`` covers both
    django-auditlog's entries and the admin's own history.  ``jobs_days`` deletes jobs that
    ended before the cut-off (never one still pending or running), as slurmdbd's
    ``PurgeJobAfter`` does.
    """
    now = now or clock.now()
    cutoffs = {
        name: _cutoff(name, days, now)
        for name, days in (
            ("events", events_days),
            ("auditlog", auditlog_days),
            ("submit_keys", submit_key_days),
            ("jobs", jobs_days),
        )
    }
    audit = get_logentry_model()
    selections = {
        "events": Event.objects.filter(time__lt=cutoffs["events"]).exclude(
            kind=Event.Kind.CONFIG, reason=PURGE_REASON
        )
        if cutoffs["events"]
        else Event.objects.none(),
        "auditlog_entries": audit.objects.filter(timestamp__lt=cutoffs["auditlog"])
        if cutoffs["auditlog"]
        else audit.objects.none(),
        "admin_entries": AdminLogEntry.objects.filter(action_time__lt=cutoffs["auditlog"])
        if cutoffs["auditlog"]
        else AdminLogEntry.objects.none(),
        "submit_keys": SubmitKey.objects.filter(created__lt=cutoffs["submit_keys"])
        if cutoffs["submit_keys"]
        else SubmitKey.objects.none(),
        "jobs": Job.objects.filter(end_time__lt=cutoffs["jobs"]) if cutoffs["jobs"] else Job.objects.none(),
    }
    with transaction.atomic():
        if dry_run:
            counts = {name: qs.count() for name, qs in selections.items()}
            return PurgeResult(**counts, dry_run=True, record_id=None)
        # Counted per model: a job's deletion also takes its rows in other tables.
        counts = {name: qs.delete()[1].get(qs.model._meta.label, 0) for name, qs in selections.items()}
        record = Event.objects.create(
            time=now,
            kind=Event.Kind.CONFIG,
            reason=PURGE_REASON,
            user=actor,
            detail={
                "older_than": {k: v.isoformat() for k, v in cutoffs.items() if v is not None},
                "deleted": counts,
            },
        )
    log.info("purge by %s: %s", actor or "(unknown)", counts)
    return PurgeResult(**counts, dry_run=False, record_id=record.pk)


def _cutoff(name: str, days: float | None, now: datetime) -> datetime | None:
    if days is None:
        return None
    if not 0 <= days <= MAX_DAYS:
        raise ServiceError(f"{name}: the age must be between 0 and {MAX_DAYS:g} days, not {days:g}")
    return now - timedelta(days=days)
