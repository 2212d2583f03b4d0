"""The simulator's log reads the events after its cursor unordered and puts them in the
Event model's order itself (simulator.observe.newest_first, #18: SQLite walked the whole
time index for the few new rows): the same rows in the same order as the database's
``ORDER BY time DESC, id DESC``, on random events (equal times, whole seconds and
microseconds, times out of id order) and random cursors.

An order by id alone, by time alone, or ascending, fails here.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from cluster.models import Event
from cluster.services import rows as plain_rows
from simulator.observe import _new_events_sql, newest_first

pytestmark = pytest.mark.django_db

START = datetime(2026, 1, 1, tzinfo=UTC)


def _ordered_by_database(after: int) -> list[tuple]:
    t, col = plain_rows.table(Event), plain_rows.column
    sql = (
        f"SELECT {col(Event, 'id')}, {col(Event, 'kind')}, {col(Event, 'job_id')}, "  # noqa: S608
        f"{col(Event, 'new_state')}, {col(Event, 'time')} FROM {t} "
        f"WHERE {col(Event, 'id')} > %s ORDER BY {col(Event, 'time')} DESC, {col(Event, 'id')} DESC"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [after])
        return cursor.fetchall()


@pytest.mark.parametrize("seed", range(6))
def test_events_in_the_models_order(seed):
    rng = random.Random(seed)
    ids = []
    for _ in range(rng.randint(1, 60)):
        when = START + timedelta(
            seconds=rng.choice([0, 1, 1, 2, 59, 3600]), microseconds=rng.choice([0, 0, 1, 500_000])
        )
        event = Event.objects.create(
            time=when,
            kind=rng.choice([Event.Kind.JOB, Event.Kind.NODE]),
            job_id=rng.randint(1, 9),
            new_state=rng.choice(["COMPLETED", "RUNNING", "IDLE"]),
        )
        ids.append(event.id)
    for after in [0, *rng.sample(ids, min(4, len(ids)))]:
        with connection.cursor() as cursor:
            cursor.execute(_new_events_sql(), [after])
            mine = newest_first(cursor.fetchall())
        assert mine == _ordered_by_database(after)
