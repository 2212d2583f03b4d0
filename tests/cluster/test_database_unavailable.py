"""A request that meets an unreachable database answers 503 "nothing was stored" (issue #11).

The database fails for real (tests/cluster/database_lock.py): the request's queries
raise OperationalError as they would while PostgreSQL restarts.
"""

from __future__ import annotations

import pytest

from cluster.models import Job
from tests.cluster.database_lock import write_lock

pytestmark = pytest.mark.django_db(transaction=True)

MIDDLEWARE = "cluster.unavailable.DatabaseUnavailableMiddleware"


@pytest.fixture
def guarded(settings):
    if MIDDLEWARE not in settings.MIDDLEWARE:
        settings.MIDDLEWARE = [MIDDLEWARE, *settings.MIDDLEWARE]


SPEC = {"wrap": "true", "work_dir": "/tmp"}


def test_a_submission_while_the_database_is_down_answers_503_and_stores_nothing(demo, api, guarded):
    alice = api("alice")
    with write_lock():
        answer = alice.post("/api/jobs/", SPEC, format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    assert answer.status_code == 503
    assert answer["Retry-After"] == "5"
    body = answer.json()
    assert body["stored"] is False and body["retry_after"] == 5
    assert "nothing was stored" in body["error"]
    assert not Job.objects.exists()
    # The retry the answer asks for, with the same key, stores the job once.
    again = alice.post("/api/jobs/", SPEC, format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    assert again.status_code == 201, again.content
    assert Job.objects.count() == 1


def test_a_console_page_while_the_database_is_down_is_a_short_503_page(demo, users, client, guarded):
    client.force_login(users["alice"])
    with write_lock():
        page = client.get("/jobs/")
    assert page.status_code == 503 and page["Retry-After"] == "5"
    assert page["Content-Type"].startswith("text/plain")
    assert "nothing was stored" in page.content.decode()


def test_a_request_that_is_not_about_the_database_still_fails_as_before(demo, api, guarded):
    assert api("alice").get("/api/jobs/999999/").status_code == 404


def test_without_the_middleware_the_api_still_answers_503_but_cannot_say_what_was_stored(demo, api, settings):
    settings.MIDDLEWARE = [m for m in settings.MIDDLEWARE if m != MIDDLEWARE]
    alice = api("alice")
    with write_lock():
        answer = alice.post("/api/jobs/", SPEC, format="json")
    assert answer.status_code == 503 and answer["Retry-After"] == "5"
    assert answer.json()["stored"] is None and "check before retrying" in answer.json()["error"]


def test_taking_job_ids_is_not_counted_as_something_stored(db):
    # A gap in the ids is not a stored job: the 503 may still say "nothing was stored".
    from django.db import connection

    from cluster.models import JobIdCounter
    from cluster.services import rows
    from cluster.services.errors import storing_nothing
    from cluster.unavailable import _Writes

    writes = _Writes()
    with connection.execute_wrapper(writes):
        with storing_nothing():
            rows.add_returning(JobIdCounter, 1, "next_id", 1)
        assert not writes.stored
        rows.add_returning(JobIdCounter, 1, "next_id", 1)
    assert writes.stored
