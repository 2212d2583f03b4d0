"""The controller's clock is one leaf the simulator can replace (#18 point 1): what the
services write and decide (submit, start and end times, the time limit) follows it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cluster import clock
from cluster.models import Job
from cluster.services import agents
from cluster.services.jobs import job_submit
from cluster.services.scheduling import schedule_pass

pytestmark = pytest.mark.django_db

T0 = datetime(2001, 9, 9, 1, 46, 40, tzinfo=UTC)


class Virtual:
    def __init__(self, t: datetime) -> None:
        self.t = t

    def __call__(self) -> datetime:
        return self.t


@pytest.fixture
def virtual():
    v = Virtual(T0)
    clock.install(v)
    yield v
    clock.uninstall()


def test_the_wall_clock_by_default():
    before = datetime.now(UTC)
    assert before - timedelta(seconds=5) <= clock.now() <= datetime.now(UTC)


def test_services_follow_an_installed_clock(demo, users, virtual):
    agents.agent_register(
        agent_id="sim:1",
        nodes=[{"name": "node09", "cpus": 4, "real_memory": 2000, "boot_time": T0.timestamp() - 60}],
        running=[],
        completions=[],
    )
    spec = {"wrap": "true", "work_dir": "/tmp", "partition": "batch", "time": "2"}
    job_id = job_submit(user=users["alice"], spec=spec).job_ids[0]
    virtual.t = T0 + timedelta(seconds=30)
    schedule_pass()
    job = Job.objects.get(pk=job_id)
    assert job.submit_time == T0 and job.start_time == T0 + timedelta(seconds=30)
    assert job.state == "RUNNING"
    # Two virtual minutes later the pass's time-limit handling ends it: nobody slept.
    virtual.t = T0 + timedelta(seconds=30 + 120)
    schedule_pass()
    job.refresh_from_db()
    assert job.final_state == "TIMEOUT" and job.kill_requested
