"""Another user's script through the API, and the console pages' fragments, with and without
slurm.conf's PrivateData=jobs (#15 point 1): the owner reads the script, nobody else does."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.django_db

SCRIPT = "#!/bin/sh\n# alice-secret-script-5150\ntrue\n"


@pytest.fixture
def private_jobs(private_data):
    private_data("jobs")


def submit(api) -> int:
    body = {"script": SCRIPT, "environment": {"ALICE_ENV": "alice-env-9"}, "work_dir": "/tmp", "hold": True}
    return api("alice").post("/api/jobs/", body, format="json").json()["job_id"]


def test_with_private_data_jobs_another_user_cannot_see_the_job_nor_its_script(private_jobs, api):
    job_id = submit(api)
    mine = api("alice").get(f"/api/jobs/{job_id}/script/")
    assert mine.status_code == 200
    assert mine.json()["script"] == SCRIPT and mine.json()["environment"] == {"ALICE_ENV": "alice-env-9"}

    bob = api("bob")
    assert job_id not in [j["job_id"] for j in bob.get("/api/jobs/?state=all").json()["results"]]
    for path in (f"/api/jobs/{job_id}/", f"/api/jobs/{job_id}/script/", f"/api/jobs/{job_id}/explain/"):
        answer = bob.get(path)
        assert answer.status_code == 404, path
        assert answer.json() == {"error": "Invalid job id specified"}
        assert "alice-secret-script-5150" not in answer.content.decode()
    assert api("admin").get(f"/api/jobs/{job_id}/script/").json()["script"] == SCRIPT
    # Acting on it answers the same: nothing says the job exists.
    for action in ("cancel", "hold", "release"):
        answer = bob.post(f"/api/jobs/{job_id}/{action}/", {}, format="json")
        assert (answer.status_code, answer.json()) == (404, {"error": "Invalid job id specified"})
    bulk = bob.post("/api/jobs/cancel/", {"job_ids": [job_id]}, format="json").json()
    assert bulk == {"cancelled": [], "errors": [{"job_id": str(job_id), "error": "Invalid job id specified"}]}


def test_without_private_data_others_see_the_job_but_not_its_script_or_output_paths(demo, api):
    job_id = submit(api)
    bob = api("bob")
    seen = bob.get(f"/api/jobs/{job_id}/").json()
    assert seen["user"] == "alice"
    assert (seen["std_out"], seen["work_dir"], seen["command"]) == (None, None, None)
    refused = bob.get(f"/api/jobs/{job_id}/script/")
    assert refused.status_code == 403 and refused.json() == {"error": "Access/permission denied"}
    assert api("alice").get(f"/api/jobs/{job_id}/").json()["std_out"] == f"/tmp/slurm-{job_id}.out"


def test_the_console_pages_follow_private_data_jobs(private_jobs, api, client, users):
    job_id = submit(api)
    client.force_login(users["bob"])
    for path in ("/jobs/_table?state=all", "/_summary", "/_events", "/jobs/?state=all"):
        html = client.get(path).content.decode()
        assert f'data-job-id="{job_id}"' not in html, path
    assert client.get(f"/jobs/{job_id}/").status_code == 404
    assert client.get(f"/jobs/{job_id}/_body").status_code == 404
    client.force_login(users["alice"])
    html = client.get(f"/jobs/{job_id}/").content.decode()
    assert "alice-secret-script-5150" in html and "alice-env-9" in html
    assert f"/tmp/slurm-{job_id}.out" in html


def test_private_data_nodes_and_reservations_in_the_api(private_data, api):
    private_data("nodes,reservations")
    assert api("bob").get("/api/nodes/").json()["results"] == []
    assert api("bob").get("/api/nodes/node01/").status_code == 404
    assert api("admin").get("/api/nodes/").json()["results"]
    made = api("admin").post(
        "/api/reservations/",
        {"name": "alices", "start_time": "now", "duration": "60", "nodes": "node01", "users": "alice"},
        format="json",
    )
    assert made.status_code == 201, made.content
    assert [r["name"] for r in api("alice").get("/api/reservations/").json()["reservations"]] == ["alices"]
    assert api("bob").get("/api/reservations/").json()["reservations"] == []
    assert api("bob").get("/api/reservations/alices/").status_code == 404
    text = json.dumps(api("bob").get("/api/reservations/?name=alices").json())
    assert "alices" not in text.replace("Reservation alices not found", "")
