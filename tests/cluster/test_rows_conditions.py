"""rows.select's Not and Above conditions read what the ORM's exclude and __gt read.

The pass's reads moved from querysets (compiled every pass) to rows.select: on random
jobs with empty, set and NULL values, every condition and combination the pass uses gives
the rows the queryset it replaced gives.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from cluster.core.states import HOLDING_JOB_STATES, JobState
from cluster.models import Job, Reservation
from cluster.services import rows

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 1, 1, tzinfo=UTC)
STATES = [JobState.PENDING, JobState.RUNNING, JobState.COMPLETING, JobState.COMPLETED, JobState.SUSPENDED]


def _jobs(rng: random.Random, count: int) -> None:
    Job.objects.bulk_create(
        Job(
            id=i,
            user="u",
            partition="p",
            submit_time=T0,
            state=rng.choice(STATES),
            hold=rng.choice(["", "", "user"]),
            licenses=rng.choice(["", "", "a:1"]),
            reservation=rng.choice(["", "", "r1"]),
            gres=rng.choice(["", "", "gpu:1"]),
            tres_per_job=rng.choice(["", "", "gres/gpu=2"]),
            deadline=rng.choice([None, T0 + timedelta(minutes=rng.randrange(60))]),
        )
        for i in range(1, count + 1)
    )


@pytest.mark.parametrize("seed", range(5))
def test_not_and_above_read_what_the_orm_reads(seed):
    rng = random.Random(seed)
    _jobs(rng, 60)
    holding = sorted(s.value for s in HOLDING_JOB_STATES)
    cut = T0 + timedelta(minutes=rng.randrange(60))
    cases = [
        (
            {"state": holding, "licenses": rows.Not("")},
            Job.objects.filter(state__in=holding).exclude(licenses=""),
        ),
        (
            {"state": JobState.PENDING, "reservation": rows.Not("")},
            Job.objects.filter(state=JobState.PENDING).exclude(reservation=""),
        ),
        (
            {"state": JobState.PENDING, "deadline": rows.Not(None), "hold": rows.Not("")},
            Job.objects.filter(state=JobState.PENDING, deadline__isnull=False).exclude(hold=""),
        ),
        # A nullable field: NULL is not the value, as exclude() has it.
        ({"deadline": rows.Not(cut)}, Job.objects.exclude(deadline=cut)),
        ({"deadline": rows.Above(cut)}, Job.objects.filter(deadline__gt=cut)),
        ({"gres": rows.Not(""), "hold": ""}, Job.objects.exclude(gres="").filter(hold="")),
    ]
    for where, queryset in cases:
        got = sorted(r[0] for r in rows.select(Job, ("id",), where))
        assert got == sorted(queryset.values_list("id", flat=True)), where


def test_above_on_a_datetime_column():
    for i, hours in enumerate((-2, 0, 1, 5)):
        Reservation.objects.create(
            name=f"r{i}", start_time=T0 - timedelta(hours=3), end_time=T0 + timedelta(hours=hours), nodes=""
        )
    where = {"end_time": rows.Above(T0)}
    got = [r[0] for r in rows.select(Reservation, ("name",), where, order_by=("name",))]
    assert got == ["r2", "r3"]
    orm = Reservation.objects.filter(end_time__gt=T0).order_by("name").values_list("name", flat=True)
    assert got == list(orm)
