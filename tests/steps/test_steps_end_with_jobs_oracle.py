"""A completion batch ends the running steps of jobs no longer running
(``steps.services.end_steps_of_ended_jobs``), and answers at once, without the ORM's
query, when no step runs at all: the steps it ends are those the query selects, on
random jobs and steps (fixed seeds; some draws with no running step)."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from cluster.core.states import JobState
from cluster.models import Job
from steps.models import Step
from steps.services import LIVE_JOB, RUNNING, end_steps_of_ended_jobs

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 1, 1, tzinfo=UTC)
LATER = datetime(2026, 1, 2, tzinfo=UTC)
ENDED = ("COMPLETED", "CANCELLED", "FAILED")
SHARES = [(0, 0.0), (1, 0.0), (2, 0.3), (3, 0.6), (4, 1.0), (5, 0.05)]  # (seed, share of steps running)


def make(rng: random.Random, running_share: float) -> None:
    states = [s.value for s in JobState]
    Job.objects.bulk_create(
        Job(id=i, user="u", partition="batch", state=rng.choice(states), submit_time=NOW, node_list="node01")
        for i in range(1, 41)
    )
    Step.objects.bulk_create(
        Step(
            job_id=rng.randrange(1, 41) if k else 1,
            step_id=k,
            state=RUNNING if rng.random() < running_share else rng.choice(ENDED),
            node_list="node01",
            start_time=NOW,
        )
        for k in range(60)
    )


def snapshot() -> dict[int, tuple[str, datetime | None]]:
    return {pk: (state, end) for pk, state, end in Step.objects.values_list("pk", "state", "end_time")}


@pytest.mark.parametrize(("seed", "running_share"), SHARES)
def test_the_steps_ended_are_the_ones_the_query_selects(seed, running_share):
    make(random.Random(seed), running_share)
    query = Step.objects.filter(state=RUNNING).exclude(job__state__in=LIVE_JOB)
    chosen = set(query.values_list("pk", flat=True))
    before = snapshot()
    assert end_steps_of_ended_jobs(LATER) == len(chosen)
    expected = {pk: (("CANCELLED", LATER) if pk in chosen else was) for pk, was in before.items()}
    assert snapshot() == expected
