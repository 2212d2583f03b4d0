"""``manage.py fsched_purge``: delete ended jobs, events, audit-log entries and idempotency keys older
than given ages, and record that it ran (docs/audit.md)."""

from __future__ import annotations

import getpass
import math

from django.core.management.base import BaseCommand, CommandError, CommandParser

from cluster.services.errors import ServiceError
from cluster.services.purge import DEFAULT_SUBMIT_KEY_DAYS, records_purge


def _days(text: str) -> float:
    try:
        days = float(text)
    except ValueError:
        raise ValueError(f"not a number of days: {text!r}") from None
    if not math.isfinite(days) or days < 0:
        raise ValueError(f"not a number of days: {text!r}")
    return days


class Command(BaseCommand):
    help = (
        "Delete events, audit-log entries (django-auditlog's and the admin's) and submission "
        "idempotency keys older than the given ages, and record the purge in an event of its own."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--events-older-than", type=_days, metavar="DAYS", help="job, node and config events"
        )
        parser.add_argument(
            "--jobs-older-than", type=_days, metavar="DAYS", help="jobs that ended (slurmdbd's PurgeJobAfter)"
        )
        parser.add_argument(
            "--auditlog-older-than",
            type=_days,
            metavar="DAYS",
            help="before/after entries and the admin's history",
        )
        parser.add_argument(
            "--submit-keys-older-than",
            type=_days,
            metavar="DAYS",
            default=DEFAULT_SUBMIT_KEY_DAYS,
            help=f"Idempotency-Key records of job submissions (default {DEFAULT_SUBMIT_KEY_DAYS:g})",
        )
        parser.add_argument("--dry-run", action="store_true", help="count what would go, delete nothing")
        parser.add_argument(
            "--actor", default=getpass.getuser(), help="who is recorded (default: the Unix user)"
        )

    def handle(self, *args: object, **options: object) -> None:
        try:
            result = records_purge(
                actor=str(options["actor"]),
                events_days=options["events_older_than"],  # type: ignore[arg-type]
                auditlog_days=options["auditlog_older_than"],  # type: ignore[arg-type]
                jobs_days=options["jobs_older_than"],  # type: ignore[arg-type]
                submit_key_days=options["submit_keys_older_than"],  # type: ignore[arg-type]
                dry_run=bool(options["dry_run"]),
            )
        except ServiceError as exc:
            raise CommandError(str(exc)) from None
        verb = "would delete" if result.dry_run else "deleted"
        self.stdout.write(
            f"{verb}: {result.events} events, {result.jobs} jobs, "
            f"{result.auditlog_entries} auditlog entries, {result.admin_entries} admin log entries, "
            f"{result.submit_keys} submit keys"
        )
        if result.record_id is not None:
            self.stdout.write(f"recorded as event {result.record_id}")
