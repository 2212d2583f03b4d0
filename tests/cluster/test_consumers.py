"""The websocket endpoints on the real ASGI application (channels' WebsocketCommunicator)."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing.websocket import WebsocketCommunicator

from cluster.models import Job, Node
from cluster.services.jobs import job_submit
from cluster.services.scheduling import schedule_pass
from config.asgi import router
from tests.cluster.agent_socket import AgentSocket

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_agent_with_a_wrong_key_is_refused(demo):
    async def scenario():
        comm = AgentSocket(key="wrong")
        await comm.open()
        # The controller proves its key first; an agent with another key sees that fail...
        assert not (await comm.hello())["proved"]
        # ...and an agent that answers anyway with its (wrong) proof is closed with 4003.
        await comm.comm.send_json_to({"type": "auth", "proof": "0" * 64})
        assert await comm.closed_with() == 4003

    async_to_sync(scenario)()
    assert Node.objects.get(name="node01").base_state == "UNKNOWN"


def test_register_launch_complete_ack(demo, users):
    async def scenario():
        comm = AgentSocket()
        await comm.authenticate()
        reply = await comm.register("node01")
        assert reply["type"] == "registered" and reply["nodes"] == ["node01"] and reply["kill"] == []
        submitted = await sync_to_async(job_submit)(
            user=users["alice"], spec={"wrap": "echo hi", "work_dir": "/tmp", "nodelist": "node01"}
        )
        job_id = submitted.job_ids[0]
        await sync_to_async(schedule_pass)()
        launch = await comm.receive()
        assert launch["type"] == "launch"
        assert launch["job"]["job_id"] == job_id and launch["job"]["batch_host"] == "node01"
        assert launch["job"]["user"] == "alice" and "echo hi" in launch["job"]["script"]
        await comm.send({"type": "started", "job_id": job_id, "node": "node01", "pid": 1, "run": 0})
        done = {"job_id": job_id, "node": "node01", "exit_code": 0, "signal": 0, "end_time": 2.0, "run": 0}
        await comm.send({"type": "completed", **done})
        ack = await comm.receive()
        assert ack == {"type": "ack", "job_ids": [job_id]}
        await comm.close()
        return job_id

    job_id = async_to_sync(scenario)()
    job = Job.objects.get(pk=job_id)
    assert job.state == "COMPLETED" and job.launched
    # The socket closed: the node stops responding until its agent is back.
    assert "NOT_RESPONDING" in Node.objects.get(name="node01").state


def test_console_socket_needs_a_login_and_pushes_changes(demo, users, client):
    async def refused():
        comm = WebsocketCommunicator(router, "/ws/console/", headers=[(b"origin", b"http://127.0.0.1")])
        connected, _ = await comm.connect()
        assert not connected

    async_to_sync(refused)()
    client.force_login(users["bob"])
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()

    async def pushed():
        comm = WebsocketCommunicator(
            router, "/ws/console/", headers=[(b"origin", b"http://127.0.0.1"), (b"cookie", cookie)]
        )
        connected, _ = await comm.connect()
        assert connected
        await sync_to_async(job_submit)(user=users["bob"], spec={"wrap": "true", "work_dir": "/tmp"})
        message = await comm.receive_json_from(timeout=5)
        assert message == {"type": "changed", "topics": ["jobs"]}
        await comm.disconnect()

    async_to_sync(pushed)()


def test_a_controller_without_a_key_authenticates_nobody(demo, settings):
    settings.FSCHED_AGENT_KEY = ""

    async def scenario():
        comm = AgentSocket(key="")
        await comm.open()
        await comm.comm.send_json_to({"type": "hello", "agent_id": "a:1", "nonce": "0" * 64})
        assert await comm.closed_with() == 4003

    async_to_sync(scenario)()
