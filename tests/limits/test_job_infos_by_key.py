"""The limits' per-job fields (``limits.services._job_infos``) read again for the jobs
written since the last pass, not whole (#18: every submission wrote the job table, and
every pass then read every active job and its accounting again: 8% of the simulator's
time at 10,000 nodes).

The accounting table's key is ``job_id`` (a one-to-one table): the statement watch reads
it from the writes by key and from ``rows.upsert_values``' upserts
(``statement_effects.keyed_rows``).  A count: a submission reads its job alone, an
accounting row written reads that job alone, writes of columns the fields do not read
read nothing; and after each the kept fields equal a fresh read (the oracle of random
sequences is tests/limits/test_kept_pass_infos.py).
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.utils import timezone

from cluster.models import Job
from cluster.services import pass_snapshot, statement_effects
from cluster.services import rows as db_rows
from cluster.services.jobs import job_submit
from limits import services as limits_services
from limits.models import JobAccounting
from tests.limits.test_usage_cycle_oracle import reconfigure, register, science_tree, virtual_now  # noqa: F401

pytestmark = pytest.mark.django_db


def _keyed_ids(write) -> list[list]:
    """The ids the statement watch reads from each write ``write`` runs (None: any row)."""
    seen = []

    def record(execute, sql, params, many, context):
        if statement_effects.tables_written(sql):
            where = statement_effects.keyed_rows(sql)
            if where is None:
                seen.append(None)
            elif many:
                seen.append([i for p in params for i in statement_effects.written_ids(where, p)])
            else:
                seen.append(statement_effects.written_ids(where, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        write()
    return seen


def test_the_accounting_writes_name_their_jobs(users):
    jobs = [
        Job.objects.create(id=k, user="alice", partition="debug", script="", submit_time=timezone.now())
        for k in (7, 8)
    ]
    assert _keyed_ids(
        lambda: db_rows.upsert_values(JobAccounting, ("accrue_time",), [(7, 1.0), (8, 2.0)])
    ) == [[7, 8]]
    assert _keyed_ids(lambda: db_rows.upsert_values(JobAccounting, ("usage_factor",), [(8, 0.5)])) == [[8]]
    assert _keyed_ids(lambda: JobAccounting.objects.filter(pk=7).update(accrue_time=3.0)) == [[7]]
    assert _keyed_ids(lambda: JobAccounting.objects.filter(pk__in=[7, 8]).delete()) == [[7, 8]]
    assert _keyed_ids(lambda: JobAccounting.objects.filter(accrue_time=1.0).update(accrue_time=3.0)) == [None]
    # An upsert on another conflict target may write a row it does not name.
    other = (
        'INSERT INTO "limits_jobaccounting" ("job_id", "accrue_time") VALUES (%s, %s) '
        'ON CONFLICT ("accrue_time") DO NOTHING'
    )
    assert statement_effects.keyed_rows(other) is None
    assert jobs


def test_a_pass_reads_the_jobs_written_since_alone(reconfigure, users, virtual_now, monkeypatch):  # noqa: F811
    reconfigure("")
    science_tree(users["admin"])
    register(virtual_now[0])
    alice = users["alice"]
    for _ in range(3):
        job_submit(user=alice, spec={"wrap": "sleep 100"}, now=virtual_now[0])
    reads = []
    read = limits_services._read_job_infos

    def counted(ids=None):
        reads.append(None if ids is None else sorted(ids))
        return read(ids)

    monkeypatch.setattr(limits_services, "_read_job_infos", counted)

    def same_as_fresh():
        infos = limits_services._job_infos()
        assert infos == dict(read())
        return infos

    with pass_snapshot.keep():
        first = same_as_fresh()
        assert reads == [None]
        new = job_submit(user=alice, spec={"wrap": "sleep 100"}, now=virtual_now[0]).job_ids[0]
        reads.clear()
        second = same_as_fresh()
        assert reads == [[new]]
        assert second is not first and new in second
        reads.clear()
        Job.objects.filter(pk=new).update(reason="Priority", priority=5)  # columns not read
        assert same_as_fresh() is second
        assert reads == []
        db_rows.upsert_values(JobAccounting, ("accrue_time",), [(new, 5.0)])
        third = same_as_fresh()
        assert reads == [[new]]
        assert third[new].accrue_time == 5.0
        reads.clear()
        Job.objects.filter(pk=new).update(state="CANCELLED")
        assert new not in same_as_fresh()
        assert reads == [[new]]
