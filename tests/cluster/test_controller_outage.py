"""The controller's own outage is not the nodes' (cluster/liveness.py): silence counts
from when a server process started listening, and while none listens no node is judged.

Before, a server down for longer than SlurmdTimeout came back to find every node DOWN and
every running job requeued. In distributed mode the Celery health pass did it while the
servers were down. In embedded mode the first pass after the restart did it, before the
agents had reconnected.
"""

from __future__ import annotations

import os
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from cluster import liveness
from cluster.cycles import run_health
from cluster.models import Job, Node
from cluster.services import agents
from cluster.services.jobs import job_submit
from cluster.services.scheduling import health_pass, schedule_pass

NODES = [f"node{i:02d}" for i in range(1, 33)]


def _running_job(users, now):
    agents.agent_register(
        agent_id="a:1",
        nodes=[{"name": n, "cpus": 4, "real_memory": 2000, "boot_time": 1.0} for n in NODES],
        running=[],
        completions=[],
        now=now,
    )
    job_id = job_submit(user=users["alice"], spec={"wrap": "sleep 600", "work_dir": "/tmp"}).job_ids[0]
    schedule_pass(now=now)
    agents.job_started(job_id=job_id, node=Job.objects.get(pk=job_id).batch_host, run=0)
    return job_id


def test_no_verdict_while_no_server_listens(demo, users):
    now = timezone.now()
    job_id = _running_job(users, now)
    # An hour without a word (SlurmdTimeout is 20 s), but nobody was listening.
    assert health_pass(now=now + timedelta(hours=1), heard_since=None) == []
    node = Node.objects.get(name=Job.objects.get(pk=job_id).batch_host)
    assert "NOT_RESPONDING" not in node.state and node.state != "DOWN"
    assert Job.objects.get(pk=job_id).state == "RUNNING"


def test_silence_counts_from_the_servers_start(demo, users):
    now = timezone.now()
    job_id = _running_job(users, now)
    back = now + timedelta(hours=1)  # the server starts again after an hour's outage
    assert health_pass(now=back + timedelta(seconds=19), heard_since=back) == []
    assert Job.objects.get(pk=job_id).state == "RUNNING"
    # Its agent never came back: DOWN after SlurmdTimeout counted from the restart.
    downed = health_pass(now=back + timedelta(seconds=21), heard_since=back)
    assert set(downed) == set(NODES)
    assert Job.objects.get(pk=job_id).state == "PENDING"  # requeued


@pytest.mark.skipif(bool(os.environ.get("FSCHED_REDIS_URL")), reason="embedded mode")
def test_embedded_health_cycle_counts_from_this_servers_start(demo, users):
    long_ago = timezone.now() - timedelta(hours=1)
    job_id = _running_job(users, long_ago)
    try:
        liveness.listening()  # the server's start-up, an hour after the agents' last word
        assert run_health().startswith("down=0")
        assert Job.objects.get(pk=job_id).state == "RUNNING"
        liveness.stopped()
        assert liveness.heard_since() is None
        liveness.listening(now=time.time() - 3600)  # listening all along: the node is silent
        assert run_health().startswith("down=32")
    finally:
        liveness.stopped()
    assert Job.objects.get(pk=job_id).state == "PENDING"
