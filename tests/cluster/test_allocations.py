"""Allocation-only jobs and job credentials in the controller (#16 point 2): salloc's
request has no script and no ``batch`` step, the launch tells the agent to start no
process and carries the job's credential, the holder's release ends the job with its
command's status, a silent holder's allocation is ended, and the credential acts on its
own job only, while it runs."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from cluster.models import AllocationHolder, Job, JobCredential
from cluster.services import agents
from cluster.services.allocations import expire_holders
from cluster.services.api_tokens import digest
from cluster.services.scheduling import schedule_pass
from cluster.services.state import launch_payload
from tests.cluster.test_lifecycle import done, register

pytestmark = pytest.mark.django_db


def _allocate(api, who: str = "alice", **spec) -> int:
    answer = api(who).post("/api/jobs/", {"allocation": True, "work_dir": "/tmp", **spec}, format="json")
    assert answer.status_code == 201, answer.content
    return answer.json()["job_id"]


def _running(api, who: str = "alice", **spec) -> Job:
    register()
    job_id = _allocate(api, who, **spec)
    schedule_pass()
    job = Job.objects.get(pk=job_id)
    assert job.state == "RUNNING"
    return job


def _with_credential(client, text: str):
    client.credentials(HTTP_AUTHORIZATION=f"Job {text}")
    return client


def test_an_allocation_has_no_script_and_is_launched_without_a_process(demo, users, api):
    job = _running(api, name="sh")
    assert (job.batch, job.script, job.name, job.requeue) == (False, "", "sh", False)
    assert api("alice").get(f"/api/jobs/{job.id}/").json()["batch"] is False
    assert AllocationHolder.objects.filter(job_id=job.id).exists()
    wire = launch_payload(job)["job"]
    assert wire["allocation"] is True
    assert wire["credential"].startswith(f"{job.id}.")


def test_an_allocation_takes_no_script_and_a_batch_job_still_needs_one(demo, users, api):
    refused = api("alice").post(
        "/api/jobs/", {"allocation": True, "wrap": "true", "work_dir": "/tmp"}, format="json"
    )
    assert refused.status_code == 400
    assert "takes no script" in refused.json()["error"]
    empty = api("alice").post("/api/jobs/", {"work_dir": "/tmp"}, format="json")
    assert empty.json()["error"] == "Batch script is empty!"


def test_the_release_ends_it_with_the_commands_status_and_no_batch_step(demo, users, api):
    job = _running(api)
    agents.job_started(job_id=job.id, node=job.batch_host, run=0)
    answer = api("alice").post(f"/api/jobs/{job.id}/allocation/release/", {"exit_code": 3}, format="json")
    assert answer.status_code == 200, answer.content
    # The agent ends its held allocation with the status the release carried (agent/jobs.py).
    assert done(Job.objects.get(pk=job.id), exit_code=3, run=0)
    job.refresh_from_db()
    assert (job.state, job.exit_code) == ("FAILED", 3)
    assert not AllocationHolder.objects.filter(job_id=job.id).exists()
    answer = api("alice").get("/api/accounting/jobs/", {"job_id": str(job.id)}).json()
    rows = answer["jobs"] if isinstance(answer, dict) and "jobs" in answer else answer["results"]
    assert [(r["state"], r["steps"]) for r in rows] == [("FAILED", [])]


def test_releasing_a_pending_request_cancels_it(demo, users, api):
    job_id = _allocate(api)  # no node registered: it stays pending
    answer = api("alice").post(f"/api/jobs/{job_id}/allocation/release/", {}, format="json")
    assert answer.json()["state"] == "CANCELLED"


def test_another_user_can_neither_renew_nor_release(demo, users, api):
    job_id = _allocate(api)
    for action in ("renew", "release"):
        answer = api("bob").post(f"/api/jobs/{job_id}/allocation/{action}/", {}, format="json")
        assert answer.status_code in (403, 404)
    assert Job.objects.get(pk=job_id).state == "PENDING"


def test_a_silent_holder_loses_its_allocation_and_a_renewing_one_keeps_it(demo, users, api):
    kept = _running(api)
    lost = _running(api).id
    pending = _allocate(api, hold=True)
    later = timezone.now() + timedelta(seconds=3600)
    renewed = api("alice").post(f"/api/jobs/{kept.id}/allocation/renew/", format="json").json()
    assert renewed["job"]["state"] == "RUNNING" and renewed["lease_seconds"] == 120
    AllocationHolder.objects.filter(job_id=kept.id).update(lease_until=later + timedelta(seconds=60))
    assert sorted(expire_holders(now=later)) == sorted([lost, pending])
    states = dict(Job.objects.filter(pk__in=[kept.id, lost, pending]).values_list("id", "state"))
    assert (states[kept.id], states[pending]) == ("RUNNING", "CANCELLED")
    # A started one is asked to end (its agent's cancel), and ends TIMEOUT as Slurm's
    # InactiveLimit ends a job whose salloc stopped answering.
    job = Job.objects.get(pk=lost)
    assert done(job, signal=15)
    job.refresh_from_db()
    assert job.state == "TIMEOUT"


def test_the_credential_acts_on_its_own_job_only_while_it_runs(demo, users, api):
    job = _running(api)
    other = _allocate(api)
    text = launch_payload(job)["job"]["credential"]
    stored = JobCredential.objects.get(pk=job.id)
    assert stored.digest == digest(text) and text not in stored.digest
    client = _with_credential(api(None), text)
    assert client.get(f"/api/jobs/{job.id}/").json()["user"] == "alice"
    listed = client.get("/api/jobs/", {"job_id": str(job.id), "state": "all"}).json()
    assert [j["job_id"] for j in listed["results"]] == [job.id]
    for refused in (
        client.get(f"/api/jobs/{other}/"),
        client.get("/api/jobs/"),
        client.get("/api/nodes/"),
        client.post("/api/jobs/cancel/", {"job_ids": [other]}, format="json"),
        client.post(f"/api/jobs/{other}/cancel/", {}, format="json"),
    ):
        assert refused.status_code == 403
        assert "acts on its own job only" in refused.json()["error"]
    assert Job.objects.get(pk=other).state == "PENDING"
    cancelled = client.post("/api/jobs/cancel/", {"job_ids": [job.id]}, format="json")
    assert cancelled.json()["cancelled"] == [job.id]
    assert done(Job.objects.get(pk=job.id), signal=15)
    after = client.get(f"/api/jobs/{job.id}/")
    assert after.status_code == 401
    assert after.json()["error"].startswith(f"Job credential expired: job {job.id} is not running.")


def test_a_wrong_or_replaced_credential_is_refused(demo, users, api):
    job = _running(api)
    first = launch_payload(job)["job"]["credential"]
    second = launch_payload(job)["job"]["credential"]  # a launch sent again mints anew
    client = api(None)
    for text in (first, f"{job.id}.nonsense", "garbage"):
        assert _with_credential(client, text).get(f"/api/jobs/{job.id}/").status_code == 401
    assert _with_credential(client, second).get(f"/api/jobs/{job.id}/").status_code == 200


def test_releasing_one_whose_prolog_still_runs_cancels_it(demo, users, api):
    job = _running(api)  # RUNNING, its agent not yet reporting it started
    answer = api("alice").post(f"/api/jobs/{job.id}/allocation/release/", {"signal": 2}, format="json")
    assert answer.status_code == 200
    job.refresh_from_db()
    assert job.final_state == "CANCELLED"
    assert done(job, signal=15)
    job.refresh_from_db()
    assert job.state == "CANCELLED"


def test_a_release_with_a_bad_status_is_refused_and_changes_nothing(demo, users, api):
    job = _running(api)
    agents.job_started(job_id=job.id, node=job.batch_host, run=0)
    for body in ({"exit_code": 256}, {"exit_code": "3"}, {"signal": -1}):
        answer = api("alice").post(f"/api/jobs/{job.id}/allocation/release/", body, format="json")
        assert answer.status_code == 400
    assert AllocationHolder.objects.filter(job_id=job.id).exists()
    assert Job.objects.get(pk=job.id).state == "RUNNING"
