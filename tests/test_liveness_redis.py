"""Distributed mode: each server process says in Redis that it listens, and the health
pass counts silence from the oldest one's start (cluster/liveness.py)."""

from __future__ import annotations

import os
import time

import pytest
import redis
from django.conf import settings

from cluster import liveness

pytestmark = [
    pytest.mark.distributed,
    pytest.mark.skipif(not os.environ.get("FSCHED_REDIS_URL"), reason="needs FSCHED_REDIS_URL"),
]


@pytest.fixture
def client():
    client = redis.Redis.from_url(settings.REDIS_URL)
    # Keys of servers the e2e tests killed outright: they would expire within 15 s.
    for key in client.scan_iter(match=f"{liveness.PREFIX}*"):
        client.delete(key)
    yield client
    liveness.stopped()


def test_a_listening_server_is_seen_until_it_stops(client):
    assert liveness.heard_since() is None
    start = time.time() - 30
    liveness.listening(now=start)
    [key] = list(client.scan_iter(match=f"{liveness.PREFIX}*"))
    assert 0 < client.ttl(key) <= liveness.TTL
    assert abs(liveness.heard_since().timestamp() - start) < 1e-3
    liveness.stopped()  # stopped in order: at once
    assert liveness.heard_since() is None


def test_the_oldest_listening_server_counts_and_a_killed_one_expires(client):
    liveness.listening(now=time.time())
    older = time.time() - 600
    # Another server process, which dies without a word: its key expires.
    client.set(f"{liveness.PREFIX}other:1:abcd", repr(older), ex=1)
    assert abs(liveness.heard_since().timestamp() - older) < 1e-3
    time.sleep(1.5)
    assert abs(liveness.heard_since().timestamp() - older) > 500


def test_redis_unreachable_gives_no_verdict(client, monkeypatch):
    nowhere = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.5)
    monkeypatch.setattr(liveness, "_reader", nowhere)
    assert liveness.heard_since() is None
