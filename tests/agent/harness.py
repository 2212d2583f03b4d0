"""Test harness: a real websocket server playing the controller, and launch objects.

The fake controller speaks the real protocol: it proves the key it was given (KEY, or
another to play a controller of another cluster), checks the agent's proof, then seals
and opens every message with the session's MAC (agent/handshake.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import pwd
import signal
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from pathlib import Path
from typing import Any

from websockets.asyncio.server import ServerConnection, serve

from agent import handshake
from agent.daemon import Agent, AgentConfig, NodeSpec
from agent.nodeconf import NodeRules
from agent.spool import Spool

KEY = "test-key"
NODES = ("node01", "node02")
ME = pwd.getpwuid(os.geteuid()).pw_name


class FakeController:
    """Accepts agents on /ws/agent/ with ``Bearer KEY``, answers ``register``, records the rest."""

    def __init__(self, key: str = KEY) -> None:
        self.key = key.encode()
        self.refused_agents = 0  # connections whose proof of the key was wrong
        self.rejected_on_register: dict[str, str] = {}  # node -> reason, in each ``registered``
        self.kill_on_register: list[int] = []
        self.registers: list[dict[str, Any]] = []
        self.batches: list[dict[str, Any]] = []  # completed_batch messages as sent
        self.started_batches: list[dict[str, Any]] = []  # started_batch messages as sent
        self.ws: ServerConnection | None = None
        self.channel: handshake.Channel
        self._inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._backlog: list[dict[str, Any]] = []
        self._server: Any = None

    async def __aenter__(self) -> FakeController:
        self._server = await serve(self._handle, "127.0.0.1", 0, process_request=self._check)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._server.close()
        await self._server.wait_closed()

    @property
    def url(self) -> str:
        port = next(iter(self._server.sockets)).getsockname()[1]
        return f"ws://127.0.0.1:{port}"

    @staticmethod
    def _check(connection: ServerConnection, request: Any) -> Any:
        if request.path != "/ws/agent/":
            return connection.respond(HTTPStatus.NOT_FOUND, "not found\n")
        return None

    async def _authenticate(self, ws: ServerConnection) -> handshake.Channel | None:
        hello = json.loads(await ws.recv())
        assert hello["type"] == "hello", hello
        agent_id, theirs, ours = hello["agent_id"], hello["nonce"], handshake.new_nonce()
        proof = handshake.controller_proof(self.key, theirs, ours, agent_id)
        await ws.send(json.dumps({"type": "challenge", "nonce": ours, "proof": proof}))
        auth = json.loads(await ws.recv())
        if auth.get("proof") != handshake.agent_proof(self.key, theirs, ours, agent_id):
            self.refused_agents += 1
            await ws.close(4003)
            return None
        return handshake.Channel.for_controller(handshake.session_key(self.key, theirs, ours, agent_id))

    async def _handle(self, ws: ServerConnection) -> None:
        channel = await self._authenticate(ws)
        if channel is None:
            return
        self.ws, self.channel = ws, channel
        async for frame in ws:
            msg = json.loads(channel.open(str(frame)))
            if msg["type"] == "register":
                self.registers.append(msg)
                await self.send(
                    {
                        "type": "registered",
                        "nodes": [
                            n["name"] for n in msg["nodes"] if n["name"] not in self.rejected_on_register
                        ],
                        "rejected": self.rejected_on_register,
                        "kill": self.kill_on_register,
                        "ping_interval": 5,
                    }
                )
            if msg["type"] == "started_batch":
                self.started_batches.append(msg)
                for start in msg["started"]:
                    await self._inbox.put({"type": "started", **start})
                continue
            if msg["type"] == "completed_batch":
                self.batches.append(msg)
                for completion in msg["completions"]:
                    await self._inbox.put({"type": "completed", **completion})
                continue
            await self._inbox.put(msg)

    async def expect(self, kind: str, timeout: float = 5.0, **match: Any) -> dict[str, Any]:
        """The next message of ``kind`` (matching ``match``); others are kept for later."""
        for i, msg in enumerate(self._backlog):
            if msg["type"] == kind and all(msg.get(k) == v for k, v in match.items()):
                return self._backlog.pop(i)
        async with asyncio.timeout(timeout):
            while True:
                msg = await self._inbox.get()
                if msg["type"] == kind and all(msg.get(k) == v for k, v in match.items()):
                    return msg
                if msg["type"] != "ping":
                    self._backlog.append(msg)

    async def nothing(self, kind: str, wait: float) -> None:
        """Assert no message of ``kind`` arrives within ``wait`` seconds."""
        with contextlib.suppress(TimeoutError):
            msg = await self.expect(kind, timeout=wait)
            raise AssertionError(f"unexpected {kind}: {msg}")

    async def send(self, msg: dict[str, Any]) -> None:
        assert self.ws is not None
        await self.ws.send(self.channel.seal(json.dumps(msg)))

    async def drop(self) -> None:
        """Close the agent's connection (it will reconnect)."""
        assert self.ws is not None
        await self.ws.close()


def launch_object(job_id: int, script: str, work_dir: Path, **over: Any) -> dict[str, Any]:
    job = {
        "job_id": job_id,
        "name": f"job{job_id}",
        "user": ME,
        "script": script,
        "work_dir": str(work_dir),
        "std_out": None,
        "std_err": None,
        "std_in": None,
        "environment": {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "FROM_SUBMITTER": "yes"},
        "batch_host": "node01",
        "node_list": "node[01-02]",
        "num_nodes": 2,
        "cpus_on_node": 4,
        "partition": "debug",
        "account": "physics",
        "qos": "normal",
        "array_job_id": None,
        "array_task_id": None,
        "time_limit": 60,
    }
    job.update(over)
    return job


def agent_config(url: str, spool: Path, *, key: str = KEY, rules: NodeRules | None = None) -> AgentConfig:
    nodes = tuple(NodeSpec(n, 4, 2048, features="a,b", conf="HRES=[]") for n in NODES)
    return AgentConfig(
        controller=url,
        key=key,
        nodes=nodes,
        spool_dir=str(spool),
        ping_interval=5,
        rules=rules or NodeRules(root_jobs=True),
    )


Scenario = Callable[[FakeController, Agent], Awaitable[None]]


def run_with_agent(
    tmp_path: Path, scenario: Scenario, *, rules: NodeRules | None = None, **changes: Any
) -> None:
    """Run ``scenario`` against an in-process agent connected to a fake controller;
    ``changes`` are AgentConfig fields set otherwise than ``agent_config`` sets them."""

    async def main() -> None:
        async with FakeController() as ctl:
            config = dataclasses.replace(agent_config(ctl.url, tmp_path / "spool", rules=rules), **changes)
            agent = Agent(config)
            task = asyncio.create_task(agent.run())
            try:
                await ctl.expect("register")
                await scenario(ctl, agent)
            finally:
                agent.stop()
                status = await asyncio.wait_for(task, 5)
                kill_leftovers(tmp_path / "spool")
            assert status == 0

    asyncio.run(main())


def kill_leftovers(spool: Path) -> None:
    """Kill the process groups of jobs a test left running."""
    for st in Spool(spool).states():
        with contextlib.suppress(ProcessLookupError):
            os.killpg(st.pgid, signal.SIGKILL)
