"""The submit limits' counts kept by the database (limits/submit_counts.py): after any
write to the job table, by a service, a queryset, raw SQL, a rollback or a compaction, the
counts equal a recount of the active jobs; the triggers are put back, and the counts
recomputed, when a migration rebuilt the table without them."""

from __future__ import annotations

import random

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from cluster.core.states import JobState
from cluster.models import Job
from cluster.services.jobs import job_cancel, job_submit
from cluster.services.scheduling import schedule_pass
from limits import submit_counts
from tests.limits.submit_count_steps import NOW, assert_counts_exact, steps

pytestmark = pytest.mark.django_db


def _pending(job_id: int, user: str) -> Job:
    return Job(id=job_id, user=user, partition="debug", state=JobState.PENDING, submit_time=NOW)


@pytest.mark.parametrize("seed", range(4))
def test_counts_equal_a_recount_after_every_write(seed):
    rng = random.Random(seed)
    todo = steps(rng)
    for _ in range(120):
        rng.choice(todo)()
        assert_counts_exact()
    assert submit_counts.counts(), "the steps left no active job: the test would show nothing"


def test_counts_follow_the_services(demo, users):
    alice, bob = users["alice"], users["bob"]
    ids = []
    for k in range(6):
        spec = {"wrap": "true", "work_dir": "/tmp", "partition": ("debug", "batch")[k % 2]}
        ids.append(job_submit(user=(alice, bob)[k % 2], spec=spec, now=NOW).job_ids[0])
        assert_counts_exact()
    spec = {"wrap": "true", "work_dir": "/tmp", "array": "0-9"}
    job_submit(user=alice, spec=spec, now=NOW)
    assert_counts_exact()
    schedule_pass(now=NOW)
    assert Job.objects.filter(state=JobState.RUNNING).exists()
    assert_counts_exact()
    job_cancel(actor=alice, job_id=ids[0])
    job_cancel(actor=bob, job_id=ids[1])
    assert_counts_exact()
    active = Job.objects.filter(state__in=["PENDING", "RUNNING"]).count()
    assert sum(submit_counts.counts().values()) == active


def test_a_migration_that_dropped_the_triggers_gets_them_and_the_counts_back():
    rng = random.Random(7)
    todo = steps(rng)
    for _ in range(40):
        rng.choice(todo)()
    assert submit_counts.install() is False  # after every migrate already: nothing to do
    q = connection.ops.quote_name
    with connection.cursor() as cursor:
        # What SQLite's table rebuild (or an administrator) leaves: no triggers, stale rows.
        for name in submit_counts._trigger_names(connection):
            suffix = f" ON {q('cluster_job')}" if connection.vendor == "postgresql" else ""
            cursor.execute(f"DROP TRIGGER {q(name)}{suffix}")
    Job.objects.filter(state=JobState.PENDING).update(state=JobState.CANCELLED)
    Job.objects.bulk_create([_pending(10_000 + i, "dave") for i in range(3)])
    assert submit_counts.counts() != submit_counts.recount()
    assert submit_counts.install() is True
    assert_counts_exact()
    assert submit_counts.counts()[("dave", "", "debug", "normal")] == 3


def test_compaction_leaves_one_row_per_counted_key():
    rng = random.Random(3)
    todo = steps(rng)
    for _ in range(60):
        rng.choice(todo)()
    before = submit_counts.counts()
    assert submit_counts.compact() is True
    assert submit_counts.counts() == before
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM {connection.ops.quote_name(submit_counts.TABLE)}")  # noqa: S608
        assert cursor.fetchone()[0] == len(before)


def test_a_reader_compacts_past_the_threshold(monkeypatch):
    monkeypatch.setattr(submit_counts, "COMPACT_AT", 10)
    Job.objects.bulk_create([_pending(i, "alice") for i in range(1, 30)])
    Job.objects.filter(id__lt=10).update(state=JobState.COMPLETED)
    with CaptureQueriesContext(connection) as queries:
        got = submit_counts.groups("alice", ["physics"], "normal")
    assert got == {("alice", "", "debug", "normal"): 20}
    assert not any("cluster_job" in q["sql"] for q in queries)  # counted, not read
    assert len(submit_counts.counts()) == 1 and submit_counts._span(connection) == 1
