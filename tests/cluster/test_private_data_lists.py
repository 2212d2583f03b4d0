"""The console's lists (jobs, events, the node table) and their exports under slurm.conf's
PrivateData (#15 points 1 and 3): what a page hides, its export hides too."""

from __future__ import annotations

import json

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def _submit(api, user: str, name: str) -> int:
    body = {"wrap": "true", "work_dir": "/tmp", "hold": True, "name": name}
    return api(user).post("/api/jobs/", body, format="json").json()["job_id"]


def _browser(users, name: str) -> Client:
    client = Client()
    client.force_login(users[name])
    return client


def test_jobs_and_their_events_are_the_owners_with_private_data_jobs(private_data, users, api):
    private_data("jobs")
    alices, bobs = _submit(api, "alice", "alice-job-77"), _submit(api, "bob", "bob-job-88")
    bob = _browser(users, "bob")
    page = bob.get("/jobs/?state=all").content.decode()
    assert "bob-job-88" in page and "alice-job-77" not in page
    exported = json.loads(bob.get("/jobs/export?state=all&format=json").content)
    assert [row["NAME"] for row in exported] == ["bob-job-88"]
    events = json.loads(bob.get("/events/export?format=json").content)
    subjects = {value for row in events for value in row.values() if str(value).startswith("job ")}
    assert f"job {bobs}" in subjects and f"job {alices}" not in subjects
    staff = json.loads(_browser(users, "admin").get("/jobs/export?state=all&format=json").content)
    assert {row["NAME"] for row in staff} == {"alice-job-77", "bob-job-88"}


def test_the_node_table_is_empty_for_users_with_private_data_nodes(private_data, users):
    private_data("nodes")
    bob = _browser(users, "bob")
    assert json.loads(bob.get("/nodes/export?format=json").content) == []
    assert "node01" not in bob.get("/nodes/?view=table").content.decode()
    assert json.loads(_browser(users, "admin").get("/nodes/export?format=json").content)
