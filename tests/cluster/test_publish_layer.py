"""Embedded mode's channel layer (cluster/publish_layer.py): the in-memory layer's copy of
each message, made without copy.deepcopy for JSON-shaped messages (#18 benchmark: the
deepcopy of every launch message was a third of the event loop's CPU)."""

from __future__ import annotations

import asyncio
import copy
import datetime
import time

import pytest
from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.conf import settings

from cluster import publish
from cluster.publish_layer import JsonCopyInMemoryChannelLayer, json_copy
from cluster.services import agents

pytestmark = pytest.mark.django_db

VARIED = [
    {},
    {"type": "agent.command", "payloads": [{"type": "launch", "job": {"job_id": 7, "env": {"A": "1"}}}]},
    {"a": [1, 2.5, True, None, "x", [], {}], "b": {"c": {"d": [[{"e": -1}]]}}},
    {"t": (1, [2]), "when": datetime.datetime(2026, 1, 2, 3, 4, 5), "s": {1, 2}, "by": b"raw"},
]


@pytest.mark.parametrize("message", VARIED)
def test_json_copy_equals_deepcopy_and_shares_no_container(message):
    copied = json_copy(message)
    assert copied == copy.deepcopy(message)

    def containers(value, out):
        if isinstance(value, (dict, list, tuple, set)):
            out.append(id(value))
            for item in value.values() if isinstance(value, dict) else value:
                containers(item, out)
        return out

    # Every container is new, as deepcopy makes it: nothing the sender holds is delivered.
    assert not set(containers(copied, [])) & set(containers(message, []))


def test_embedded_mode_uses_it_and_still_counts_as_one_process():
    assert (
        settings.CHANNEL_LAYERS["default"]["BACKEND"] == "cluster.publish_layer.JsonCopyInMemoryChannelLayer"
    )
    assert isinstance(get_channel_layer(), JsonCopyInMemoryChannelLayer)
    assert agents.single_process()


def test_a_published_launch_is_copied_without_deepcopy(monkeypatch, django_capture_on_commit_callbacks):
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(publish.node_group("n1"), channel)
    copied_dicts = []
    real = copy._deepcopy_dict
    monkeypatch.setitem(copy._deepcopy_dispatch, dict, lambda *a: copied_dicts.append(1) or real(*a))
    payload = {"type": "launch", "job": {"job_id": 1, "environment": {"PATH": "/bin"}}}
    with django_capture_on_commit_callbacks(execute=True):
        publish.to_agent("n1", payload)
    payload["job"]["environment"]["PATH"] = "changed after the send"

    async def receive():
        return await asyncio.wait_for(layer.receive(channel), 2)

    got = async_to_sync(receive)()
    assert got == {
        "type": "agent.command",
        "payloads": [{"type": "launch", "job": {"job_id": 1, "environment": {"PATH": "/bin"}}}],
    }
    assert copied_dicts == []


class _Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_a_burst_of_group_sends_walks_the_groups_once_and_expiry_still_happens(monkeypatch):
    """The base layer walks every channel and group on every group_send and receive: with a
    group per node, a pass's sends cost nodes x groups steps in the event loop."""
    clock = _Clock()
    monkeypatch.setattr(time, "time", clock)
    walks = []
    base_clean = InMemoryChannelLayer._clean_expired

    def counted(self):
        walks.append(1)
        base_clean(self)

    monkeypatch.setattr(InMemoryChannelLayer, "_clean_expired", counted)
    layer = JsonCopyInMemoryChannelLayer(expiry=60, group_expiry=86400, capacity=100_000)

    async def burst():
        for node in range(1000):
            await layer.group_add(f"node-{node}", "agent.inmemory!one")
        for node in range(1000):
            await layer.group_send(f"node-{node}", {"type": "agent.command", "n": node})
        assert len(walks) == 1
        assert [(await layer.receive("agent.inmemory!one"))["n"] for _ in range(3)] == [0, 1, 2]
        assert len(walks) == 1
        # A minute later the next walk drops the messages left and, as the base layer
        # does for a channel whose messages expired, its group memberships.
        clock.now += 61
        await layer.group_send("node-0", {"type": "agent.command", "n": "late"})
        assert len(walks) == 2
        assert "agent.inmemory!one" not in layer.channels
        assert all("agent.inmemory!one" not in members for members in layer.groups.values())
        # Memberships a day old go too.
        await layer.group_add("node-0", "agent.inmemory!two")
        clock.now += 86401
        await layer.group_send("node-0", {"type": "agent.command", "n": "none"})
        assert not layer.groups.get("node-0")

    async_to_sync(burst)()
