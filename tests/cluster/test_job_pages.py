"""The job list's short pages are read by ids, then the jobs' rows by those ids
(``cluster.api.pagination.JobPages``): compared with the list as it was paged before (the
same view with DRF's slice of the queryset) on random jobs and random filters, pages and
users (fixed seeds), including PrivateData=jobs."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIRequestFactory, force_authenticate

from cluster.api.pagination import JobPages, LimitOffsetPagination
from cluster.api.views import JobListCreate
from cluster.core.states import JobState
from cluster.models import Job

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 1, 1, tzinfo=UTC)
USERS = ("alice", "bob", "admin")
STATES = [s.value for s in JobState]


class SlicedList(JobListCreate):
    """The list as it was paged before: DRF's slice of the filtered queryset."""

    pagination_class = LimitOffsetPagination


def make_jobs(rng: random.Random, count: int) -> None:
    jobs = []
    for i in range(1, count + 1):
        array = rng.choice((None, None, 5, 9)) if i > 9 else None
        # An end with every start: a job's run time without one is counted to now.
        start = NOW + timedelta(seconds=rng.randrange(100)) if rng.random() < 0.6 else None
        jobs.append(
            Job(
                id=i, user=rng.choice(USERS), account=rng.choice(("physics", "chem", "")),
                partition=rng.choice(("batch", "debug")), qos=rng.choice(("normal", "high")),
                name=rng.choice(("wrap", "sim", "a b")), state=rng.choice(STATES), submit_time=NOW,
                start_time=start, end_time=start and start + timedelta(seconds=rng.randrange(1, 500)),
                array_job_id=array, array_task_id=i if array else None,
                alloc=rng.choice(({}, {"node01": [1, 100]})),
                node_list=rng.choice(("", "node01", "node[01-02]")),
                environment=rng.choice(({}, {"X": "1"})), argv=rng.choice(([], ["a"])),
                priority=rng.randrange(5), exit_code=rng.choice((0, 1, 256)),
            )
        )  # fmt: skip
    Job.objects.bulk_create(jobs)


def random_query(rng: random.Random) -> str:
    params = []
    if rng.random() < 0.4:
        params.append("state=" + rng.choice(("all", "PENDING,RUNNING", "CD", "COMPLETED,FAILED")))
    choices = (("user", USERS), ("partition", ("batch", "debug")), ("account", ("physics", "chem")))
    for name, values in choices:
        if rng.random() < 0.2:
            params.append(f"{name}={','.join(rng.sample(values, rng.randrange(1, 3)))}")
    if rng.random() < 0.2:
        params.append("job_id=" + ",".join(rng.sample(["1", "5", "9_12", "17", "40", "9"], 3)))
    if rng.random() < 0.15:
        params.append("array_job_id=" + rng.choice(("5", "9")))
    params.append(f"limit={rng.choice((1, 1, 2, 10, 100, 500, 501, 1000))}")
    if rng.random() < 0.4:
        params.append(f"offset={rng.choice((0, 1, 7, 50, 199, 400))}")
    return "&".join(params)


def listed(view: type[JobListCreate], user, query: str):
    request = APIRequestFactory().get(f"/api/jobs/?{query}")
    force_authenticate(request, user=user)
    response = view.as_view()(request)
    assert response.status_code == 200, response.data
    return response.data


@pytest.mark.parametrize("seed", range(3))
def test_short_pages_read_by_ids_equal_the_sliced_queryset(seed, users):
    rng = random.Random(seed)
    make_jobs(rng, 400)
    for _ in range(25):
        query = random_query(rng)
        user = users[rng.choice(USERS)]
        assert listed(JobListCreate, user, query) == listed(SlicedList, user, query), query


def test_private_jobs_are_paged_alike(users, private_data):
    private_data("jobs")
    rng = random.Random(7)
    make_jobs(rng, 300)
    for _ in range(20):
        query = random_query(rng)
        alice = users["alice"]
        assert listed(JobListCreate, alice, query) == listed(SlicedList, alice, query), query


def test_the_list_pages_jobs_by_ids():
    assert JobListCreate.pagination_class is JobPages


def test_the_page_of_active_jobs_reads_their_ids_from_an_index_alone(users):
    """The short page's first statement, the ids of the active jobs in id order, reads the
    (state, partition, id) index only: the job's primary key is not SQLite's rowid, so the
    (state, partition) index sent it to every active job's row for its id (2.3-2.9 ms a
    ``GET /api/jobs/?limit=1`` with 550 active jobs, the benchmark's poll every 50 ms)."""
    make_jobs(random.Random(3), 50)
    with CaptureQueriesContext(connection) as queries:
        listed(JobListCreate, users["admin"], "limit=1")
    ids_query = next(
        q["sql"] for q in queries.captured_queries if q["sql"].startswith('SELECT "cluster_job"."id"')
    )
    if connection.vendor != "sqlite":
        pytest.skip("the plan checked is SQLite's")
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN QUERY PLAN " + ids_query)
        plan = " ".join(str(row[-1]) for row in cursor.fetchall())
    assert "COVERING INDEX" in plan, plan
