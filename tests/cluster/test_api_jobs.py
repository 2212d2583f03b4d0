"""Job submission and control through the REST API: validation, ownership, no change on error."""

from __future__ import annotations

import pytest

from cluster.models import Event, Job

pytestmark = pytest.mark.django_db

WRAP = {"wrap": "true", "work_dir": "/tmp"}


def submit(client, **fields):
    return client.post("/api/jobs/", {**WRAP, **fields}, format="json")


def test_submit_stores_the_job_before_answering(demo, api):
    response = submit(api("alice"), name="hello", partition="batch", nodes="2", ntasks="4", mem="100M")
    assert response.status_code == 201, response.json()
    job = Job.objects.get(pk=response.json()["job_id"])
    assert (job.user, job.partition, job.min_nodes, job.num_tasks, job.mem_per_node) == (
        "alice",
        "batch",
        2,
        4,
        100,
    )
    assert job.state == "PENDING"
    assert job.script.startswith("#!/bin/sh") and "true" in job.script
    assert Event.objects.filter(job_id=job.id, new_state="PENDING").count() == 1


def test_default_partition_and_job_ids_increase(demo, api):
    first = submit(api("alice")).json()["job_id"]
    second = submit(api("bob")).json()["job_id"]
    assert second == first + 1
    assert Job.objects.get(pk=first).partition == "debug"


def test_array_creates_one_job_per_task_with_throttle(demo, api):
    body = submit(api("alice"), array="0-9%3").json()
    jobs = list(Job.objects.filter(array_job_id=body["array_job_id"]).order_by("id"))
    assert [j.array_task_id for j in jobs] == list(range(10))
    assert body["job_ids"] == [j.id for j in jobs]
    assert {j.array_max_tasks for j in jobs} == {3}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"nodelist": "node[01-"}, "Invalid nodelist specification"),
        ({"nodelist": "node99"}, "Invalid node name specified"),
        ({"partition": "nosuch"}, "Invalid partition name specified"),
        ({"mem": "-1"}, "Invalid --mem specification"),
        ({"nodes": "0"}, "Invalid node count specification"),
        ({"time": "soon"}, "Invalid time limit specification"),
        ({"array": "5-1"}, "Invalid job array specification"),
        ({"licenses": "nosuch:1"}, "Invalid license specification"),
        ({"wrap": None, "script": "echo no shebang\n"}, "first line must start with #!"),
        ({"work_dir": "relative/dir"}, "Invalid working directory"),
    ],
)
def test_bad_submissions_are_refused_without_change(demo, api, fields, message):
    response = submit(api("alice"), **fields)
    assert response.status_code == 400
    assert message in response.json()["error"]
    assert Job.objects.count() == 0
    assert Event.objects.filter(kind="job").count() == 0


def test_unauthenticated_calls_are_refused(demo, api):
    anonymous = api(None)
    assert anonymous.get("/api/jobs/").status_code == 401
    response = submit(anonymous)
    assert response.status_code == 401
    assert "fsched login" in response.json()["error"]
    assert Job.objects.count() == 0


def test_a_wrong_token_is_refused(demo, api):
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    assert client.get("/api/jobs/").status_code == 401


def test_users_cancel_only_their_own_jobs(demo, api):
    job_id = submit(api("alice")).json()["job_id"]
    response = api("bob").post(f"/api/jobs/{job_id}/cancel/")
    assert response.status_code == 403
    assert response.json()["error"] == "Access/permission denied"
    assert Job.objects.get(pk=job_id).state == "PENDING"
    bulk = api("bob").post("/api/jobs/cancel/", {"job_ids": [job_id]}, format="json").json()
    assert bulk["cancelled"] == [] and "permission denied" in bulk["errors"][0]["error"]
    assert Job.objects.get(pk=job_id).state == "PENDING"
    assert api("alice").post(f"/api/jobs/{job_id}/cancel/").status_code == 200
    assert Job.objects.get(pk=job_id).state == "CANCELLED"


def test_an_admin_may_cancel_anyones_job(demo, api):
    job_id = submit(api("alice")).json()["job_id"]
    assert api("admin").post(f"/api/jobs/{job_id}/cancel/").status_code == 200
    event = Event.objects.filter(job_id=job_id, new_state="CANCELLED").get()
    assert event.user == "admin"


def test_bulk_cancel_by_user_filter(demo, api):
    for _ in range(3):
        submit(api("alice"))
    submit(api("bob"))
    result = api("alice").post("/api/jobs/cancel/", {"user": "alice"}, format="json").json()
    assert len(result["cancelled"]) == 3 and result["errors"] == []
    assert Job.objects.filter(user="bob", state="PENDING").count() == 1


def test_hold_and_release(demo, api):
    job_id = submit(api("alice")).json()["job_id"]
    held = api("alice").post(f"/api/jobs/{job_id}/hold/").json()
    assert held["reason"] == "JobHeldUser" and held["hold"] is True
    released = api("alice").post(f"/api/jobs/{job_id}/release/").json()
    assert released["hold"] is False


def test_submit_held(demo, api):
    job = submit(api("alice"), hold=True).json()
    assert Job.objects.get(pk=job["job_id"]).reason == "JobHeldUser"


def test_listing_filters(demo, api):
    submit(api("alice"), partition="batch")
    submit(api("bob"))
    client = api("alice")
    assert [j["user"] for j in client.get("/api/jobs/?user=bob").json()["results"]] == ["bob"]
    assert len(client.get("/api/jobs/?partition=batch").json()["results"]) == 1
    assert len(client.get("/api/jobs/?state=PD").json()["results"]) == 2
    assert client.get("/api/jobs/?state=R").json()["results"] == []
    assert client.get("/api/jobs/?state=BOGUS").status_code == 400


def test_update_time_limit_users_may_only_lower(demo, api):
    job_id = submit(api("alice"), time="20").json()["job_id"]
    assert api("alice").patch(f"/api/jobs/{job_id}/", {"time_limit": "10"}, format="json").status_code == 200
    assert Job.objects.get(pk=job_id).time_limit == 10
    assert api("alice").patch(f"/api/jobs/{job_id}/", {"time_limit": "30"}, format="json").status_code == 403
    assert api("admin").patch(f"/api/jobs/{job_id}/", {"time_limit": "30"}, format="json").status_code == 200
    assert Job.objects.get(pk=job_id).time_limit == 30
    record = Event.objects.filter(job_id=job_id, reason="update time_limit").first()
    assert (record.user, record.detail) == (
        "admin",
        {"before": {"time_limit": 10}, "after": {"time_limit": 30}},
    )


def test_schema_is_served(demo, api):
    response = api("alice").get("/api/schema/")
    assert response.status_code == 200
    assert b"/api/jobs/" in response.content
