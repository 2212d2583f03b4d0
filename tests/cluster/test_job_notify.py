"""scontrol notify in the controller (cluster/services/job_notify.py): slurmctld's
_slurm_rpc_job_notify and srun_user_message rules, the holder's renewal answering what it
has not printed, the batch job's agent told, the event kept."""

from __future__ import annotations

import pytest

from cluster import publish
from cluster.models import AllocationHolder, Event, Job
from cluster.services.scheduling import schedule_pass
from tests.cluster.test_allocations import _allocate, _running
from tests.cluster.test_lifecycle import register, submit

pytestmark = pytest.mark.django_db


def notify(api, who: str, job_id: int, message: object = "hello there"):
    return api(who).post(f"/api/jobs/{job_id}/notify/", {"message": message}, format="json")


def renew(api, job_id: int, seen: int = 0) -> dict:
    answer = api("alice").post(f"/api/jobs/{job_id}/allocation/renew/", {"seen": seen}, format="json")
    assert answer.status_code == 200, answer.content
    return answer.json()


def test_an_allocation_s_holder_gets_the_message_at_its_next_renewal(demo, users, api):
    job = _running(api)
    assert renew(api, job.id)["notifications"] == []
    answer = notify(api, "alice", job.id)
    assert answer.status_code == 200 and answer.json() == {"delivered_to": "holder"}
    notify(api, "admin", job.id, "from the admin")
    notes = renew(api, job.id)["notifications"]
    assert [n["message"] for n in notes] == ["hello there", "from the admin"]
    # What the holder has printed is not answered again.
    later = renew(api, job.id, seen=notes[0]["id"])["notifications"]
    assert [n["message"] for n in later] == ["from the admin"]
    assert renew(api, job.id, seen=notes[1]["id"])["notifications"] == []
    event = Event.objects.filter(job_id=job.id, reason="notify").order_by("id").first()
    assert (event.user, event.detail) == ("alice", {"message": "hello there"})


def test_a_pending_allocation_request_is_told_too(demo, users, api):
    job_id = _allocate(api)  # no node registered: it stays pending
    assert notify(api, "alice", job_id).json() == {"delivered_to": "holder"}


def test_a_running_batch_job_s_agent_writes_it(demo, users, django_capture_on_commit_callbacks):
    sent = []
    publish.install_agents(sent.append)
    try:
        register()
        job_id = submit(users["alice"])
        schedule_pass()
        job = Job.objects.get(pk=job_id)
        from rest_framework.test import APIClient

        from cluster.services.api_tokens import token_issue

        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token_issue(users['alice'])[1]}")
        sent.clear()
        with django_capture_on_commit_callbacks(execute=True):
            answer = client.post(f"/api/jobs/{job_id}/notify/", {"message": "hi"}, format="json")
        assert answer.status_code == 200, answer.content
        assert sent == [{job.batch_host: [{"type": "notify", "job_id": job_id, "message": "hi"}]}]
    finally:
        publish.install_agents(None)


def test_a_pending_batch_job_has_no_one_to_tell(demo, users, api):
    job_id = submit(users["alice"])  # no node registered
    answer = notify(api, "alice", job_id)
    assert (answer.status_code, answer.json()["error"]) == (400, "Requested operation is presently disabled")
    assert not Event.objects.filter(job_id=job_id, reason="notify").exists()


def test_an_allocation_without_a_holder_has_no_one_to_tell(demo, users, api):
    job = _running(api)
    AllocationHolder.objects.filter(job_id=job.id).delete()  # salloc --no-shell's
    answer = notify(api, "alice", job.id)
    assert answer.json()["error"] == "Requested operation is presently disabled"


def test_refusals_in_slurmctld_s_words(demo, users, api):
    job = _running(api)
    answer = notify(api, "bob", job.id)
    assert (answer.status_code, answer.json()["error"]) == (403, "Invalid user id")
    answer = notify(api, "alice", 987654)
    assert (answer.status_code, answer.json()["error"]) == (404, "Invalid job id specified")
    Job.objects.filter(pk=job.id).update(state="COMPLETED")
    answer = notify(api, "alice", job.id)
    assert answer.json()["error"] == "Job/step already completing or completed"
    for bad in (None, 5, "x" * 5000, "a\x00b"):
        answer = notify(api, "alice", job.id, bad)
        assert answer.status_code == 400 and "message" in answer.json()["error"]
    assert not Event.objects.filter(job_id=job.id, reason="notify").exists()


def test_a_bad_seen_is_refused(demo, users, api):
    job = _running(api)
    answer = api("alice").post(f"/api/jobs/{job.id}/allocation/renew/", {"seen": "x"}, format="json")
    assert answer.status_code == 400 and "seen" in answer.json()["error"]
