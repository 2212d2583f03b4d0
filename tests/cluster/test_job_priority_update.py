"""``PATCH /api/jobs/{id}/ {"priority": P}`` (scontrol update Priority=): the API's range is
scontrol's 32 bits, INFINITE included (what scontrol release sends: the pass computes the
priority again)."""

from __future__ import annotations

from cluster.models import Job
from cluster.services.scheduling import schedule_pass


def test_the_api_refuses_a_value_out_of_range(users, demo, api):
    job_id = (
        api("alice")
        .post("/api/jobs/", {"wrap": "true", "begin": "now+3600"}, format="json")
        .json()["job_ids"][0]
    )
    for bad in ("x", -3, 2**32, True, [1]):
        answer = api("admin").patch(f"/api/jobs/{job_id}/", {"priority": bad}, format="json")
        assert answer.status_code == 400, bad
        assert answer.json()["error"] == f"Invalid Priority value: {bad}"
    # 4294967295 (INFINITE, what scontrol release sends) gives the job back to the plugin.
    assert api("admin").patch(f"/api/jobs/{job_id}/", {"priority": 77}, format="json").status_code == 200
    assert Job.objects.get(pk=job_id).priority_set == 77
    assert (
        api("admin").patch(f"/api/jobs/{job_id}/", {"priority": 2**32 - 1}, format="json").status_code == 200
    )
    schedule_pass()
    job = Job.objects.get(pk=job_id)
    assert (job.priority_set, job.priority) == (0, 1)
