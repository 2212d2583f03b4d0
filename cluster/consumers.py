"""Websocket endpoints: node agents (commands both ways) and console pages (push only)."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings

from agent import handshake
from cluster import agent_keys, extensions, liveness, publish
from cluster.consumer_base import ReadingConsumer
from cluster.services import agents, prolog_epilog, reboots, step_usage
from cluster.services.errors import DATABASE_UNREACHABLE
from slurmwords import agent_messages as am

log = logging.getLogger(__name__)


# Nodes held by this process's agent connections (node -> consumer): certain knowledge of
# who serves a node, which the database can only approximate across server processes.
_holders: dict[str, AgentConsumer] = {}

HANDSHAKE_TIMEOUT = 10.0  # seconds a connection may take to prove the key
# The channel layer forgets a group membership after its group_expiry (a day): an agent
# connected longer would stop getting its launches. Its nodes' groups are joined again at
# a ping this often (settings.CHANNEL_GROUP_EXPIRY is the bound it renews within).
GROUP_RENEWAL = 3600.0
# The deadline is counted in turns of this length that the server took on time: a turn
# the server's own backlog made late (a loop busy with other agents' registrations, the
# GIL held by the passes) counts for its length only, so a busy server does not refuse
# agents whose frames it has not yet read.
HANDSHAKE_TICK = 0.5
AUTH_FAILED = 4003
# "Try again later" (as DATABASE_DOWN): the agent did not prove the key in time, which
# is no proof of a wrong key; the agent reconnects with backoff.
HANDSHAKE_EXPIRED = 1013
BAD_FRAME = 1008  # policy violation: a sealed message that does not verify
# "Try again later": the database stayed unreachable while a message was handled. The agent
# reconnects (any code but 4003) and restates what was not acknowledged in its register.
DATABASE_DOWN = 1013
# A database restarting (PostgreSQL's restart, a failover, SQLite's lock held by another
# writer) is waited out this long, retrying the same call, before the connection is given up.
DB_RETRY_FOR = 20.0
DB_RETRY_FIRST = 0.1  # seconds before the first retry, doubled each time
DB_RETRY_CAP = 2.0


MAX_HELLO_NODES = 100_000
_keys_read: tuple[tuple[int, int, str], agent_keys.NodeKeys | str] | None = None


def _cluster_key() -> bytes:
    return str(settings.FSCHED_AGENT_KEY).encode()


def _node_keys() -> agent_keys.NodeKeys | str:
    """``$FSCHED_CONF_DIR/agent_keys`` as last read (again when it changes), or why it is unusable."""
    global _keys_read  # noqa: PLW0603 - one cache for the process's connections
    path = Path(settings.CONF_DIR) / "agent_keys"
    try:
        st = path.stat()
        stamp = (st.st_mtime_ns, st.st_size, str(path))
    except OSError:
        stamp = (0, 0, str(path))
    if _keys_read is None or _keys_read[0] != stamp:
        try:
            _keys_read = (stamp, agent_keys.load(path))
        except ValueError as exc:
            log.error("per-node agent keys unusable, every agent is refused: %s", exc)
            _keys_read = (stamp, str(exc))
    return _keys_read[1]


class DatabaseDown(Exception):
    """The database stayed unreachable for DB_RETRY_FOR seconds."""


def _valid_agent_id(value: object) -> bool:
    return isinstance(value, str) and 0 < len(value) <= 128 and value.isprintable()


class AgentConsumer(ReadingConsumer):
    """One connected node agent.

    Nothing is accepted before the agent proved the cluster key (agent/handshake.py,
    docs/agent-protocol.md): ``hello``, our ``challenge`` (with our proof), its ``auth``.
    After that every frame is sealed with the session's MAC, and the connection speaks
    only for the nodes it registered.
    """

    nodes: list[str]

    async def connect(self) -> None:
        self.nodes = []
        self.agent_id = ""
        self.registered_at: Any = None
        self._inbox: list[dict[str, Any]] = []
        self._drainer: asyncio.Future[None] | None = None
        self._given_up = False  # the database stayed down: the connection is being closed
        self._channel: handshake.Channel | None = None
        self._hello: tuple[str, str, str] | None = None  # agent id, its nonce, ours
        self._key = b""  # the key this connection proves: the cluster's, or its nodes' own
        self._scope: frozenset[str] | None = None  # nodes that key may register; None: unkeyed ones
        self._node_keys = agent_keys.NodeKeys()
        self._send_lock = asyncio.Lock()  # sealed frames leave in the order they were numbered
        # Launches sent on this connection that no ping has yet shown the agent read:
        # job id -> the number of the frame that carried it (launch_watch.missing_at_ping).
        self._launches: dict[int, int] = {}
        # Launches written on this connection and not yet in the agent's job list: one not
        # written yet is still in the channel layer's queue to this consumer, which a
        # backlog of the server's own sends makes long (missing_at_ping).
        self._written: set[int] = set()
        self._groups_joined = 0.0  # loop time of the last join of the nodes' groups
        await self.accept()
        self._deadline = asyncio.ensure_future(self._expire())

    async def _expire(self) -> None:
        loop = asyncio.get_running_loop()
        counted = 0.0
        while counted < HANDSHAKE_TIMEOUT:
            began = loop.time()
            await asyncio.sleep(HANDSHAKE_TICK)
            counted += min(loop.time() - began, HANDSHAKE_TICK)
        if self._channel is None:
            await self._refuse(f"no authentication within {HANDSHAKE_TIMEOUT:g}s", code=HANDSHAKE_EXPIRED)

    async def _refuse(self, why: str, *, code: int = AUTH_FAILED) -> None:
        log.warning("agent connection from %s refused: %s", self.scope.get("client"), why)
        await self.close(code=code)

    async def disconnect(self, code: int) -> None:
        self._deadline.cancel()
        liveness.gone(id(self))
        mine = [n for n in self.nodes if _holders.get(n) is self]
        for node in self.nodes:
            await self.channel_layer.group_discard(publish.node_group(node), self.channel_name)
            if _holders.get(node) is self:
                del _holders[node]
        if mine:
            try:
                await database_sync_to_async(agents.agent_disconnected)(
                    nodes=mine, agent_id=self.agent_id, registered_at=self.registered_at
                )
            except DATABASE_UNREACHABLE as exc:
                # The nodes keep this agent id: the same agent may register them again at
                # once, and the health pass marks them NOT_RESPONDING if it does not.
                log.warning("agent %s: its end could not be recorded (%s)", self.agent_id, exc)

    async def receive(
        self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any
    ) -> None:
        if text_data is None:  # the protocol is JSON text only
            if self._channel is None:
                await self._refuse("binary frame")
            else:
                await self.close(code=BAD_FRAME)
            return
        if self._channel is None:
            await self._handshake(text_data)
            return
        try:
            content = json.loads(self._channel.open(text_data))
        except handshake.BadFrame:
            # Not from the agent that proved the key: someone in the middle. Drop the session.
            log.error("agent %s %s: a message failed authentication; closing", self.agent_id, self.nodes)
            await self.close(code=BAD_FRAME)
            return
        except (ValueError, RecursionError):
            log.warning("agent %s sent a message that is not JSON", self.agent_id)
            return
        if self.nodes:
            liveness.received(id(self), self.nodes)  # heard now, whenever it is handled
        if not isinstance(content, dict):
            log.warning("agent %s sent a message that is not an object", self.agent_id)
            return
        await self.receive_json(content)

    async def _handshake(self, text: str) -> None:
        try:
            msg = json.loads(text)
        except (ValueError, RecursionError):
            msg = None
        kind = msg.get("type") if isinstance(msg, dict) else None
        if not _cluster_key():
            await self._refuse("this controller has no cluster key (FSCHED_AGENT_KEY)")
            return
        if self._hello is None:
            if kind != "hello":
                await self._refuse(f"{kind!r} before authentication")
                return
            try:
                hello = am.Hello.from_wire(msg)
            except am.MessageError:
                hello = None
            if (
                hello is None
                or not _valid_agent_id(hello.agent_id)
                or not handshake.valid_nonce(hello.nonce)
                or len(hello.nodes) > MAX_HELLO_NODES
                or not all(0 < len(n) <= 64 for n in hello.nodes)
            ):
                await self._refuse("malformed hello")
                return
            agent_id, nonce, names = hello.agent_id, hello.nonce, hello.nodes
            keys = _node_keys()
            scope = keys if isinstance(keys, str) else keys.scope(names)
            if isinstance(scope, str):
                await self._refuse(f"agent {agent_id}: {scope}")
                return
            self._node_keys = keys
            self._key, self._scope = (_cluster_key(), None) if scope is None else scope
            ours = handshake.new_nonce()
            self._hello = (agent_id, nonce, ours)
            proof = handshake.controller_proof(self._key, nonce, ours, agent_id)
            await self.send(text_data=json.dumps(am.Challenge(nonce=ours, proof=proof).to_wire()))
            return
        agent_id, nonce, ours = self._hello
        expected = handshake.agent_proof(self._key, nonce, ours, agent_id)
        try:
            proof = am.Auth.from_wire(msg).proof if kind == "auth" else None
        except am.MessageError:
            proof = None  # a malformed auth proves nothing: refused as a wrong key
        if kind != "auth" or not handshake.proof_matches(expected, proof):
            await self._refuse(
                f"wrong cluster key (agent {agent_id})" if kind == "auth" else f"{kind!r} instead of auth"
            )
            return
        self.agent_id = agent_id
        self._channel = handshake.Channel.for_controller(
            handshake.session_key(self._key, nonce, ours, agent_id)
        )
        self._deadline.cancel()

    async def send_json(self, content: Any, close: bool = False) -> None:
        assert self._channel is not None
        async with self._send_lock:
            await self.send(text_data=self._channel.seal(json.dumps(content)), close=close)
            if content.get("type") == am.Launch.TYPE:
                job_id = int(content["job"]["job_id"])
                self._launches[job_id] = self._channel.sent
                self._written.add(job_id)

    async def receive_json(self, content: dict[str, Any], **kwargs: Any) -> None:
        # Messages are queued and handled by one drain task, so that what arrives while the
        # database is busy is handled together: all the starts in one transaction, all the
        # completions in another (an agent finishing hundreds of jobs a second).
        if self._given_up:
            return  # closing: the agent restates what matters when it registers again
        self._inbox.append(content)
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.ensure_future(self._drain())

    async def _drain(self) -> None:
        while self._inbox:
            batch, self._inbox = self._inbox, []
            try:
                await self._handle(batch)
            except DatabaseDown as exc:
                # Nothing is acknowledged that was not committed: the agent restates its
                # completions and running jobs when it registers again.
                log.error("agent %s %s: %s; closing its connection so it re-sends at registration",
                          self.agent_id, self.nodes, exc)  # fmt: skip
                self._given_up = True
                self._inbox = []
                await self.close(code=DATABASE_DOWN)
                return
            except Exception:
                log.exception("agent %s: handling %d messages failed", self.nodes, len(batch))

    async def _db(self, call: Any, **kwargs: Any) -> Any:
        """``call(**kwargs)`` in the database thread, retried while the database is unreachable.

        Each call is retried on its own, so what an earlier call of the batch committed is
        not done again; messages arriving meanwhile wait in the inbox, in order.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DB_RETRY_FOR
        delay = DB_RETRY_FIRST
        while True:
            try:
                return await database_sync_to_async(call)(**kwargs)
            except DATABASE_UNREACHABLE as exc:
                left = deadline - loop.time()
                if left <= 0:
                    raise DatabaseDown(
                        f"database unreachable for {DB_RETRY_FOR:g}s ({type(exc).__name__}: {exc})"
                    ) from exc
                log.warning("agent %s: database unreachable (%s: %s), retrying %s in %.1fs",
                            self.agent_id, type(exc).__name__, exc, call.__name__, delay)  # fmt: skip
                await asyncio.sleep(min(delay, left))
                delay = min(delay * 2, DB_RETRY_CAP)

    def _ours(self, kind: str, node: str, about: int) -> bool:
        """Whether a ``kind`` message about job (or power run) ``about`` on ``node`` is one
        of this connection's nodes' (logged when not)."""
        if node in self.nodes:
            return True
        log.warning(
            "agent %s (nodes %s) sent %s for job %s on node %r, not one of its nodes: ignored",
            self.agent_id, ",".join(self.nodes) or "none", kind, about, node,
        )  # fmt: skip
        return False

    def _decoded(self, raw: dict[str, Any]) -> am.Message | dict[str, Any] | None:
        """The agent message ``raw`` is, or ``raw`` itself for an extension's own type that
        the protocol does not describe; None (logged) when it is unknown or malformed."""
        kind = raw.get("type")
        if not isinstance(kind, str) or kind not in am.AGENT_MESSAGES:
            if isinstance(kind, str) and extensions.agent_handler(kind) is not None:
                return raw
            log.warning("agent %s sent unknown message type %r", self.nodes, kind)
            return None
        try:
            return am.decode(raw, am.AGENT_MESSAGES)
        except am.MessageError as exc:
            # The sender's own fault: dropping it loses nothing the agent will not restate.
            log.warning("agent %s %s: malformed message dropped: %s", self.agent_id, self.nodes, exc)
            return None

    async def _handle(self, batch: list[dict[str, Any]]) -> None:
        started: list[dict[str, Any]] = []
        completions: list[dict[str, Any]] = []
        ping: tuple[am.Ping, dict[str, Any]] | None = None
        for raw in batch:
            kind = raw.get("type")
            if kind != am.Register.TYPE and self.registered_at is None:
                log.warning("agent %s sent %r before register: ignored", self.agent_id, kind)
                continue
            msg = self._decoded(raw)
            # The services read the plain dicts as received, which the decoding has checked.
            match msg:
                case None:
                    pass
                case am.Register():
                    await self._flush(started, completions)
                    started, completions = [], []
                    await self.on_register(msg)
                case am.Started():
                    started += [raw] if self._ours(kind, msg.node, msg.job_id) else []
                case am.StartedBatch():
                    started += [
                        wire
                        for s, wire in zip(msg.started, raw["started"], strict=True)
                        if self._ours(am.Started.TYPE, s.node, s.job_id)
                    ]
                case am.Completed():
                    completions += [raw] if self._ours(kind, msg.node, msg.job_id) else []
                case am.CompletedBatch():
                    completions += [
                        wire
                        for c, wire in zip(msg.completions, raw["completions"], strict=True)
                        if self._ours(am.Completed.TYPE, c.node, c.job_id)
                    ]
                case am.LaunchFailed():
                    if self._ours(kind, msg.node, msg.job_id):
                        await self._db(agents.job_launch_failed, job_id=msg.job_id, node=msg.node,
                                       error=msg.error, run=msg.run)  # fmt: skip
                case am.Ping():
                    ping = (msg, raw)
                case am.RebootDone():
                    if msg.node in self.nodes:
                        await self._db(
                            reboots.agent_reboot_done, node=msg.node, exit_code=msg.exit_code, error=msg.error
                        )
                case am.PrologEpilog():
                    if self._ours(kind, msg.node, msg.job_id):
                        # After the completions before it: an epilog_done ends a COMPLETING job.
                        await self._flush(started, completions)
                        started, completions = [], []
                        await self._db(prolog_epilog.report, msg=msg)
                case am.StepUsage():
                    await self._db(step_usage.usage_reported, nodes=list(self.nodes), msg=msg)
                case am.Drain():
                    await self._db(
                        agents.agent_drain,
                        nodes=[n for n in msg.nodes if n in self.nodes],
                        reason=msg.reason,
                        agent_id=self.agent_id,
                    )
                case _:
                    await self._extension_message(kind, raw)
        await self._flush(started, completions)
        if ping is not None and self.nodes:
            await self._on_ping(*ping)

    async def _on_ping(self, msg: am.Ping, raw: dict[str, Any]) -> None:
        # Handled after every message the agent sent before it (its starts are recorded),
        # so its job list is all that is left to say about its launches.
        await self._renew_groups()
        jobs, in_flight, written = None, [], None
        if msg.jobs is not None and msg.seen is not None:
            jobs = msg.jobs
            in_flight = [job for job, frame in self._launches.items() if frame > msg.seen]
            self._written.difference_update(jobs)
            written = set(self._written)
        # A later ping's agent has read at least as far: only launches in flight stay
        # (none for an agent of an earlier release, which sends no list).
        self._launches = {job: self._launches[job] for job in in_flight}
        failed = await self._db(
            agents.agent_ping,
            nodes=self.nodes,
            load=raw.get("load"),
            jobs=jobs,
            in_flight=in_flight,
            written=written,
        )
        self._written.difference_update(failed or ())

    async def _renew_groups(self) -> None:
        now = asyncio.get_running_loop().time()
        if now - self._groups_joined < GROUP_RENEWAL:
            return
        self._groups_joined = now
        for node in self.nodes:
            if _holders.get(node) is self:
                await self.channel_layer.group_add(publish.node_group(node), self.channel_name)

    async def _extension_message(self, kind: Any, msg: dict[str, Any]) -> None:
        handler = extensions.agent_handler(kind) if isinstance(kind, str) else None
        if handler is None:  # a message of the protocol the controller does not take (hello)
            log.warning("agent %s sent unknown message type %r", self.nodes, kind)
            return
        # An extension's message (power saving's power_action_done), for these nodes only.
        await self._db(handler, nodes=list(self.nodes), msg=msg)

    async def _flush(self, started: list[dict[str, Any]], completions: list[dict[str, Any]]) -> None:
        if not (started or completions):
            return
        # The starts and ends that arrived together: one transaction, one trip to the database thread.
        await self._db(agents.jobs_reported, started=started, completions=completions)
        if completions:
            # Acknowledged only after the commit: until then the agent keeps them spooled.
            await self.send_json(am.Ack(job_ids=[int(c["job_id"]) for c in completions]).to_wire())

    async def on_register(self, msg: am.Register) -> None:
        if msg.agent_id != self.agent_id:
            log.warning("agent %s registered as %r: the id it authenticated with is kept", self.agent_id,
                        msg.agent_id)  # fmt: skip
        live = {node: c.agent_id for node, c in _holders.items() if c is not self}
        nodes, refused = self._keyed(msg.nodes)
        result = await self._db(
            agents.agent_register,
            agent_id=self.agent_id,
            nodes=[n.to_wire() for n in nodes],
            running=[r.to_wire() for r in msg.running],
            completions=[c.to_wire() for c in msg.completions],
            live=live,
        )
        result.rejected.update(refused)
        for node in self.nodes:
            await self.channel_layer.group_discard(publish.node_group(node), self.channel_name)
            if _holders.get(node) is self:
                del _holders[node]
        self.nodes = result.accepted
        self.registered_at = result.at
        for node in self.nodes:
            previous = _holders.get(node)
            if previous is not None and previous is not self:
                # The same agent on a new connection: the old one is stale and speaks no more for it.
                previous.nodes = [n for n in previous.nodes if n != node]
                await self.channel_layer.group_discard(publish.node_group(node), previous.channel_name)
            _holders[node] = self
            await self.channel_layer.group_add(publish.node_group(node), self.channel_name)
        self._groups_joined = asyncio.get_running_loop().time()
        await self.send_json(
            am.Registered(
                nodes=result.accepted,
                rejected=result.rejected,
                kill=result.kill,
                ping_interval=agents.PING_INTERVAL,
            ).to_wire()
        )
        if result.acked:
            await self.send_json(am.Ack(job_ids=result.acked).to_wire())
        for payload in result.relaunch:
            await self.send_json(payload)

    def _keyed(self, nodes: list[am.NodeInfo]) -> tuple[list[am.NodeInfo], dict[str, str]]:
        """The registered nodes the key this agent proved may speak for, and the others' reasons."""
        ok: list[am.NodeInfo] = []
        refused: dict[str, str] = {}
        for info in nodes:
            name = info.name
            if self._scope is not None and name not in self._scope:
                refused[name] = "node is not covered by this agent's key"
            elif self._scope is None and self._node_keys.key_of(name) is not None:
                refused[name] = "node has its own key"
            else:
                ok.append(info)
        if refused:
            log.warning("agent %s: key does not cover %s", self.agent_id, ",".join(refused))
        return ok, refused

    async def agent_command(self, event: dict[str, Any]) -> None:
        # "payloads": the commands of one transaction for this node (cluster.publish);
        # "payload": one, as a server of an earlier release sends it.
        if self._channel is not None:
            for payload in event.get("payloads") or [event["payload"]]:
                await self.send_json(payload)


class ConsoleConsumer(ReadingConsumer):
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
