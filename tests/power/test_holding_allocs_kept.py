"""The holding jobs' allocations the power-save cycle and its watch read
(power.cycle_input.holding_allocs, #18) are kept between cycles: the jobs written since
are read again, not every holding job; against the plain read of every one on random
writes (starts, ends, allocations changed, jobs added and removed)."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from cluster.core.states import HOLDING_JOB_STATES, JobState
from cluster.models import Job
from cluster.services import pass_snapshot
from cluster.services import rows as plain_rows
from power import cycle_input

pytestmark = pytest.mark.django_db

SUBMIT = datetime(2026, 1, 1, tzinfo=UTC)
_STATES = [*sorted(HOLDING_JOB_STATES), JobState.PENDING, JobState.COMPLETED, JobState.CANCELLED]


def _plain() -> list[tuple]:
    holding = [s.value for s in HOLDING_JOB_STATES]
    return plain_rows.select(Job, ("id", "state", "alloc"), {"state": holding}, order_by=("id",))


def _job(rng: random.Random, job_id: int) -> Job:
    return Job(
        id=job_id,
        user="alice",
        partition="batch",
        submit_time=SUBMIT,
        state=rng.choice(_STATES),
        alloc=sorted(rng.sample([f"n{i}" for i in range(20)], rng.randint(0, 3))),
    )


@pytest.mark.parametrize("seed", range(5))
def test_kept_holding_allocs_are_those_read_afresh(seed) -> None:
    rng = random.Random(seed)
    Job.objects.bulk_create([_job(rng, i) for i in range(1, 30)])
    next_id = 30
    with pass_snapshot.keep():
        for _ in range(25):
            assert cycle_input.holding_allocs() == _plain()
            for _ in range(rng.randint(0, 4)):
                roll = rng.random()
                job = Job.objects.order_by("?").first()
                if roll < 0.4 and job is not None:
                    Job.objects.filter(pk=job.pk).update(state=rng.choice(_STATES))
                elif roll < 0.6 and job is not None:
                    job.alloc = sorted(rng.sample([f"n{i}" for i in range(20)], rng.randint(0, 3)))
                    job.save(update_fields=["alloc"])
                elif roll < 0.8:
                    _job(rng, next_id).save()
                    next_id += 1
                elif job is not None:
                    job.delete()


def test_a_job_started_is_read_again_alone() -> None:
    rng = random.Random(1)
    Job.objects.bulk_create([_job(rng, i) for i in range(1, 40)])
    Job.objects.filter(pk=7).update(state=JobState.PENDING, alloc=[])
    with pass_snapshot.keep():
        cycle_input.holding_allocs()
        Job.objects.filter(pk=7).update(state=JobState.RUNNING, alloc=["n3"])
        with CaptureQueriesContext(connection) as queries:
            found = cycle_input.holding_allocs()
    reads = [q["sql"] for q in queries if q["sql"].startswith("SELECT") and "cluster_job" in q["sql"]]
    assert reads and all('"id" IN' in sql for sql in reads), reads
    assert (7, JobState.RUNNING, ["n3"]) in found
    assert found == _plain()
