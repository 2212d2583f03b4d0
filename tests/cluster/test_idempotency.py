"""POST /api/jobs/ with an Idempotency-Key: a retried submission never creates a second job."""

from __future__ import annotations

import threading

import pytest

from cluster.models import Event, Job, SubmitKey

pytestmark = pytest.mark.django_db

BODY = {"wrap": "true", "work_dir": "/tmp"}


def submit(client, key: str | None, **fields):
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key is not None else {}
    return client.post("/api/jobs/", {**BODY, **fields}, format="json", **headers)


def test_the_same_key_returns_the_first_jobs_and_creates_nothing(demo, api):
    first = submit(api("alice"), "k-1")
    again = submit(api("alice"), "k-1")
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert Job.objects.count() == 1
    assert Event.objects.filter(new_state="PENDING").count() == 1


def test_an_array_retried_with_its_key_is_the_same_array(demo, api):
    first = submit(api("alice"), "arr", array="0-3").json()
    again = submit(api("alice"), "arr", array="0-3").json()
    assert again == first
    assert Job.objects.count() == 4


def test_keys_are_per_user(demo, api):
    alice = submit(api("alice"), "shared").json()
    bob = submit(api("bob"), "shared").json()
    assert alice["job_id"] != bob["job_id"]
    assert set(Job.objects.values_list("user", flat=True)) == {"alice", "bob"}


def test_without_a_key_each_post_is_a_job(demo, api):
    submit(api("alice"), None)
    submit(api("alice"), None)
    assert Job.objects.count() == 2
    assert not SubmitKey.objects.exists()


def test_a_refused_submission_stores_no_key(demo, api):
    refused = submit(api("alice"), "bad-then-good", partition="nosuch")
    assert refused.status_code == 400
    assert not SubmitKey.objects.exists()
    accepted = submit(api("alice"), "bad-then-good")
    assert accepted.status_code == 201
    assert Job.objects.count() == 1


@pytest.mark.parametrize("key", ["", "x" * 129, "tab\there", "é"])
def test_a_malformed_key_is_refused_and_stores_nothing(demo, api, key):
    response = submit(api("alice"), key)
    assert response.status_code == 400
    assert "Idempotency-Key" in response.json()["error"]
    assert Job.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_two_requests_with_one_key_at_once_make_one_job(demo, api):
    clients = [api("alice"), api("alice")]
    answers: list[dict] = []

    def post(client) -> None:
        response = submit(client, "race")
        if response.status_code == 503:
            # "nothing was stored, retry": the in-memory test database's shared cache locks
            # a table another connection is writing (SQLITE_LOCKED), which the embedded
            # mode's WAL file never does; a client retries as told, with the same key.
            assert response.json()["stored"] is False
            response = submit(client, "race")
        answers.append(response.json())

    threads = [threading.Thread(target=post, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert answers[0] == answers[1]
    assert Job.objects.count() == 1
