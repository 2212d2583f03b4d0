"""The reservations a pass knows (reservations.pass_views) kept between passes until the
reservation table is written, filtered by the pass's time: against the statement every
pass ran before, as time passes over their starts and ends and reservations change."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from cluster.models import Reservation
from cluster.services import pass_snapshot, rows
from cluster.services import reservations as services

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _fresh(now: datetime):
    found = rows.select(
        Reservation, services._VIEW_FIELDS, {"end_time": rows.Above(now)}, order_by=services._ORDER
    )
    return [services._view(row) for row in found]


def _add(name: str, start: int, end: int, **kw) -> Reservation:
    return Reservation.objects.create(
        name=name, start_time=T0 + timedelta(seconds=start), end_time=T0 + timedelta(seconds=end), **kw
    )


def _reads(now: datetime) -> int:
    with CaptureQueriesContext(connection) as seen:
        assert services.pass_views(now) == _fresh(now)
    # _fresh's own statement is one; the kept value's a second when read.
    return sum('FROM "cluster_reservation"' in q["sql"] for q in seen.captured_queries) - 1


def test_kept_until_the_table_is_written_and_filtered_by_the_time() -> None:
    _add("maint", 100, 200, nodes="n[1-4]", flags="MAINT")
    _add("early", 0, 50, users="alice", nodes="n5")
    _add("later", 300, 900, accounts="physics", nodes="n[6-8]", partition="batch")
    with pass_snapshot.keep():
        assert _reads(T0) == 1
        # Time passes over ends without a write: the same rows, fewer views.
        for second in (49, 50, 51, 150, 199, 200, 201, 899, 900, 1000):
            assert _reads(T0 + timedelta(seconds=second, microseconds=1)) == 0
            assert _reads(T0 + timedelta(seconds=second)) == 0
        assert [v.name for v in services.pass_views(T0 + timedelta(seconds=250))] == ["later"]
        Reservation.objects.filter(name="maint").update(end_time=T0 + timedelta(seconds=400))
        assert _reads(T0 + timedelta(seconds=250)) == 1
        assert [v.name for v in services.pass_views(T0 + timedelta(seconds=250))] == ["maint", "later"]
        _add("new", 10, 20)
        Reservation.objects.filter(name="early").delete()
        assert _reads(T0) == 1
        assert _reads(T0 + timedelta(seconds=15)) == 0
    # Outside keep(): read every time, as before.
    assert _reads(T0) == 1
