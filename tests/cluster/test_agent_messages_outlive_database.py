"""An agent's messages outlive a database that is unreachable for a moment (issue #11).

The database fails for real: another connection holds SQLite's write lock (the test
database is shared-cache SQLite, where a second writer fails at once with "database
table is locked"), so the consumer's writes raise OperationalError until it lets go.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.utils import timezone

from cluster import consumers
from cluster.models import Event, Job
from cluster.services.jobs import job_submit
from cluster.services.scheduling import schedule_pass
from tests.cluster.agent_socket import AgentSocket
from tests.cluster.database_lock import write_lock

pytestmark = pytest.mark.django_db(transaction=True)


async def _running_job(users, comm: AgentSocket) -> int:
    await comm.authenticate()
    await comm.register("node01")
    submitted = await sync_to_async(job_submit)(
        user=users["alice"], spec={"wrap": "true", "work_dir": "/tmp", "nodelist": "node01"}
    )
    job_id = submitted.job_ids[0]
    await sync_to_async(schedule_pass)()
    assert (await comm.receive())["type"] == "launch"
    await comm.send({"type": "started", "job_id": job_id, "node": "node01", "pid": 1, "run": 0})
    return job_id


def _completed(job_id: int, exit_code: int = 0) -> dict:
    return {"type": "completed", "job_id": job_id, "node": "node01", "exit_code": exit_code, "signal": 0,
            "end_time": 2.0, "run": 0, "seq": 1}  # fmt: skip


def test_a_completion_arriving_while_the_database_is_locked_is_recorded_once_it_is_back(demo, users):
    async def scenario():
        comm = AgentSocket()
        job_id = await _running_job(users, comm)
        await asyncio.sleep(0.2)  # the started is committed before the lock is taken
        with write_lock():
            await comm.send(_completed(job_id, exit_code=3))
            await comm.send({"type": "ping", "time": 1.0, "nodes": ["node01"]})
            # Not committed, so not acknowledged: the agent keeps it spooled.
            await comm.nothing(1.0)
        assert await comm.receive(timeout=5) == {"type": "ack", "job_ids": [job_id]}
        await comm.close()
        return job_id

    job_id = async_to_sync(scenario)()
    job = Job.objects.get(pk=job_id)
    assert (job.state, job.exit_code) == ("FAILED", 3)


def test_a_database_down_too_long_closes_the_socket_and_the_agent_restates_at_registration(
    demo, users, monkeypatch
):
    monkeypatch.setattr(consumers, "DB_RETRY_FOR", 0.6)

    async def scenario():
        comm = AgentSocket()
        job_id = await _running_job(users, comm)
        await asyncio.sleep(0.2)
        with write_lock():
            await comm.send(_completed(job_id))
            # "Try again later": the agent reconnects, it is not refused.
            assert await comm.closed_with() == consumers.DATABASE_DOWN
        again = AgentSocket()
        await again.authenticate()
        done = {k: v for k, v in _completed(job_id).items() if k != "type"}
        assert (await again.register("node01", completions=[done]))["nodes"] == ["node01"]
        assert await again.receive() == {"type": "ack", "job_ids": [job_id]}
        await again.close()
        return job_id

    job_id = async_to_sync(scenario)()
    assert Job.objects.get(pk=job_id).state == "COMPLETED"


def test_a_message_that_fails_for_its_own_fault_is_dropped_and_the_connection_goes_on(demo, users):
    async def scenario():
        comm = AgentSocket()
        job_id = await _running_job(users, comm)
        await comm.send({"type": "launch_failed", "job_id": "not a number", "node": "node01"})
        await comm.nothing(0.5)
        await comm.send(_completed(job_id))
        assert await comm.receive(timeout=5) == {"type": "ack", "job_ids": [job_id]}
        await comm.close()
        return job_id

    job_id = async_to_sync(scenario)()
    assert Job.objects.get(pk=job_id).state == "COMPLETED"


def test_a_completion_sent_again_is_recorded_once_and_acknowledged_again(demo, users):
    async def scenario():
        comm = AgentSocket()
        job_id = await _running_job(users, comm)
        for _ in range(2):
            await comm.send(_completed(job_id, exit_code=2))
            assert await comm.receive(timeout=5) == {"type": "ack", "job_ids": [job_id]}
        await comm.close()
        return job_id

    job_id = async_to_sync(scenario)()
    job = Job.objects.get(pk=job_id)
    assert (job.state, job.exit_code) == ("FAILED", 2)
    assert Event.objects.filter(job_id=job_id, new_state="FAILED").count() == 1


def test_a_job_that_ended_before_its_time_limit_kill_keeps_its_own_state(demo, users):
    """Its completion was lost; the time limit's cancel got it re-sent: not TIMEOUT."""
    from cluster.services.jobs import terminate_running

    async def scenario():
        comm = AgentSocket()
        job_id = await _running_job(users, comm)
        ended = time.time()
        await asyncio.sleep(0.05)
        job = await sync_to_async(Job.objects.get)(pk=job_id)
        await sync_to_async(terminate_running)(job, final_state="TIMEOUT", now=timezone.now())
        assert (await comm.receive())["type"] == "cancel"
        await comm.send({**_completed(job_id), "end_time": ended})
        assert await comm.receive(timeout=5) == {"type": "ack", "job_ids": [job_id]}
        await comm.close()
        return job_id

    job_id = async_to_sync(scenario)()
    job = Job.objects.get(pk=job_id)
    assert (job.state, job.exit_code, job.final_state) == ("COMPLETED", 0, "")
