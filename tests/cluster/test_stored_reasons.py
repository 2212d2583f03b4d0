"""pass_snapshot.stored_reasons: the pass compares the reasons and priorities it computed
with the stored ones without reading every queued job's, inside ``keep()``.

Exact only if every statement that writes a job's reason, detail or priority (by key or
not, raw or through the ORM, a delete, an insert) and every rollback makes the next call
read that job again: random writes (fixed seed), each followed by the answer compared with
the rows read directly.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest
from django.db import connection, transaction

from cluster.models import Job
from cluster.services import pass_snapshot, rows

pytestmark = pytest.mark.django_db(transaction=True)
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _direct(ids):
    found = rows.select(Job, ("id", "reason", "reason_detail", "priority"), {"pk": ids})
    return {row[0]: row[1:] for row in found}


def _job(i):
    return Job(id=i, user="u", partition="batch", submit_time=NOW, reason="None", priority=i)


def _write(rng, ids):
    """One write of one of the shapes the watch must read, or a rolled-back one."""
    job_id = rng.choice(ids)
    reason = rng.choice(["Priority", "Resources", "None", "JobHeldUser"])
    kind = rng.randrange(9)
    if kind == 0:
        rows.update_values(
            Job, ["reason", "reason_detail", "priority"], [(job_id, reason, "d", rng.randint(0, 9))]
        )
    elif kind == 1:
        Job.objects.filter(pk=job_id).update(priority=rng.randint(0, 9))
    elif kind == 2:
        job = Job.objects.filter(pk=job_id).first()
        if job is not None:
            job.reason_detail = f"detail {rng.randint(0, 9)}"
            job.save(update_fields=["reason_detail"])
    elif kind == 3:  # not by key: every job may have changed
        Job.objects.filter(state="PENDING", priority__lt=3).update(priority=5)
    elif kind == 4:
        with connection.cursor() as cursor:
            cursor.execute('UPDATE "cluster_job" SET "reason" = %s WHERE "id" = %s', [reason, job_id])
    elif kind == 5:
        with pytest.raises(RuntimeError), transaction.atomic():
            Job.objects.filter(pk=job_id).update(reason="Undone")
            pass_snapshot.stored_reasons(ids)  # read inside, then undone
            raise RuntimeError
    elif kind == 6:
        Job.objects.filter(pk=job_id).delete()
    elif kind == 7:
        if not Job.objects.filter(pk=job_id).exists():
            job = _job(job_id)
            job.reason = reason
            job.save()
    else:
        Job.objects.filter(pk=job_id).update(user="v")  # a column of neither


def test_stored_reasons_follow_every_write():
    rng = random.Random(14)
    ids = list(range(1, 41))
    Job.objects.bulk_create([_job(i) for i in ids])
    with pass_snapshot.keep():
        for _ in range(300):
            asked = sorted(rng.sample(ids, rng.randint(1, len(ids))))
            assert pass_snapshot.stored_reasons(asked) == _direct(asked)
            _write(rng, ids)
        assert pass_snapshot.stored_reasons(ids) == _direct(ids)


def test_read_only_the_rows_written_since(django_assert_max_num_queries):
    ids = list(range(1, 101))
    Job.objects.bulk_create([_job(i) for i in ids])
    with pass_snapshot.keep():
        pass_snapshot.stored_reasons(ids)
        with django_assert_max_num_queries(0):
            pass_snapshot.stored_reasons(ids)
        Job.objects.filter(pk=7).update(priority=70)
        with django_assert_max_num_queries(1):
            assert pass_snapshot.stored_reasons(ids)[7] == ("None", "", 70)
