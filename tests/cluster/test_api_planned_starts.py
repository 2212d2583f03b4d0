"""``?start=1`` on the job list and a job (squeue --start, %S/%Y, scontrol show job): a
pending job carries backfill's planned start, end and nodes, as Slurm's job records do."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from cluster.core.states import JobState
from cluster.models import Job
from cluster.services.jobs import job_submit
from cluster.services.scheduling import schedule_pass

pytestmark = pytest.mark.django_db


def _submit(user, **spec) -> int:
    return job_submit(user=user, spec={"wrap": "true", "work_dir": "/tmp", **spec}).job_ids[0]


@pytest.fixture
def queue(demo, users):
    """debug's eight nodes held for 10 minutes; behind it a job for all eight (5 minutes),
    a held job, and a job of bob's."""
    alice = users["alice"]
    running = _submit(alice, partition="debug", nodes="8", exclusive=True, time="10")
    schedule_pass()
    assert Job.objects.get(pk=running).state == JobState.RUNNING
    waiting = _submit(alice, partition="debug", nodes="8", exclusive=True, time="5")
    held = _submit(alice, partition="debug", hold=True, time="5")
    schedule_pass()
    return {"running": Job.objects.get(pk=running), "waiting": waiting, "held": held}


def _by_id(body) -> dict[int, dict]:
    return {job["job_id"]: job for job in body["results"]}


def test_a_pending_job_gets_backfill_s_plan_only_when_asked(queue, api):
    running, waiting, held = queue["running"], queue["waiting"], queue["held"]
    plain = _by_id(api("alice").get("/api/jobs/").json())
    assert plain[waiting]["start_time"] is None and "sched_nodes" not in plain[waiting]

    planned = _by_id(api("alice").get("/api/jobs/?start=1").json())
    start = datetime.fromisoformat(planned[waiting]["start_time"])
    # It starts when the running job's time limit ends, on the nodes that job holds.
    assert start == running.start_time + timedelta(minutes=10)
    assert datetime.fromisoformat(planned[waiting]["end_time"]) == start + timedelta(minutes=5)
    assert planned[waiting]["sched_nodes"] == "node[01-08]"
    # A held job has no plan: no start (N/A, Unknown) and no nodes.
    assert planned[held]["start_time"] is None and planned[held]["sched_nodes"] == ""
    # A running job is left as it is.
    assert planned[running.id] == plain[running.id]

    one = api("alice").get(f"/api/jobs/{waiting}/?start=1").json()
    assert (one["start_time"], one["sched_nodes"]) == (planned[waiting]["start_time"], "node[01-08]")
    assert api("alice").get(f"/api/jobs/{waiting}/").json()["start_time"] is None


def test_nothing_is_written_and_a_page_without_pending_jobs_runs_no_pass(queue, api):
    before = list(Job.objects.order_by("id").values())
    api("alice").get("/api/jobs/?start=1")
    assert list(Job.objects.order_by("id").values()) == before
    with CaptureQueriesContext(connection) as plain:
        api("alice").get("/api/jobs/?state=R")
    with CaptureQueriesContext(connection) as asked:
        api("alice").get("/api/jobs/?state=R&start=1")
    assert len(asked.captured_queries) == len(plain.captured_queries)


def test_state_words_are_slurm_s_names_and_codes(queue, api):
    """(Beside the plan: the same list's ?state=.) A state Slurm knows and fsched never gives
    matches no job; a word Slurm does not know is squeue's error."""
    body = api("alice").get("/api/jobs/?state=revoked,STAGE_OUT,pd").json()
    assert {job["state"] for job in body["results"]} == {"PENDING"}
    assert api("alice").get("/api/jobs/?state=SE").json()["results"] == []
    refused = api("alice").get("/api/jobs/?state=bogus")
    assert (refused.status_code, refused.json()["error"]) == (400, "Invalid job state specified: bogus")
