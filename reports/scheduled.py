"""Scheduled reports: save, delete, and the rendering the rollup cycle does when one is due.

A daily report covers the local day just ended, a weekly one Monday to Sunday, a monthly
one the calendar month; it is rendered once that period is rolled up, kept as a file
(the last KEEP_FILES of each), and emailed to its owner when ``EMAIL_HOST`` is set.  A run
claims a due report with a conditional UPDATE of its ``next_run``, so two processes never
render it twice.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from auditlog.context import set_actor
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.mail import EmailMessage
from django.db import transaction
from django.utils import timezone

from cluster import clock
from cluster.exports import FORMATS, table_bytes
from cluster.services.errors import ServiceError
from reports import selectors, tables
from reports.models import ReportFile, RollupState, SavedReport, Schedule
from reports.services import day_start, next_day

log = logging.getLogger(__name__)

KEEP_FILES = 20
MAX_SAVED_PER_USER = 50


def period_end_after(schedule: str, t: datetime) -> datetime:
    """The first boundary of ``schedule`` after ``t``: a local midnight, a Monday's, a 1st's."""
    at = next_day(day_start(t))
    if schedule == Schedule.WEEKLY:
        while timezone.localtime(at).weekday() != 0:
            at = next_day(at)
    elif schedule == Schedule.MONTHLY:
        while timezone.localtime(at).day != 1:
            at = next_day(at)
    return at


def period_start(schedule: str, end: datetime) -> datetime:
    local = timezone.localtime(end)
    if schedule == Schedule.DAILY:
        return day_start(end - timedelta(hours=12))
    if schedule == Schedule.WEEKLY:
        return day_start(end - timedelta(days=6, hours=12))
    return day_start((local - timedelta(days=1)).replace(day=1, hour=12))


def saved_report_create(
    *, owner: AbstractBaseUser, report: str, schedule: str, fmt: str, accounts: str = "", users: str = "",
    now: datetime | None = None,
) -> SavedReport:  # fmt: skip
    if report not in tables.REPORTS:
        raise ServiceError(f"report: one of {', '.join(tables.REPORTS)}")
    if schedule not in Schedule.values:
        raise ServiceError(f"schedule: one of {', '.join(Schedule.values)}")
    if fmt not in FORMATS:
        raise ServiceError(f"format: one of {', '.join(FORMATS)}")
    if len(accounts) > 1024 or len(users) > 1024:
        raise ServiceError("accounts, users: at most 1024 characters")
    if SavedReport.objects.filter(owner=owner).count() >= MAX_SAVED_PER_USER:
        raise ServiceError(f"at most {MAX_SAVED_PER_USER} saved reports a user")
    now = now or clock.now()
    if not owner.is_staff:
        users = owner.get_username()  # someone not staff reports on their own usage
    with set_actor(owner):  # the audit log names who saved it
        return SavedReport.objects.create(
            owner=owner, report=report, schedule=schedule, format=fmt, accounts=accounts, users=users,
            next_run=period_end_after(schedule, now), created=now,
        )  # fmt: skip


def saved_report_delete(*, actor: AbstractBaseUser, saved_id: int) -> None:
    saved = SavedReport.objects.filter(pk=saved_id).first()
    if saved is None or (saved.owner_id != actor.pk and not actor.is_staff):
        raise ServiceError(f"saved report {saved_id}: not found")
    with set_actor(actor):
        saved.delete()


def _names(text: str) -> list[str]:
    return [n.strip() for n in text.split(",") if n.strip()]


def scheduled_reports_run(*, now: datetime | None = None) -> str:
    """The cycle's step after the rollup: the saved reports that are due."""
    now = now or clock.now()
    rolled_to = RollupState.objects.values_list("rolled_to", flat=True).first()
    if rolled_to is None:
        return "no rollup yet"
    return f"{render_due(now=now, rolled_to=rolled_to)} scheduled reports"


def render_due(*, now: datetime, rolled_to: datetime) -> int:
    """Render every saved report whose period has ended and is rolled up; how many."""
    done = 0
    for saved in SavedReport.objects.filter(next_run__lte=min(now, rolled_to)).select_related("owner"):
        end = saved.next_run
        # Claim it: only the process whose UPDATE matched renders this period.
        following = period_end_after(saved.schedule, end)
        if not SavedReport.objects.filter(pk=saved.pk, next_run=end).update(next_run=following):
            continue
        _render(saved, period_start(saved.schedule, end), end, now=now)
        done += 1
    return done


def _render(saved: SavedReport, start: datetime, end: datetime, *, now: datetime) -> ReportFile:
    table = tables.build(
        saved.report, selectors.Window(start, end), accounts=_names(saved.accounts), users=_names(saved.users)
    )
    first = timezone.localtime(start).date()
    last = timezone.localtime(end - timedelta(seconds=1)).date()
    filename = f"{saved.report}-{first}-{last}.{saved.format}"
    body = table_bytes(saved.format, table.headers, table.rows, sheet=saved.report)
    with transaction.atomic():
        rendered = ReportFile.objects.create(
            saved=saved, start=start, end=end, created=now, filename=filename, content=body
        )
        stale = list(saved.files.values_list("pk", flat=True)[KEEP_FILES:])
        ReportFile.objects.filter(pk__in=stale).delete()
    address = getattr(saved.owner, "email", "")
    if settings.EMAIL_HOST and address:
        message = EmailMessage(
            subject=f"fsched report: {table.title}, {first} to {last}",
            body=f"{table.title} from {first} to {last} ({saved.get_schedule_display()}), attached.",
            to=[address],
        )
        message.attach(filename, body, FORMATS[saved.format].split(";")[0])
        try:
            message.send()
        except OSError as exc:
            log.warning("scheduled report %s: email to %s failed: %s", saved.pk, address, exc)
        else:
            ReportFile.objects.filter(pk=rendered.pk).update(emailed=True)
    return rendered
