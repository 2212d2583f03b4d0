"""The websocket consumers' base: messages dispatched without waiting for the database.

channels' consumer closes stale database connections before every message it dispatches,
through ``sync_to_async``: in the one thread every consumer's database work runs in. Each
frame then waited behind all of that work, and uvicorn reads a connection's next frame
only once the consumer has taken this one, so its pings went unanswered too: under the
10,000-node bench every agent's keepalive gave up after 20 s and reconnected, and each
reconnection's registration made the wait longer. fsched's consumers touch the database
only through ``database_sync_to_async``, which closes stale connections around each call
in that thread itself.
"""

from __future__ import annotations

from typing import Any

from channels.consumer import get_handler_name
from channels.generic.websocket import AsyncJsonWebsocketConsumer


class ReadingConsumer(AsyncJsonWebsocketConsumer):
    async def dispatch(self, message: dict[str, Any]) -> None:
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)
