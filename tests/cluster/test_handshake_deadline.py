"""The agent handshake's deadline (cluster/consumers.py): counted in the server's own
on-time turns, so a server too busy to read an agent's frames does not refuse it; and a
connection that does not prove the key in time is told to try again later, not that
its key is wrong (the agent exits on a wrong key, and retries on anything else)."""

from __future__ import annotations

import asyncio
import time

import pytest
from asgiref.sync import async_to_sync

from cluster import consumers
from cluster.models import Node
from tests.cluster.agent_socket import AgentSocket

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def short_deadline(monkeypatch):
    monkeypatch.setattr(consumers, "HANDSHAKE_TIMEOUT", 1.0)
    monkeypatch.setattr(consumers, "HANDSHAKE_TICK", 0.1)


def test_a_server_behind_on_its_own_work_still_takes_the_agent(demo, short_deadline):
    async def scenario():
        comm = AgentSocket()
        await comm.open()
        await asyncio.sleep(0.05)  # the deadline is running
        # The server's loop is held (other connections' work, the passes) for longer than
        # the whole deadline before it can read the agent's hello.
        time.sleep(2.5)
        await comm.authenticate_opened()
        reply = await comm.register("node01")
        assert reply["nodes"] == ["node01"]
        await comm.close()

    async_to_sync(scenario)()
    assert Node.objects.get(name="node01").base_state == "IDLE"  # registered (then its socket closed)


def test_a_silent_connection_is_told_to_try_again_later(demo, short_deadline):
    async def scenario():
        comm = AgentSocket()
        await comm.open()
        out = await comm.comm.receive_output(timeout=10)
        assert out == {"type": "websocket.close", "code": consumers.HANDSHAKE_EXPIRED}

    async_to_sync(scenario)()
