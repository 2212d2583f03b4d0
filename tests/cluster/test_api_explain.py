"""``GET /api/jobs/{id}/explain/`` (#13 point 1): the pending explainer's causes as a field of
their own, beside Slurm's bare reason code (``fsched explain`` prints them)."""

from __future__ import annotations

import pytest

from cluster.services.jobs import job_submit

pytestmark = pytest.mark.django_db


def test_the_api_answers_the_causes_and_needs_a_login(users, demo, api):
    spec = {"wrap": "true", "work_dir": "/tmp", "hold": True}
    job_id = job_submit(user=users["alice"], spec=spec).job_ids[0]
    body = api("bob").get(f"/api/jobs/{job_id}/explain/").json()
    assert body == {
        "job_id": job_id,
        "state": "PENDING",
        "reason": "JobHeldUser",
        "reason_detail": "",
        "causes": [
            {
                "reason": "JobHeldUser",
                "holder": "the job is held by its user",
                "level": "job",
                "release": f"scontrol release {job_id}",
            }
        ],
        "start_time": None,  # a held job has no planned start
        "sched_nodes": "",
    }
    assert api(None).get(f"/api/jobs/{job_id}/explain/").status_code == 401
    missing = api("alice").get("/api/jobs/99999/explain/")
    assert (missing.status_code, missing.json()["error"]) == (404, "Invalid job id specified")
