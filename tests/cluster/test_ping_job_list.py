"""The agent's ping carries its job list over the real websocket (issue 18): the
controller fails a launch as missing only if the agent had read it and does not hold it,
and reads everything the agent said before the ping first."""

from __future__ import annotations

from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.utils import timezone

from cluster.models import Event, Job, Node
from cluster.services.jobs import job_submit
from cluster.services.scheduling import schedule_pass
from tests.cluster.agent_socket import AgentSocket

pytestmark = pytest.mark.django_db(transaction=True)

MISSING = "not found BatchStartTime after startup"


def _launched_long_ago(users) -> int:
    """A job on node01, its launch sent; its start and node01's registration put 30 s back,
    past BatchStartTimeout (10 s)."""
    job_id = job_submit(
        user=users["alice"], spec={"wrap": "true", "work_dir": "/tmp", "nodelist": "node01"}
    ).job_ids[0]
    schedule_pass()
    past = timezone.now() - timedelta(seconds=30)
    Job.objects.filter(pk=job_id).update(start_time=past, launch_sent=None)
    Node.objects.filter(name="node01").update(slurmd_start_time=past)
    return job_id


async def _node01_sent_a_launch(users) -> tuple[AgentSocket, int, dict]:
    """An agent registered for node01, the launch of a job started 30 s ago received."""
    comm = AgentSocket()
    await comm.authenticate()
    await comm.register("node01")
    job_id = await sync_to_async(_launched_long_ago)(users)
    return comm, job_id, await comm.receive()


def _ping(jobs: list[int], seen: int) -> dict:
    return {"type": "ping", "time": 1.0, "nodes": ["node01"], "jobs": jobs, "seen": seen}


def _state(job_id: int) -> tuple[str, int]:
    job = Job.objects.get(pk=job_id)
    return job.state, job.restart_count


def test_a_ping_written_before_the_launch_arrived_does_not_fail_it(demo, users):
    async def scenario():
        comm, job_id, launch = await _node01_sent_a_launch(users)
        assert launch["type"] == "launch" and launch["job"]["job_id"] == job_id
        # The agent wrote its ping before it read the launch (then on its way), and the
        # controller reads the ping only now, past the timeout.
        await comm.send(_ping([], seen=comm.channel.received - 1))
        await comm.nothing()
        assert await sync_to_async(_state)(job_id) == ("RUNNING", 0)
        # It read the launch and does not have it (lost on the node): missing.
        await comm.send(_ping([], seen=comm.channel.received))
        cancel = await comm.receive()
        assert cancel["type"] == "cancel" and cancel["job_id"] == job_id
        await comm.close()
        return job_id

    job_id = async_to_sync(scenario)()
    assert _state(job_id) == ("PENDING", 1)
    assert Event.objects.filter(job_id=job_id, reason__contains=MISSING).exists()


def test_a_started_report_sent_before_the_ping_is_read_first(demo, users):
    async def scenario():
        comm, job_id, _launch = await _node01_sent_a_launch(users)
        # It started and ended before the ping: the reports go before it, the list is empty.
        await comm.send({"type": "started", "job_id": job_id, "node": "node01", "pid": 1, "run": 0})
        done = {"job_id": job_id, "node": "node01", "exit_code": 0, "signal": 0, "end_time": 2.0, "run": 0}
        await comm.send({"type": "completed", **done})
        await comm.send(_ping([], seen=comm.channel.received))
        assert await comm.receive() == {"type": "ack", "job_ids": [job_id]}
        await comm.nothing()
        await comm.close()
        return job_id

    job_id = async_to_sync(scenario)()
    assert _state(job_id) == ("COMPLETED", 0)


def test_a_ping_without_a_list_keeps_the_started_report_rule(demo, users):
    async def scenario():
        comm, job_id, _launch = await _node01_sent_a_launch(users)
        await comm.send({"type": "ping", "time": 1.0, "nodes": ["node01"]})
        cancel = await comm.receive()
        assert cancel["type"] == "cancel" and cancel["job_id"] == job_id
        await comm.close()
        return job_id

    assert _state(async_to_sync(scenario)()) == ("PENDING", 1)
