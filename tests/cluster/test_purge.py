"""``manage.py fsched_purge``: old events, audit-log entries and idempotency keys go, the
purge records itself in an event no purge deletes, and bad ages change nothing."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from auditlog.models import LogEntry
from django.contrib.admin.models import CHANGE
from django.contrib.admin.models import LogEntry as AdminLogEntry
from django.core.management import CommandError, call_command
from django.utils import timezone

from cluster.models import Event, Node, SubmitKey
from cluster.services.nodes import node_update
from cluster.services.purge import PURGE_REASON


@pytest.fixture
def aged(demo, users):
    """Records 10 days old and records of now, of every kind the purge handles."""
    old = timezone.now() - timedelta(days=10)
    Event.objects.update(time=old)  # the demo's load: node and config events
    node_update(actor=users["admin"], nodes="node01", weight=3)
    LogEntry.objects.update(timestamp=old)
    node_update(actor=users["admin"], nodes="node01", weight=4)  # a fresh entry
    entry = AdminLogEntry.objects.log_actions(
        user_id=users["admin"].pk,
        queryset=[Node.objects.get(name="node02")],
        action_flag=CHANGE,
        single_object=True,
    )
    AdminLogEntry.objects.filter(pk=entry.pk).update(action_time=old)
    SubmitKey.objects.create(user="alice", key="k-old", created=old)
    SubmitKey.objects.create(user="alice", key="k-new", created=timezone.now())
    Event.objects.create(time=timezone.now(), kind=Event.Kind.JOB, job_id=1, new_state="PENDING")
    return old


def run(*args: str) -> str:
    out = StringIO()
    call_command("fsched_purge", *args, stdout=out)
    return out.getvalue()


def test_a_dry_run_counts_and_deletes_nothing(aged):
    counts = (Event.objects.count(), LogEntry.objects.count(), SubmitKey.objects.count())
    out = run("--events-older-than", "7", "--auditlog-older-than", "7", "--dry-run")
    assert "would delete:" in out and "1 submit keys" in out
    assert (Event.objects.count(), LogEntry.objects.count(), SubmitKey.objects.count()) == counts
    assert not Event.objects.filter(reason=PURGE_REASON).exists()


def test_purge_deletes_what_is_older_and_records_itself(aged):
    old_events = Event.objects.filter(time__lt=timezone.now() - timedelta(days=7)).count()
    assert old_events > 0
    out = run("--events-older-than", "7", "--auditlog-older-than", "7", "--actor", "root")
    assert f"deleted: {old_events} events" in out
    assert not Event.objects.filter(time__lt=timezone.now() - timedelta(days=7)).exists()
    assert Event.objects.filter(kind=Event.Kind.JOB, job_id=1).exists()  # newer: kept
    assert LogEntry.objects.count() == 1 and LogEntry.objects.get().changes_dict["weight"] == ["3", "4"]
    assert not AdminLogEntry.objects.exists()
    assert list(SubmitKey.objects.values_list("key", flat=True)) == ["k-new"]  # one day by default
    record = Event.objects.get(reason=PURGE_REASON)
    assert record.user == "root" and record.kind == Event.Kind.CONFIG
    assert record.detail["deleted"]["events"] == old_events
    assert record.detail["deleted"]["submit_keys"] == 1
    assert set(record.detail["older_than"]) == {"events", "auditlog", "submit_keys"}


def test_the_record_of_a_purge_survives_later_purges(aged):
    run("--events-older-than", "7")
    first = Event.objects.get(reason=PURGE_REASON)
    Event.objects.filter(pk=first.pk).update(time=timezone.now() - timedelta(days=30))
    run("--events-older-than", "0")
    assert Event.objects.filter(pk=first.pk).exists()
    assert Event.objects.filter(reason=PURGE_REASON).count() == 2
    assert Event.objects.exclude(reason=PURGE_REASON).count() == 0


def test_without_ages_only_old_submit_keys_go(aged):
    events, entries = Event.objects.count(), LogEntry.objects.count()
    run()
    assert (Event.objects.count(), LogEntry.objects.count()) == (events + 1, entries)  # + its record
    assert SubmitKey.objects.count() == 1


@pytest.mark.parametrize("age", ["abc", "-1", "nan", "1e9"])
def test_a_bad_age_is_refused_and_changes_nothing(aged, age):
    count = Event.objects.count()
    with pytest.raises(CommandError, match="events"):
        call_command("fsched_purge", "--events-older-than", age)
    assert Event.objects.count() == count
