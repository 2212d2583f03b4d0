"""scontrol show job's ``AllocNode:Sid=``: the host and session the job was submitted from,
sent by sbatch/salloc/srun (libslurm's getsid(0)) and kept with the job."""

from __future__ import annotations

import pytest

from cli.scontrol import job_record, render_record
from cluster.models import Job
from tests.cluster.test_api_jobs import submit


def test_kept_and_shown(demo, api):
    response = submit(api("alice"), alloc_node="login1", alloc_sid=4242)
    assert response.status_code == 201, response.json()
    job = api("alice").get(f"/api/jobs/{response.json()['job_id']}/").json()
    assert "   Partition=debug AllocNode:Sid=login1:4242\n" in render_record(job_record(job))
    # A job submitted without them (another client of the API): slurmctld's "%s:%u" of nothing.
    bare = submit(api("alice")).json()["job_id"]
    job = api("alice").get(f"/api/jobs/{bare}/").json()
    assert "   Partition=debug AllocNode:Sid=(null):0\n" in render_record(job_record(job))


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"alloc_sid": -1}, "alloc_sid"),
        ({"alloc_sid": "x"}, "alloc_sid"),
        ({"alloc_node": "two words"}, "alloc_node"),
        ({"alloc_node": "h" * 300}, "alloc_node"),
    ],
)
def test_bad_values_are_refused(demo, api, fields, field):
    response = submit(api("alice"), **fields)
    assert response.status_code == 400, response.json()
    assert field in str(response.json())
    assert Job.objects.count() == 0
