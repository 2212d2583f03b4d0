"""A job's script and environment reach only its owner's agent and, through
``/api/jobs/{id}/script/`` alone, its owner, coordinators and staff
(tests/cluster/test_private_data_api.py): no job listing or job object carries them."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.django_db

SECRET_SCRIPT = "#!/bin/sh\n# secret-in-script-4711\ntrue\n"
SECRET_ENV = {"API_PASSWORD": "secret-in-env-4712"}


@pytest.mark.parametrize("reader", ["bob", "alice", "admin"])
def test_no_job_answer_of_the_api_carries_script_or_environment(demo, api, reader):
    job_id = (
        api("alice")
        .post(
            "/api/jobs/",
            {"script": SECRET_SCRIPT, "environment": SECRET_ENV, "work_dir": "/tmp"},
            format="json",
        )
        .json()["job_id"]
    )
    client = api(reader)
    for path in (f"/api/jobs/{job_id}/", "/api/jobs/?state=all", f"/api/jobs/?job_id={job_id}"):
        text = json.dumps(client.get(path).json())
        assert "secret-in-script-4711" not in text, path
        assert "secret-in-env-4712" not in text, path
