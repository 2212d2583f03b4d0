"""Slurm's either-or licenses (``-L 'fluent:1|ansys:1'``) under AccountingStorageEnforce:
the limits read the request with the grammar that admitted it. They re-parsed it with
the plain one, whose ValueError reached the client as HTTP 500 (and failed every pass
that met such a job)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIRequestFactory

from cluster.api.errors import exception_handler
from cluster.models import Job
from cluster.services import agents
from cluster.services.scheduling import schedule_pass
from limits.services import record_add, usage_cycle_run
from tests.limits.test_services import enforce

pytestmark = pytest.mark.django_db

NODES = [f"node{i:02d}" for i in range(1, 33)]


@pytest.fixture
def enforced(demo, users):
    admin = users["admin"]
    record_add(actor=admin, entity="account", names=["physics"])
    record_add(actor=admin, entity="user", names=["alice"], options=["Account=physics"])
    enforce("associations,limits")


def test_an_either_or_license_request_is_taken_started_and_charged(enforced, api):
    reply = api("alice").post(
        "/api/jobs/", {"wrap": "true", "work_dir": "/tmp", "licenses": "fluent:1|ansys:1"}, format="json"
    )
    assert reply.status_code == 201, reply.content
    job_id = reply.json()["job_ids"][0]
    agents.agent_register(
        agent_id="test:1",
        nodes=[{"name": n, "cpus": 4, "real_memory": 2000, "boot_time": 1.0} for n in NODES],
        running=[],
        completions=[],
    )
    schedule_pass()
    job = Job.objects.get(pk=job_id)
    assert job.state == "RUNNING" and job.licenses_alloc == "fluent:1"
    assert usage_cycle_run()  # the running job's shape is read from what it holds


def test_a_bad_license_request_is_refused_with_slurms_words(enforced, api):
    spec = {"wrap": "true", "work_dir": "/tmp", "licenses": "fluent:1|ansys:1,matlab"}
    reply = api("alice").post("/api/jobs/", spec, format="json")
    assert reply.status_code == 400
    assert reply.json()["error"].startswith("Invalid license specification")


def test_a_parsers_value_error_that_reaches_the_api_is_a_400():
    context = {"request": APIRequestFactory().post("/api/jobs/"), "view": None}
    reply = exception_handler(ValueError("Invalid license specification: x|"), context)
    assert reply.status_code == 400 and reply.data == {"error": "Invalid license specification: x|"}
    reply = exception_handler(ValueError("bad count"), context)
    assert reply.status_code == 400 and reply.data == {"error": "Invalid request: bad count"}
