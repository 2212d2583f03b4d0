"""Websocket endpoints: node agents (commands both ways) and console pages (push only)."""

from __future__ import annotations

import hmac
import logging
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings

from cluster import publish
from cluster.services import agents

log = logging.getLogger(__name__)


def _bearer(scope: dict[str, Any]) -> str:
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            text = value.decode("latin-1")
            if text.lower().startswith("bearer "):
                return text[7:].strip()
    return ""


class AgentConsumer(AsyncJsonWebsocketConsumer):
    """One connected node agent.  Authenticated with the cluster key before the handshake."""

    nodes: list[str]

    async def connect(self) -> None:
        self.nodes = []
        if not hmac.compare_digest(_bearer(self.scope).encode(), settings.FSCHED_AGENT_KEY.encode()):
            client = self.scope.get("client")
            log.warning("agent connection from %s refused: wrong cluster key", client)
            await self.close(code=4003)  # before accept: the handshake fails with HTTP 403
            return
        await self.accept()

    async def disconnect(self, code: int) -> None:
        for node in self.nodes:
            await self.channel_layer.group_discard(publish.node_group(node), self.channel_name)
        if self.nodes:
            await database_sync_to_async(agents.agent_disconnected)(nodes=self.nodes)

    async def receive_json(self, content: dict[str, Any], **kwargs: Any) -> None:
        kind = content.get("type")
        handler = getattr(self, f"on_{kind}", None)
        if handler is None:
            log.warning("agent %s sent unknown message type %r", self.nodes, kind)
            return
        await handler(content)

    async def on_register(self, msg: dict[str, Any]) -> None:
        result = await database_sync_to_async(agents.agent_register)(
            agent_id=str(msg.get("agent_id", "")),
            nodes=list(msg.get("nodes") or []),
            running=list(msg.get("running") or []),
            completions=list(msg.get("completions") or []),
        )
        for node in self.nodes:
            await self.channel_layer.group_discard(publish.node_group(node), self.channel_name)
        self.nodes = result.accepted
        for node in self.nodes:
            await self.channel_layer.group_add(publish.node_group(node), self.channel_name)
        await self.send_json(
            {
                "type": "registered",
                "nodes": result.accepted,
                "rejected": result.rejected,
                "kill": result.kill,
                "ping_interval": 5,
            }
        )
        if result.acked:
            await self.send_json({"type": "ack", "job_ids": result.acked})
        for payload in result.relaunch:
            await self.send_json(payload)

    async def on_ping(self, msg: dict[str, Any]) -> None:
        await database_sync_to_async(agents.agent_ping)(nodes=self.nodes, load=msg.get("load"))

    async def on_started(self, msg: dict[str, Any]) -> None:
        await database_sync_to_async(agents.job_started)(
            job_id=int(msg["job_id"]), node=str(msg.get("node", "")), run=msg.get("run")
        )

    async def on_launch_failed(self, msg: dict[str, Any]) -> None:
        await database_sync_to_async(agents.job_launch_failed)(
            job_id=int(msg["job_id"]),
            node=str(msg.get("node", "")),
            error=str(msg.get("error", "")),
            run=msg.get("run"),
        )

    async def on_completed(self, msg: dict[str, Any]) -> None:
        await database_sync_to_async(agents.job_completed)(completion=msg)
        # Acknowledge only after the commit: until then the agent keeps it in its spool.
        await self.send_json({"type": "ack", "job_ids": [int(msg["job_id"])]})

    async def on_completed_batch(self, msg: dict[str, Any]) -> None:
        items = list(msg.get("completions") or [])
        await database_sync_to_async(agents.jobs_completed)(completions=items)
        await self.send_json({"type": "ack", "job_ids": [int(c["job_id"]) for c in items]})

    async def agent_command(self, event: dict[str, Any]) -> None:
        await self.send_json(event["payload"])


class ConsoleConsumer(AsyncJsonWebsocketConsumer):
    """Console pages: logged-in users only; pushes "topics changed", never writes."""

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4001)
            return
        await self.channel_layer.group_add(publish.CONSOLE_GROUP, self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        await self.channel_layer.group_discard(publish.CONSOLE_GROUP, self.channel_name)

    async def console_changed(self, event: dict[str, Any]) -> None:
        await self.send_json({"type": "changed", "topics": event.get("topics", [])})
