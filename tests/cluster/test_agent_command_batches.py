"""Commands for agents leave on commit as one channel-layer message per node (a pass's
launches together), in order, and never for a transaction or savepoint that rolled back."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

from cluster import publish

pytestmark = pytest.mark.django_db


class Listener:
    def __init__(self, *nodes: str) -> None:
        self.layer = get_channel_layer()
        self.channel = async_to_sync(self.layer.new_channel)()
        for node in nodes:
            async_to_sync(self.layer.group_add)(publish.node_group(node), self.channel)

    def messages(self) -> list[dict]:
        """What the channel holds now (the in-memory layer: nothing is in flight)."""

        async def drain() -> list[dict]:
            out = []
            while True:
                try:
                    out.append(await asyncio.wait_for(self.layer.receive(self.channel), 0.05))
                except TimeoutError:
                    return out

        return async_to_sync(drain)()


@pytest.fixture
def listener():
    return Listener("n1", "n2")


def test_one_message_per_node_in_order(listener, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        launches = [("n1", {"type": "launch", "job": i}) for i in range(3)]
        publish.to_agents([*launches, ("n2", {"type": "cancel", "job_id": 9})])
        assert listener.messages() == []  # nothing before the commit
    got = listener.messages()
    assert {"type": "agent.command", "payloads": [{"type": "launch", "job": i} for i in range(3)]} in got
    assert {"type": "agent.command", "payloads": [{"type": "cancel", "job_id": 9}]} in got
    assert len(got) == 2


def test_a_rolled_back_transaction_sends_nothing_and_the_next_one_still_does(
    listener, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        with pytest.raises(RuntimeError), transaction.atomic():
            publish.to_agent("n1", {"type": "launch", "job": 1})
            raise RuntimeError
        with transaction.atomic():
            publish.to_agent("n1", {"type": "launch", "job": 2})
    assert listener.messages() == [{"type": "agent.command", "payloads": [{"type": "launch", "job": 2}]}]


def test_a_rolled_back_savepoint_takes_its_commands_only(listener, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        publish.to_agent("n1", {"type": "launch", "job": 1})
        with pytest.raises(RuntimeError), transaction.atomic():
            publish.to_agent("n1", {"type": "launch", "job": 2})
            raise RuntimeError
        publish.to_agent("n1", {"type": "launch", "job": 3})
    payloads = [p for m in listener.messages() for p in m["payloads"]]
    assert payloads == [{"type": "launch", "job": 1}, {"type": "launch", "job": 3}]
