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
    writes = [s for s in sql if s.startswith("INSERT")]
    assert len(writes) == 1, sql
    assert 'INSERT INTO "cluster_job"' in writes[0] and 'INSERT INTO "cluster_event"' in writes[0]
    # The message also takes the job's id. Besides, only the configuration's revision is
    # read (it tells every cache whether it is current: the partitions', the limits'):
    # two round trips.
    assert writes[0].startswith('INSERT INTO "cluster_jobidcounter"'), writes
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


def test_ids_follow_each_other_across_single_jobs_and_arrays(users, demo):
    from cluster.models import JobIdCounter

    JobIdCounter.objects.all().delete()  # a new database: the first message makes the row
    ids = [job_submit(user=users["alice"], spec=dict(SPEC)).job_ids[0] for _ in range(2)]
    array = job_submit(user=users["alice"], spec={**SPEC, "array": "0-2"}).job_ids
    ids.append(job_submit(user=users["alice"], spec=dict(SPEC)).job_ids[0])
    assert ids[:2] == [1, 2] and array == [3, 4, 5] and ids[2] == 6
    events = Event.objects.filter(job_id__in=ids).order_by("job_id")
    assert list(events.values_list("job_id", flat=True)) == ids
    key = job_submit(user=users["alice"], spec=dict(SPEC), idempotency_key="k-2")
    assert SubmitKey.objects.get(key="k-2").response == {"job_ids": key.job_ids, "array_job_id": None}


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
