"""Embedded mode's channel layer: channels' in-memory layer with a cheaper copy.

``InMemoryChannelLayer.send`` gives each receiver ``copy.deepcopy`` of the message, so
that a sender changing its dict afterwards cannot change what was delivered. Every
message fsched publishes is JSON-shaped (dicts, lists, strings, numbers, booleans,
None): a pass's launches to an agent are such a message, and deepcopy's memo and
dispatch cost a third of the event loop's CPU under a burst of starts (profiled: 1,000
launches, docs/profile-demo-cluster.md). :func:`json_copy` copies those shapes with the
same result (every dict and list new, immutable scalars shared) and hands anything else
to deepcopy, so the layer still never delivers an object the sender holds.

The base class also drops expired messages and group memberships on every send to a group
and every receive, by walking every channel and every group: with an agent hosting 1,000
nodes there is a group per node, and a pass sends a message per node it starts jobs on,
so a pass cost nodes x groups steps in the event loop (10,000 nodes: the loop stopped
answering the agents' keepalive pings and they all reconnected). The walk runs here at
most once every ``CLEAN_EVERY`` seconds: what expires (a message after a minute, a
membership after a day) goes at most that much later.
"""

from __future__ import annotations

import copy
import time
from typing import Any

from channels.layers import InMemoryChannelLayer

_SCALARS = (str, int, float, bool, type(None))


def json_copy(value: Any) -> Any:
    """A copy of ``value`` as deepcopy makes it, quicker for JSON-shaped data."""
    kind = type(value)
    if kind is dict:
        return {k: json_copy(v) for k, v in value.items()}
    if kind is list:
        return [json_copy(v) for v in value]
    if kind in _SCALARS:
        return value
    return copy.deepcopy(value)


class _Copied(dict):
    """The message handed to the base class's ``send``: its ``deepcopy`` is json_copy."""

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return json_copy(dict(self))


class JsonCopyInMemoryChannelLayer(InMemoryChannelLayer):
    """channels' in-memory layer (queues, groups, expiry, capacity unchanged), each
    message copied by :func:`json_copy` instead of ``copy.deepcopy``."""

    CLEAN_EVERY = 1.0  # seconds

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._cleaned_at = float("-inf")

    def _clean_expired(self) -> None:
        now = time.time()
        if not 0 <= now - self._cleaned_at < self.CLEAN_EVERY:  # a clock set back: clean
            self._cleaned_at = now
            super()._clean_expired()

    async def send(self, channel: str, message: dict[str, Any]) -> None:
        # The base class asserts a dict and copies it once per receiving channel.
        await super().send(channel, _Copied(message) if type(message) is dict else message)
