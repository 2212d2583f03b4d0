"""The launch carries what slurmd takes from the job's credential for the batch step's
environment: the memory asked for, licenses, reservation, the start and expected end."""

from __future__ import annotations

import pytest

from cluster.models import Job
from cluster.services.jobs import job_submit
from cluster.services.scheduling import schedule_pass
from cluster.services.state import launch_payload
from tests.cluster.test_nice import register

pytestmark = pytest.mark.django_db


def started(user, **spec) -> dict:
    job_id = job_submit(user=user, spec={"wrap": "true", "work_dir": "/tmp", **spec}).job_ids[0]
    schedule_pass()
    job = Job.objects.get(pk=job_id)
    assert job.state == "RUNNING"
    return launch_payload(job)["job"]


def test_the_launch_names_the_request_and_the_expected_end(demo, users):
    register()
    launch = started(users["alice"], mem="500", time="7")
    assert (launch["mem_per_node"], launch.get("mem_per_cpu")) == (500, None)
    assert launch["end_time"] - launch["start_time"] == 7 * 60
    per_cpu = started(users["alice"], mem_per_cpu=100)
    assert (per_cpu["mem_per_cpu"], per_cpu.get("mem_per_node")) == (100, None)
    bare = started(users["alice"])
    assert (bare.get("licenses"), bare.get("reservation")) == (None, None)
