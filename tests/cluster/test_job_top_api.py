"""POST /api/jobs/top/: a bad body is a 400 naming it, no token a 401."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def test_the_api_refuses_a_body_without_job_ids(demo, api):
    answer = api("admin").post("/api/jobs/top/", {"job_ids": 5}, format="json")
    assert answer.status_code == 400 and "job_ids" in answer.json()["error"]
    assert api(None).post("/api/jobs/top/", {"job_ids": "5"}, format="json").status_code == 401
