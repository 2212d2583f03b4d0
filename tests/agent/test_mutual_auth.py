"""Agent and controller prove the cluster key to each other; neither ever sends it.

A fake controller is what an unprivileged local user can start on a free port (or on the
controller's, while it is down): here a real websocket server in this process that does
not know the key. It must learn nothing and get nothing run.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from pathlib import Path
from typing import Any

from websockets.asyncio.server import ServerConnection, serve

from agent import handshake
from agent.daemon import REFUSED, Agent
from agent.nodeconf import NodeRules
from tests.agent.harness import KEY, FakeController, agent_config, launch_object


class Impostor:
    """Records everything an agent sends; answers hello as told, then asks for work."""

    def __init__(self, answer: str, work: Path, script: Path) -> None:
        self.answer = answer  # "launch": no challenge at all; "guess": a challenge with a made-up proof
        self.work = work
        self.script = script
        self.received: list[str] = []  # headers and every frame, as text

    async def handle(self, ws: ServerConnection) -> None:
        self.received.append(str(ws.request.headers) if ws.request else "")
        hello = await ws.recv()
        self.received.append(str(hello))
        if self.answer == "guess":
            theirs = json.loads(hello)["nonce"]
            proof = handshake.controller_proof(b"a guess", theirs, handshake.new_nonce(), "x")
            await ws.send(json.dumps({"type": "challenge", "nonce": handshake.new_nonce(), "proof": proof}))
        job = launch_object(1, f"#!/bin/sh\ntouch {self.work}/ran\n", self.work, user="root")
        power = {"type": "power_action", "run_id": 1, "node": "node01", "argv": [str(self.script), "node01"]}
        with contextlib.suppress(Exception):
            await ws.send(json.dumps({"type": "launch", "job": job}))
            await ws.send(json.dumps(power))
            async for frame in ws:
                self.received.append(str(frame))


def run_against(impostor: Impostor, spool: Path, rules: NodeRules) -> int:
    async def main() -> int:
        async with serve(impostor.handle, "127.0.0.1", 0) as server:
            port = next(iter(server.sockets)).getsockname()[1]
            agent = Agent(agent_config(f"ws://127.0.0.1:{port}", spool, rules=rules))
            return await asyncio.wait_for(agent.run(), 10)

    return asyncio.run(main())


def test_a_fake_controller_learns_nothing_and_gets_nothing_run(tmp_path: Path, work: Path) -> None:
    marker = tmp_path / "power-ran"
    script = tmp_path / "power"
    script.write_text(f"#!/bin/sh\ntouch {marker}\n")
    script.chmod(0o755)
    # Even a configuration that allows both: the agent must not get as far as asking it.
    rules = NodeRules(root_jobs=True, power_programs={"p": (str(script),)})
    for answer in ("launch", "guess"):
        impostor = Impostor(answer, work, script)
        spool = tmp_path / f"spool-{answer}"
        assert run_against(impostor, spool, rules) == REFUSED
        everything = "\n".join(impostor.received)
        assert KEY not in everything
        assert "authorization" not in everything.lower()
        # Only the hello: the agent's id, its node names and a random nonce. No proof, no register.
        frames = [json.loads(f) for f in impostor.received[1:]]
        assert [f["type"] for f in frames] == ["hello"]
        assert set(frames[0]) == {"type", "agent_id", "nonce", "nodes"}
        assert not (work / "ran").exists() and not marker.exists()
        assert not (spool / "jobs").exists() or not os.listdir(spool / "jobs")


def test_wrong_key_either_way_exits_2(tmp_path: Path, caplog: Any) -> None:
    async def agent_against(controller_key: str, agent_key: str, spool: Path) -> tuple[int, FakeController]:
        async with FakeController(key=controller_key) as ctl:
            agent = Agent(agent_config(ctl.url, spool, key=agent_key))
            return await asyncio.wait_for(agent.run(), 10), ctl

    # The controller cannot prove our key: the agent stops before it says anything more.
    status, ctl = asyncio.run(agent_against("another cluster", KEY, tmp_path / "a"))
    assert status == REFUSED and ctl.registers == [] and ctl.refused_agents == 0
    assert "controller failed to prove the cluster key" in caplog.text
    # The controller refuses our proof (4003): "authentication refused by controller".
    caplog.clear()

    class Refusing(FakeController):
        async def _authenticate(self, ws: ServerConnection) -> handshake.Channel | None:
            self.key = KEY.encode()  # proves the agent's key...
            hello = json.loads(await ws.recv())
            ours = handshake.new_nonce()
            proof = handshake.controller_proof(self.key, hello["nonce"], ours, hello["agent_id"])
            await ws.send(json.dumps({"type": "challenge", "nonce": ours, "proof": proof}))
            await ws.recv()
            self.refused_agents += 1
            await ws.close(4003)  # ...but, say, this agent's nodes have another key
            return None

    async def refused() -> tuple[int, FakeController]:
        async with Refusing() as ctl:
            agent = Agent(agent_config(ctl.url, tmp_path / "b"))
            return await asyncio.wait_for(agent.run(), 10), ctl

    status, ctl = asyncio.run(refused())
    assert status == REFUSED and ctl.refused_agents == 1
    assert "authentication refused by controller" in caplog.text


def test_a_relay_cannot_inject_messages(tmp_path: Path, work: Path) -> None:
    """A man in the middle that passes the handshake on still cannot add its own launch."""

    async def main() -> None:
        async with FakeController() as ctl:
            agent = Agent(agent_config(ctl.url, tmp_path / "spool"))
            task = asyncio.create_task(agent.run())
            try:
                await ctl.expect("register")
                job = launch_object(5, f"#!/bin/sh\ntouch {work}/ran\n", work)
                assert ctl.ws is not None
                await ctl.ws.send(json.dumps({"type": "launch", "job": job}))  # unsealed
                await ctl.expect("register")  # the agent dropped that session and came back
                await asyncio.sleep(0.3)
                assert not (work / "ran").exists()
            finally:
                agent.stop()
                assert await asyncio.wait_for(task, 5) == 0

    asyncio.run(main())


def test_proofs_are_domain_separated_and_bound_to_both_nonces() -> None:
    key, a, c = b"k", handshake.new_nonce(), handshake.new_nonce()
    assert handshake.controller_proof(key, a, c, "h:1") != handshake.agent_proof(key, a, c, "h:1")
    assert handshake.controller_proof(key, a, c, "h:1") != handshake.controller_proof(key, c, a, "h:1")
    assert handshake.agent_proof(key, a, c, "h:1") != handshake.agent_proof(key, a, c, "h:2")
    sk = handshake.session_key(key, a, c, "h:1")
    agent, controller = handshake.Channel.for_agent(sk), handshake.Channel.for_controller(sk)
    first, second = agent.seal('{"n":1}'), agent.seal('{"n":2}')
    assert controller.open(first) == '{"n":1}'
    for bad in (first, second.replace("2", "3"), controller.seal("{}")):  # replayed, changed, reflected
        try:
            controller.open(bad)
        except handshake.BadFrame:
            continue
        raise AssertionError(f"accepted {bad!r}")
    assert controller.open(second) == '{"n":2}'
