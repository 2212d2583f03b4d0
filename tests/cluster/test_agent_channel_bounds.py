"""The channel layer carries every command to an agent (issue 18): a consumer holding a
thousand nodes gets a message per node a pass starts jobs on, more than channels'
default capacity of 100 (beyond which group_send drops a message without a word), and an
agent connected longer than the layer's group expiry (a day) keeps getting them."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from cluster import consumers, publish
from tests.cluster.agent_socket import AgentSocket

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_thousand_node_groups_reach_one_consumer_without_a_loss():
    async def scenario() -> int:
        layer = get_channel_layer()
        channel = await layer.new_channel()
        for i in range(1000):
            await layer.group_add(publish.node_group(f"n{i}"), channel)
        for i in range(1000):
            await layer.group_send(publish.node_group(f"n{i}"), {"type": "agent.command", "payloads": [i]})
        got = []
        for _ in range(1000):
            try:  # a message the layer dropped never comes: stop at the first wait
                got.append((await asyncio.wait_for(layer.receive(channel), 5))["payloads"][0])
            except TimeoutError:
                break
        for i in range(1000):
            await layer.group_discard(publish.node_group(f"n{i}"), channel)
        return len(set(got))

    assert async_to_sync(scenario)() == 1000


def test_a_ping_renews_the_node_groups_the_layer_would_forget(demo, monkeypatch):
    monkeypatch.setattr(consumers, "GROUP_RENEWAL", 0.0)

    async def scenario() -> dict:
        comm = AgentSocket()
        await comm.authenticate()
        await comm.register("node01")
        layer = get_channel_layer()
        group = publish.node_group("node01")
        # What the layer does to a membership past its group expiry.
        layer.groups.pop(group, None)
        seen = comm.channel.received
        await comm.send({"type": "ping", "time": 1.0, "nodes": ["node01"], "jobs": [], "seen": seen})
        await comm.nothing()
        cancel = {"type": "cancel", "job_id": 7}
        await layer.group_send(group, {"type": "agent.command", "payloads": [cancel]})
        got = await comm.receive()
        await comm.close()
        return got

    assert async_to_sync(scenario)()["job_id"] == 7
