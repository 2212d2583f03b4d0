"""A submission's statements on PostgreSQL: the job's id taken, the job and its first event
stored in one message (one round trip, one transaction); the partition and the limits
read once per configuration revision.

Round trips, not statements, bound distributed mode's submission rate: each wakes the
server's worker and a PostgreSQL backend (docs/scaling.md).
"""

from __future__ import annotations

import os

import pytest
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from cluster.models import Event, Job, SubmitKey
from cluster.services import rows
from cluster.services.jobs import job_submit

pytestmark = [
    pytest.mark.distributed,
    pytest.mark.skipif(not os.environ.get("FSCHED_DATABASE_URL"), reason="needs FSCHED_DATABASE_URL"),
    pytest.mark.django_db(transaction=True),
]

SPEC = {"wrap": "true", "work_dir": "/tmp", "hold": True}


def _statements(users, **kwargs):
    with CaptureQueriesContext(connection) as queries:
        submitted = job_submit(user=users["alice"], spec=dict(SPEC), **kwargs)
    return submitted, [q["sql"] for q in queries.captured_queries]


def test_the_job_and_its_event_are_one_statement_message(users, demo):
    job_submit(user=users["alice"], spec=dict(SPEC))  # the caches of this configuration
    submitted, sql = _statements(users)
    writes = [s for s in sql if "INSERT" in s]
    assert len(writes) == 1, sql
    assert 'INSERT INTO "cluster_job"' in writes[0] and 'INSERT INTO "cluster_event"' in writes[0]
    # The message also takes the job's id, from the sequence. Besides, only the
    # configuration's revision is read (it tells every cache whether it is current: the
    # partitions', the limits'): two round trips.
    assert writes[0].startswith("SELECT nextval('cluster_job_ids')"), writes
    assert len(sql) == 2 and "revision" in sql[0], sql
    job = Job.objects.get(pk=submitted.job_ids[0])
    assert job.partition == "debug" and job.state == "PENDING"
    assert list(Event.objects.filter(job_id=job.pk).values_list("new_state", flat=True)) == ["PENDING"]


def test_a_repeated_idempotency_key_gets_the_first_jobs_in_the_same_message(users, demo):
    first, sql = _statements(users, idempotency_key="k-1")
    assert any('INSERT INTO "cluster_submitkey"' in s and 'INSERT INTO "cluster_job"' in s for s in sql), sql
    again, _ = _statements(users, idempotency_key="k-1")
    assert again.job_ids == first.job_ids
    assert Job.objects.filter(user="alice").count() == 1


def test_a_statement_that_fails_stores_none_of_the_message(users, demo):
    now = timezone.now()
    SubmitKey.objects.create(user="alice", key="taken", response={}, created=now)
    event = {"time": now, "kind": Event.Kind.JOB, "new_state": "PENDING", "reason": "one-message-test"}
    duplicate = {"user": "alice", "key": "taken", "response": {}, "created": now}
    with pytest.raises(IntegrityError):
        rows.insert_together([(Event, [event]), (SubmitKey, [duplicate])])
    assert not Event.objects.filter(reason="one-message-test").exists()
    # The connection is usable again at once: the failed message was its own transaction.
    assert SubmitKey.objects.count() == 1


def test_an_array_is_stored_whole_in_one_transaction(users, demo):
    submitted = job_submit(user=users["alice"], spec={**SPEC, "array": "0-9"})
    assert Job.objects.filter(array_job_id=submitted.array_job_id).count() == 10
    assert Event.objects.filter(job_id__in=submitted.job_ids).count() == 10


def test_ids_increase_across_single_jobs_and_arrays(users, demo):
    ids = [job_submit(user=users["alice"], spec=dict(SPEC)).job_ids[0] for _ in range(2)]
    array = job_submit(user=users["alice"], spec={**SPEC, "array": "0-2"})
    ids.append(job_submit(user=users["alice"], spec=dict(SPEC)).job_ids[0])
    # One submission at a time: the sequence gives them one after the other.
    assert ids[1] == ids[0] + 1 and array.job_ids == [ids[1] + 1, ids[1] + 2, ids[1] + 3]
    assert array.array_job_id == array.job_ids[0] and ids[2] == array.job_ids[-1] + 1
    events = Event.objects.filter(job_id__in=ids).order_by("job_id")
    assert list(events.values_list("job_id", flat=True)) == ids
    key = job_submit(user=users["alice"], spec=dict(SPEC), idempotency_key="k-2")
    assert key.job_ids == [ids[2] + 1]
    assert SubmitKey.objects.get(key="k-2").response == {"job_ids": key.job_ids, "array_job_id": None}


def test_a_submission_never_waits_for_another_ones_transaction(users, demo):
    """Another submission's transaction, still open after taking its id, holds nothing this
    one needs (a counter row did: its lock was held until that transaction's commit)."""
    import psycopg

    settings = connection.settings_dict
    other = psycopg.connect(
        host=settings["HOST"], port=settings["PORT"], dbname=settings["NAME"], user=settings["USER"],
        password=settings["PASSWORD"] or None,
    )  # fmt: skip
    try:
        with other.cursor() as cursor:  # psycopg opens a transaction, left open here
            cursor.execute("SELECT nextval('cluster_job_ids')")
            (theirs,) = cursor.fetchone()
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '2s'")
        try:
            single = job_submit(user=users["alice"], spec=dict(SPEC))
            array = job_submit(user=users["alice"], spec={**SPEC, "array": "0-1"})
        finally:
            with connection.cursor() as cursor:
                cursor.execute("RESET lock_timeout")
        assert single.job_ids[0] > theirs and array.job_ids[0] > single.job_ids[0]
    finally:
        other.rollback()
        other.close()


def test_the_sequence_starts_after_every_id_given(users, demo):
    """Migrating a database whose counter row or jobs went further starts the sequence
    after both (the migration's own function, run again on this database)."""
    import importlib

    from django.apps import apps as django_apps
    from django.db import connection as conn

    from cluster.models import JobIdCounter

    migration = importlib.import_module("cluster.migrations.0013_job_id_sequence")
    taken = job_submit(user=users["alice"], spec=dict(SPEC)).job_ids[0]
    JobIdCounter.objects.update_or_create(pk=1, defaults={"next_id": taken + 50})
    with conn.schema_editor() as editor:
        migration.create_sequence(django_apps, editor)
    assert job_submit(user=users["alice"], spec=dict(SPEC)).job_ids == [taken + 50]
    now = timezone.now()
    Job.objects.create(id=taken + 500, user="alice", partition="debug", state="PENDING", submit_time=now)
    with conn.schema_editor() as editor:
        migration.create_sequence(django_apps, editor)
    assert job_submit(user=users["alice"], spec=dict(SPEC)).job_ids == [taken + 501]


def test_psycopg_keeps_its_parse_of_the_message(users, demo, monkeypatch):
    # A statement of more parameters than psycopg caches is parsed again on every execute
    # (half of the message's time in the server, measured).
    from psycopg import _queries

    parsed_again: list[bytes] = []
    uncached = _queries._query2pg_client_nocache

    def counting(query, encoding):
        parsed_again.append(query)
        return uncached(query, encoding)

    monkeypatch.setattr(_queries, "_query2pg_client_nocache", counting)
    job_submit(user=users["alice"], spec=dict(SPEC))
    assert parsed_again == []


def test_a_change_of_the_limits_is_seen_by_the_next_submission(users, demo):
    # The limits are cached by the configuration's revision, which a change of them renews.
    from cluster.models import ClusterConfig
    from cluster.services.errors import ServiceError
    from limits import services as limits

    with transaction.atomic():
        cfg = ClusterConfig.for_update()
        cfg.options = {**cfg.options, "AccountingStorageEnforce": "limits"}
        cfg.save()
    limits.record_add(actor=users["admin"], entity="account", names=["science"])
    limits.record_add(actor=users["admin"], entity="user", names=["alice"], options=["Account=science"])
    job_submit(user=users["alice"], spec=dict(SPEC))  # the limits cached: none on alice
    before = ClusterConfig.current().revision
    limits.record_modify(
        actor=users["admin"], entity="user", where=["name=alice"], options=["MaxSubmitJobs=1"]
    )
    assert ClusterConfig.current().revision != before
    with pytest.raises(ServiceError, match=r"^Job violates accounting/QOS policy"):
        job_submit(user=users["alice"], spec=dict(SPEC))
