"""The Celery worker's scheduling loop (cluster.tasks.SchedulingLoop), on PostgreSQL and Redis.

A pass asked for while another holds the pass lock must still run once that one ends:
with a task per pass it returned "busy" and the jobs waited for the periodic pass.
"""

from __future__ import annotations

import os
import time

import psycopg
import pytest
from django.db import connection

from cluster import tasks
from cluster.cycles import _LOCK_KEYS
from cluster.models import Job
from cluster.services import agents
from cluster.services.jobs import job_submit

pytestmark = [
    pytest.mark.distributed,
    pytest.mark.skipif(
        not (os.environ.get("FSCHED_DATABASE_URL") and os.environ.get("FSCHED_REDIS_URL")),
        reason="needs FSCHED_DATABASE_URL and FSCHED_REDIS_URL",
    ),
    pytest.mark.django_db(transaction=True),
]

NODES = [f"node{i:02d}" for i in range(1, 17)]


@pytest.fixture
def wake():
    client = tasks._client()
    client.delete(tasks.WAKE_KEY)
    yield client
    client.delete(tasks.WAKE_KEY)


def test_a_burst_of_requests_leaves_one_wake_up(wake):
    for _ in range(50):
        tasks.request_schedule_pass()
    assert wake.llen(tasks.WAKE_KEY) == 1


def _state(job_id: int) -> str:
    return Job.objects.get(pk=job_id).state


def test_a_pass_asked_for_during_another_runs_after_it(wake, users, demo):
    agents.agent_register(
        agent_id="test:1",
        nodes=[{"name": n, "cpus": 4, "real_memory": 2000, "boot_time": 1.0} for n in NODES],
        running=[],
        completions=[],
    )
    # Another machine's pass: the advisory lock held by another session.
    params = connection.get_connection_params()
    other = psycopg.connect(
        **{k: v for k, v in params.items() if k in ("dbname", "user", "host", "port", "password")},
        autocommit=True,
    )
    other.execute("SELECT pg_advisory_lock(%s)", [_LOCK_KEYS["schedule"]])
    loop = tasks.SchedulingLoop()
    loop.start()
    try:
        # The submission asks for a pass (on commit): it wakes the loop.
        job_id = job_submit(
            user=users["alice"], spec={"wrap": "true", "work_dir": "/tmp", "partition": "batch"}
        ).job_ids[0]
        time.sleep(1.0)
        assert _state(job_id) == "PENDING"  # the lock is held: no pass yet
        other.execute("SELECT pg_advisory_unlock(%s)", [_LOCK_KEYS["schedule"]])
        deadline = time.monotonic() + 10
        while _state(job_id) == "PENDING" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _state(job_id) == "RUNNING"
    finally:
        loop.stop()
        other.close()
