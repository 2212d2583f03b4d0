"""A one-row INSERT (a submission's job, its event) looks up the connection's kept values
once a row, not once a value: the weak dictionary that holds them makes a weak reference
at every lookup, 75 a job row (docs/profile-demo-cluster.md, session 21). What the rows
store is checked against the ORM by tests/cluster/test_start_writes_oracle.py."""

from __future__ import annotations

import weakref
from datetime import UTC, datetime

import pytest
from django.db import DEFAULT_DB_ALIAS, connections

from cluster.models import Event, Job
from cluster.services import rows

NOW = datetime(2026, 1, 1, tzinfo=UTC)


class _Counted(weakref.WeakKeyDictionary):
    def __init__(self) -> None:
        super().__init__()
        self.lookups = 0

    def get(self, key, default=None):  # type: ignore[no-untyped-def, override]
        self.lookups += 1
        return super().get(key, default)


@pytest.mark.django_db
def test_a_one_row_insert_looks_up_the_kept_values_once(monkeypatch: pytest.MonkeyPatch) -> None:
    kept = _Counted()
    monkeypatch.setattr(rows, "_SAVED", kept)
    rows.insert_values(Job, [{"id": 7, "user": "u", "partition": "batch", "submit_time": NOW}])
    rows.insert_values(Event, [{"job_id": 7, "time": NOW, "kind": "job", "new_state": "PENDING"}])
    assert kept.lookups == 2
    conn = connections[DEFAULT_DB_ALIAS]
    assert len(kept[conn]) > 10  # and the job's plain values were kept, for the next row
    job = Job.objects.get(id=7)
    assert (job.user, job.partition, job.submit_time) == ("u", "batch", NOW)
