"""Websocket endpoints: node agents (commands both ways) and console pages (push only)."""

from __future__ import annotations

import asyncio
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
        self._inbox: list[dict[str, Any]] = []
        self._drainer: asyncio.Future[None] | None = None
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
        # Messages are queued and handled by one drain task, so that what arrives while the
        # database is busy is handled together: all the starts in one transaction, all the
        # completions in another (an agent finishing hundreds of jobs a second).
        self._inbox.append(content)
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.ensure_future(self._drain())

    async def _drain(self) -> None:
        while self._inbox:
            batch, self._inbox = self._inbox, []
            try:
                await self._handle(batch)
            except Exception:
                log.exception("agent %s: handling %d messages failed", self.nodes, len(batch))

    async def _handle(self, batch: list[dict[str, Any]]) -> None:
        started: list[dict[str, Any]] = []
        completions: list[dict[str, Any]] = []
        ping: dict[str, Any] | None = None
        for msg in batch:
            kind = msg.get("type")
            if kind == "register":
                await self._flush(started, completions)
                started, completions = [], []
                await self.on_register(msg)
            elif kind == "started":
                started.append(msg)
            elif kind == "completed":
                completions.append(msg)
            elif kind == "completed_batch":
                completions.extend(msg.get("completions") or [])
            elif kind == "launch_failed":
                await database_sync_to_async(agents.job_launch_failed)(
                    job_id=int(msg["job_id"]),
                    node=str(msg.get("node", "")),
                    error=str(msg.get("error", "")),
                    run=msg.get("run"),
                )
            elif kind == "ping":
                ping = msg
            elif kind == "power_action_done":
                from power.services import agent_power_action_done  # noqa: PLC0415

                await database_sync_to_async(agent_power_action_done)(
                    run_id=int(msg["run_id"]),
                    exit_code=int(msg.get("exit_code", 0)),
                    error=str(msg.get("error") or ""),
                    end_time=msg.get("end_time"),
                )
            else:
                log.warning("agent %s sent unknown message type %r", self.nodes, kind)
        await self._flush(started, completions)
        if ping is not None:
            await database_sync_to_async(agents.agent_ping)(nodes=self.nodes, load=ping.get("load"))

    async def _flush(self, started: list[dict[str, Any]], completions: list[dict[str, Any]]) -> None:
        if started:
            await database_sync_to_async(agents.jobs_started)(items=started)
        if completions:
            await database_sync_to_async(agents.jobs_completed)(completions=completions)
            # Acknowledged only after the commit: until then the agent keeps them spooled.
            await self.send_json({"type": "ack", "job_ids": [int(c["job_id"]) for c in completions]})

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
                "ping_interval": agents.PING_INTERVAL,
            }
        )
        if result.acked:
            await self.send_json({"type": "ack", "job_ids": result.acked})
        for payload in result.relaunch:
            await self.send_json(payload)

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
