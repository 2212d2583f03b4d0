"""A node's silence counts from the last message the server read from its agent, not the
last one it handled (SlurmdTimeout, NOT_RESPONDING): a ping waiting behind the server's
own work (other agents' registrations in the database thread) was heard when it was read."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime, timedelta

import pytest
from asgiref.sync import async_to_sync, sync_to_async

from cluster import liveness
from cluster.models import Node
from cluster.services.agents import agent_register
from cluster.services.scheduling import health_pass
from tests.cluster.agent_socket import AgentSocket

T0 = datetime(2026, 1, 1, tzinfo=UTC)
NODE = {"name": "node01", "cpus": 4, "real_memory": 2000, "boot_time": 1.0}


@pytest.fixture(autouse=True)
def no_earlier_reads():
    """What this process read before (other tests' connections, left open) is not this test's."""
    liveness._received.clear()
    yield
    liveness._received.clear()


@pytest.fixture
def registered(demo):
    agent_register(agent_id="a:1", nodes=[NODE], running=[], completions=[], now=T0)


@pytest.mark.django_db
def test_a_ping_read_but_not_yet_handled_keeps_the_node_responding(registered):
    # The agent's ping was read 20 s after its registration; its handling is still queued.
    liveness.received(1, ["node01"], at=(T0 + timedelta(seconds=20)).timestamp())
    assert health_pass(now=T0 + timedelta(seconds=30), received=liveness.last_received()) == []
    assert "NOT_RESPONDING" not in Node.objects.get(name="node01").state
    # Nothing read for three heartbeats since: not responding, as before.
    health_pass(now=T0 + timedelta(seconds=36), received=liveness.last_received())
    assert "NOT_RESPONDING" in Node.objects.get(name="node01").state


@pytest.mark.django_db
def test_a_read_older_than_the_last_contact_changes_nothing(registered):
    liveness.received(1, ["node01"], at=(T0 - timedelta(seconds=60)).timestamp())
    health_pass(now=T0 + timedelta(seconds=10), received=liveness.last_received())
    assert "NOT_RESPONDING" not in Node.objects.get(name="node01").state
    health_pass(now=T0 + timedelta(seconds=16), received=liveness.last_received())
    assert "NOT_RESPONDING" in Node.objects.get(name="node01").state


@pytest.mark.django_db(transaction=True)
def test_the_server_notes_when_it_reads_a_registered_agents_frame(demo):
    async def scenario():
        comm = AgentSocket()
        await comm.authenticate()
        await comm.register("node01")
        before = liveness.last_received().get("node01")
        # A message the controller drops unhandled (an unknown type) was still heard.
        await comm.send({"type": "no-such-message"})
        await comm.nothing()
        after = liveness.last_received()["node01"]
        assert before is None or after >= before
        await comm.close()
        assert "node01" not in liveness.last_received()  # its connection is gone

    async_to_sync(scenario)()


@pytest.mark.django_db(transaction=True)
def test_a_frame_is_read_while_the_database_thread_is_busy(demo):
    """channels closes old database connections before every message it dispatches, in the
    one database thread: each frame then waited behind every connection's database work,
    the server stopped reading the socket (uvicorn reads the next frame only once the
    consumer takes this one), and under the 10,000-node bench the agents' keepalive pings
    went unanswered for 20 s and every agent dropped its connection."""
    async def scenario():
        comm = AgentSocket()
        await comm.authenticate()
        await comm.register("node01")
        await comm.nothing()
        liveness._received.clear()
        busy, done = threading.Event(), threading.Event()

        def long_database_work():  # another connection's registration, say
            busy.set()
            done.wait(30)

        blocker = asyncio.ensure_future(sync_to_async(long_database_work)())
        while not busy.is_set():
            await asyncio.sleep(0.01)
        try:
            await comm.send({"type": "no-such-message"})
            for _ in range(300):
                if "node01" in liveness.last_received():
                    break
                await asyncio.sleep(0.01)
            assert "node01" in liveness.last_received(), "the frame waited for the database thread"
        finally:
            done.set()
            await blocker
        await comm.close()

    async_to_sync(scenario)()
