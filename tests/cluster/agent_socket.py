"""An agent's side of /ws/agent/ over channels' WebsocketCommunicator: the real handshake
(agent/handshake.py) and sealed frames, so controller tests speak the protocol itself."""

from __future__ import annotations

import json
from typing import Any

from channels.testing.websocket import WebsocketCommunicator
from django.conf import settings

from agent import handshake
from config.asgi import router


def register(*nodes: str, agent_id: str = "test:1", **extra: Any) -> dict[str, Any]:
    return {
        "type": "register",
        "agent_id": agent_id,
        "nodes": [{"name": n, "cpus": 4, "real_memory": 2000, "boot_time": 1.0} for n in nodes],
        "running": [],
        "completions": [],
        **extra,
    }


class AgentSocket:
    def __init__(self, agent_id: str = "test:1", key: str | None = None, nodes: tuple[str, ...] = ()) -> None:
        self.agent_id = agent_id
        self.nodes = list(nodes)  # named in hello (per-node keys)
        self.key = (settings.FSCHED_AGENT_KEY if key is None else key).encode()
        self.comm = WebsocketCommunicator(router, "/ws/agent/")
        self.channel: handshake.Channel | None = None

    async def open(self) -> None:
        connected, _ = await self.comm.connect()
        assert connected

    async def hello(self) -> dict[str, Any]:
        """Send hello; return the controller's challenge (its proof already checked)."""
        self.nonce = handshake.new_nonce()
        hello = {"type": "hello", "agent_id": self.agent_id, "nonce": self.nonce, "nodes": self.nodes}
        await self.comm.send_json_to(hello)
        challenge = await self.comm.receive_json_from(timeout=5)
        assert challenge["type"] == "challenge"
        self.theirs = challenge["nonce"]
        expected = handshake.controller_proof(self.key, self.nonce, self.theirs, self.agent_id)
        challenge["proved"] = handshake.proof_matches(expected, challenge["proof"])
        return challenge

    async def authenticate(self) -> None:
        await self.open()
        await self.authenticate_opened()

    async def authenticate_opened(self) -> None:
        """The handshake on a connection already open."""
        assert (await self.hello())["proved"]
        proof = handshake.agent_proof(self.key, self.nonce, self.theirs, self.agent_id)
        await self.comm.send_json_to({"type": "auth", "proof": proof})
        key = handshake.session_key(self.key, self.nonce, self.theirs, self.agent_id)
        self.channel = handshake.Channel.for_agent(key)

    async def send(self, msg: dict[str, Any]) -> None:
        assert self.channel is not None
        await self.comm.send_to(text_data=self.channel.seal(json.dumps(msg)))

    async def receive(self, timeout: float = 5) -> dict[str, Any]:
        assert self.channel is not None
        frame = await self.comm.receive_from(timeout=timeout)
        return json.loads(self.channel.open(frame))

    async def register(self, *nodes: str, **extra: Any) -> dict[str, Any]:
        await self.send(register(*nodes, agent_id=self.agent_id, **extra))
        reply = await self.receive()
        assert reply["type"] == "registered", reply
        return reply

    async def closed_with(self) -> int:
        """The close code the controller ended the connection with."""
        out = await self.comm.receive_output(timeout=5)
        assert out["type"] == "websocket.close", out
        return out.get("code", 1000)

    async def nothing(self, wait: float = 0.3) -> None:
        assert await self.comm.receive_nothing(timeout=wait)

    async def close(self) -> None:
        await self.comm.disconnect()
