"""The rollup's hourly samples written only where they changed (#18 simulator speed):
an oracle.

``reports.services.store_samples`` replaced deleting the hour's samples and creating them
all again at every run.  Random sequences of figures (layers and pending reasons that
appear, change, stay and go, in two hours, runs repeated within an hour): before each run
the old way runs in a savepoint that is rolled back; the table must be the same after
the new way (every column but the ids), and a run whose figures did not change must
write nothing.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from reports.models import Period, Sample
from reports.services import store_samples

pytestmark = pytest.mark.django_db

HOURS = [datetime(2026, 3, 7, 10, tzinfo=UTC), datetime(2026, 3, 7, 11, tzinfo=UTC)]


def old_store(hour, figures):
    Sample.objects.filter(period=Period.HOUR, start=hour).delete()
    Sample.objects.bulk_create(
        Sample(period=Period.HOUR, start=hour, kind=k, name=n, value=v, total=t)
        for (k, n), (v, t) in figures.items()
    )


def dump():
    rows = Sample.objects.values_list("period", "start", "kind", "name", "value", "total")
    return sorted(rows)


def _figures(rng, last):
    out = {}
    for key in [("pending", r) for r in ("Priority", "Resources", "QOSGrpCpuLimit")] + [
        ("hres", f"flat:rack{i}") for i in range(4)
    ]:
        if rng.random() < 0.25:
            continue  # gone, or not there yet
        if key in last and rng.random() < 0.6:
            out[key] = last[key]  # as the last run left it
        elif key[0] == "pending":
            out[key] = (rng.randint(1, 5), 0)
        else:
            out[key] = (rng.randint(0, 8), rng.choice([8, 16]))
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_samples_written_where_they_changed_equal_those_written_again(seed):
    rng = random.Random(seed)
    last = {hour: {} for hour in HOURS}
    quiet = 0
    for _ in range(80):
        hour = rng.choice(HOURS)
        # A run of the same hour with nothing changed, or some figures new, changed, gone.
        figures = dict(last[hour]) if rng.random() < 0.3 else _figures(rng, last[hour])
        with transaction.atomic():
            old_store(hour, figures)
            want = dump()
            transaction.set_rollback(True)
        with CaptureQueriesContext(connection) as queries:
            store_samples(hour, figures)
        assert dump() == want
        if figures == last[hour]:
            quiet += 1
            assert not [q for q in queries if not q["sql"].startswith("SELECT")]
        last[hour] = figures
    assert quiet  # some runs found nothing changed
