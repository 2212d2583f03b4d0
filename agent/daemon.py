"""The agent's connection to the controller (docs/agent-protocol.md).

One websocket to ``<controller>/ws/agent/``. The key is never sent: after each connect
the controller proves it knows the cluster key, then the agent does (agent/handshake.py),
and every later message is sealed with the session's MAC. Only then the agent sends
``register`` (nodes, running jobs, unacknowledged completions) and waits for
``registered`` before it sends anything else; messages produced meanwhile are queued, so
nothing between the register snapshot and the reply is lost. Messages produced while
disconnected are dropped: the next ``register`` restates them (running jobs, spooled
completions).

A controller that cannot prove the key, or that refuses ours (close code 4003), ends
the agent with status 2: retrying cannot help, and nothing was sent or run. Any other
failure is retried forever with exponential backoff and jitter, capped at a few
seconds. SIGTERM or SIGINT stops the agent cleanly (status 0) and leaves the jobs
running: a next agent started on the same spool adopts them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import random
import signal
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psutil
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus, InvalidURI

from agent import handshake
from agent.allocations import api_url
from agent.containment import DEFAULT_INTERVAL, Containment
from agent.features import helper_features
from agent.hres_node import HresNodeHooks
from agent.jobs import RESEND_AFTER, JobManager
from agent.load_sampler import ProcLoad
from agent.nodeconf import NodeRules
from agent.power import PowerActions
from agent.prolog import NodeHooks
from agent.reboot import Reboots
from agent.spool import Spool
from agent.step_usage import StepUsageWatch
from agent.steps import StepRunner
from load.core.indices import SAMPLE_INTERVAL
from slurmwords import agent_messages as am
from slurmwords.version import SLURM_VERSION

log = logging.getLogger(__name__)

MIB = 1 << 20
ENDPOINT = "/ws/agent/"
REFUSED = 2  # exit status when the key is refused, or the controller cannot prove it
AUTH_REFUSED = 4003  # the controller's close code for a failed authentication
HANDSHAKE_TIMEOUT = 10.0
HELD_ELSEWHERE = "node is served by another agent"  # a rejection worth retrying later
MAX_MESSAGE = 64 * MIB  # a launch carries a whole script and environment
DEFAULT_KILL_WAIT = 30.0  # Slurm's KillWait default, if a cancel omits it


def _host_system() -> tuple[str, str]:
    """slurmd's Arch and OS: SLURM_ARCH and SLURM_OS when set, else uname's machine and
    "sysname release version"."""
    uname = os.uname()
    arch = os.environ.get("SLURM_ARCH") or uname.machine
    system = os.environ.get("SLURM_OS") or f"{uname.sysname} {uname.release} {uname.version}"
    return arch, system


HOST_ARCH, HOST_OS = _host_system()


@dataclass(frozen=True)
class NodeSpec:
    """One hosted node as announced in ``register``."""

    name: str
    cpus: int
    real_memory: int  # MB
    features: str | None = None
    conf: str | None = None
    # Cloud accounting, reported so the controller shows and keeps them (scontrol show node).
    instance_id: str | None = None
    instance_type: str | None = None
    extra: str | None = None

    def info(
        self,
        boot_time: float,
        power_actions: dict[str, str] | None = None,
        active_features: str | None = None,
    ) -> am.NodeInfo:
        # An empty value is not announced at all: the controller keeps what it has.
        return am.NodeInfo(
            name=self.name,
            cpus=self.cpus,
            real_memory=self.real_memory,
            boot_time=boot_time,
            features=self.features or None,
            instance_id=self.instance_id or None,
            instance_type=self.instance_type or None,
            extra=self.extra or None,
            conf=self.conf or None,
            power_actions=power_actions,
            active_features=active_features,
            arch=HOST_ARCH,
            os=HOST_OS,
            version=SLURM_VERSION,
        )


@dataclass(frozen=True)
class AgentConfig:
    controller: str  # ws:// or wss:// base URL (an http(s) URL is converted)
    key: str
    nodes: tuple[NodeSpec, ...]
    spool_dir: str
    boot_time: float | None = None  # None: see Agent.boot_time
    ping_interval: float = 5.0
    backoff_cap: float = 5.0
    # Seconds before an unacknowledged completion is sent again (then doubling, capped).
    resend_after: float = RESEND_AFTER
    # What slurm.conf allows on this node (agent/nodeconf.py); the default allows least.
    rules: NodeRules = field(default_factory=NodeRules)
    # Where the load indices are read: DIR/meminfo and DIR/stat (agent/load_sampler.py).
    proc_root: str = "/proc"
    # Seconds between the containment's walks of /proc (RSS watcher, usage sampling).
    usage_interval: float = DEFAULT_INTERVAL
    # Jobs "run" without a process for FSCHED_SIM_RUN_TIME seconds of their environment
    # (0 when unset): the scale benchmarks' agents serving thousands of nodes.
    simulate_exec: bool = False


def endpoint_url(controller: str) -> str:
    """``http://h:8000`` or ``ws://h:8000`` → ``ws://h:8000/ws/agent/``."""
    url = controller.strip()
    for plain, ws in (("http://", "ws://"), ("https://", "wss://")):
        if url.startswith(plain):
            url = ws + url[len(plain) :]
    if url.rstrip("/").endswith(ENDPOINT.rstrip("/")):
        return url
    return url.rstrip("/") + ENDPOINT


def backoff_delay(attempt: int, cap: float, rand: Callable[[float, float], float] = random.uniform) -> float:
    """Exponential backoff with jitter: 0.1 s, 0.2 s, 0.4 s ... capped at ``cap``."""
    ceiling = min(cap, 0.1 * (2 ** min(attempt, 16)))
    return rand(ceiling / 2, ceiling)


def node_hooks(rules: NodeRules) -> NodeHooks:
    """slurm.conf's Prolog, Epilog and task programs, then hres/lua's node job prolog and
    epilog for the jobs that use a resource with a plugin."""
    hooks = NodeHooks(rules.prolog, cluster=rules.cluster_name, conf_file=rules.source)
    HresNodeHooks(slurm_user=rules.slurm_user, prolog_timeout=rules.prolog.prolog_timeout,
                  epilog_timeout=rules.prolog.epilog_timeout).attach(hooks)  # fmt: skip
    return hooks


class AuthRefused(Exception):
    """The controller refused our proof of the key."""


class ControllerUnproven(Exception):
    """The peer at the controller URL did not prove it knows the cluster key."""


class Agent:
    """The daemon: one controller connection at a time, jobs kept across reconnects."""

    def __init__(self, config: AgentConfig, *, clock: Callable[[], float] = time.time) -> None:
        self.config = config
        self.clock = clock
        self.started_at = clock()
        self.url = endpoint_url(config.controller)
        self.spool = Spool(config.spool_dir)
        # The host and the spool, not the process: a restarted agent is the same agent.
        self.agent_id = f"{socket.gethostname()}:{self.spool.identity()}"
        self.node_names = [n.name for n in config.nodes]
        self.jobs = JobManager(
            self.spool,
            self.node_names,
            self._emit,
            clock=clock,
            root_jobs=config.rules.root_jobs,
            resend_after=config.resend_after,
            containment=Containment.detect(
                config.spool_dir, self.spool.identity().replace("/", "_"), interval=config.usage_interval
            ),
            hooks=node_hooks(config.rules),
            api_url=api_url(config.controller),
            simulate_exec=config.simulate_exec,
        )
        self.steps = StepRunner(
            self.node_names,
            self.jobs.containment,
            self._emit,
            clock=clock,
            root_jobs=config.rules.root_jobs,
            hooks=self.jobs.hooks,
        )
        self.usage = StepUsageWatch(self.jobs.containment, self.steps)
        self.jobs.containment.watchers.append(self.usage)
        self.power = PowerActions(self.node_names, self._emit, config.rules, clock=clock)
        self.load = ProcLoad(config.proc_root)
        self.reboots = Reboots(self.node_names, self._emit, config.rules, self.spool, clock=clock)
        self.ping_interval = config.ping_interval
        self.boot_time = config.boot_time if config.boot_time is not None else self.started_at
        self.node_boot: dict[str, float] = {}  # nodes rebooted by scontrol reboot: their own
        self._queue: asyncio.Queue[am.Message] | None = None
        self._stop: asyncio.Event | None = None
        self._ws: ClientConnection | None = None
        self._was_registered = False  # whether the latest connection got a ``registered``
        self._channel: handshake.Channel | None = None
        self._held_retries = 0  # registrations in a row refused a node held by another agent

    # -- lifecycle ------------------------------------------------------------------

    def stop(self) -> None:
        if self._stop is not None:
            self._stop.set()

    async def run(self) -> int:
        """Serve until stopped (0) or refused by the controller (2)."""
        loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        handled = []
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, self.stop)
                handled.append(sig)
        try:
            adopted = self.jobs.recover()
            self._settle_boot_time(adopted)
            log.info(
                "agent %s (pid %d) serving %s (spool %s, %d running job(s) adopted)",
                self.agent_id, os.getpid(), ",".join(self.node_names), self.spool.root, adopted,
            )  # fmt: skip
            # Sampled whether or not the controller is reachable: the averages run on.
            sampling = asyncio.create_task(self._sample_load())
            watching = asyncio.create_task(self.jobs.containment.run())
            try:
                return await self._serve()
            finally:
                for task in (sampling, watching):
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
        finally:
            self.jobs.close()
            self.jobs.containment.close()
            self.spool.close()
            for sig in handled:
                loop.remove_signal_handler(sig)

    def _settle_boot_time(self, adopted: int) -> None:
        """Choose the boot time reported for the hosted nodes.

        Several demo "nodes" share one machine, so by default a restart of the agent
        counts as a reboot of its nodes: the boot time is the agent's start time. But
        when jobs of the previous agent are still running, the nodes plainly did not
        reboot, and the previous boot time (kept in the spool) is reported again.
        """
        if self.config.boot_time is None:
            previous = self.spool.read_boot_time()
            if adopted and previous is not None:
                self.boot_time = previous
        self.spool.write_boot_time(self.boot_time)
        # A node whose RebootProgram ran (it restarted this agent) did reboot, whatever
        # jobs of the other nodes were adopted.
        for name in self.spool.take_rebooting() & set(self.node_names):
            self.node_boot[name] = self.started_at

    async def _serve(self) -> int:
        assert self._stop is not None
        attempt = 0
        while not self._stop.is_set():
            session = asyncio.create_task(self._connect_once())
            stopper = asyncio.create_task(self._stop.wait())
            await asyncio.wait({session, stopper}, return_when=asyncio.FIRST_COMPLETED)
            if stopper.done():
                await self._end_session(session)
                break
            stopper.cancel()
            exc = session.exception()
            if isinstance(exc, AuthRefused):
                log.error("authentication refused by controller")
                return REFUSED
            if isinstance(exc, ControllerUnproven):
                log.error(
                    "controller failed to prove the cluster key (%s): not a controller of this "
                    "cluster, or a different key; nothing was sent or run",
                    exc,
                )
                return REFUSED
            if isinstance(exc, InvalidURI):
                log.error("invalid controller URL %s: %s", self.url, exc)
                return REFUSED
            if self._was_registered:
                attempt = 0  # the last connection worked: start the backoff afresh
                # Once: a connection refused before it reaches ``register`` never clears the
                # flag, and the backoff would stay at its first step for good.
                self._was_registered = False
            delay = backoff_delay(attempt, self.config.backoff_cap)
            attempt += 1
            if exc is None:
                log.warning("connection to %s closed; reconnecting in %.1fs", self.url, delay)
            else:
                log.warning(
                    "controller %s unreachable (%s: %s); retrying in %.1fs",
                    self.url,
                    type(exc).__name__,
                    exc,
                    delay,
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), delay)
        log.info("agent %s stopping; running jobs are left running", self.agent_id)
        return 0

    async def _end_session(self, session: asyncio.Task[bool]) -> None:
        """Close the connection politely (1000) and let the session finish."""
        if self._ws is None:  # still connecting: nothing to close
            session.cancel()
        else:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._ws.close(), 2)
        try:
            await asyncio.wait_for(session, 2)
        except (asyncio.CancelledError, TimeoutError, Exception):
            session.cancel()

    # -- one connection -------------------------------------------------------------

    async def _connect_once(self) -> bool:
        """Run one session; True if it got as far as ``registered``."""
        try:
            ws = await connect(
                self.url,
                open_timeout=10,
                close_timeout=2,
                max_size=MAX_MESSAGE,
                proxy=None,  # the controller is cluster-internal: never via an HTTP(S)_PROXY
            )
        except InvalidStatus as exc:
            if exc.response.status_code in (401, 403):
                raise AuthRefused from exc
            raise
        self._ws = ws
        try:
            async with ws:
                try:
                    self._channel = await self._authenticate(ws)
                    return await self._session(ws)
                except ConnectionClosed as exc:
                    if exc.rcvd is not None and exc.rcvd.code == AUTH_REFUSED:
                        raise AuthRefused from None
                    raise
        finally:
            self._ws = None
            self._channel = None

    async def _authenticate(self, ws: ClientConnection) -> handshake.Channel:
        """hello → challenge (the controller's proof, checked first) → auth (ours)."""
        key = self.config.key.encode()
        nonce = handshake.new_nonce()
        # The node names let a controller with per-node keys choose which key to prove.
        hello = am.Hello(agent_id=self.agent_id, nonce=nonce, nodes=self.node_names)
        await ws.send(json.dumps(hello.to_wire()))
        # A silent peer may be a controller too busy to answer: that is retried, not fatal.
        raw = await asyncio.wait_for(ws.recv(), HANDSHAKE_TIMEOUT)
        msg = self._parse(raw)
        kind = None if msg is None else msg.get("type")
        if kind != am.Challenge.TYPE:
            raise ControllerUnproven(f"it answered hello with {kind!r}, not a challenge")
        try:
            challenge = am.Challenge.from_wire(msg)
        except am.MessageError as exc:
            raise ControllerUnproven(f"its challenge is malformed ({exc})") from None
        theirs = challenge.nonce
        if not handshake.valid_nonce(theirs) or theirs == nonce:
            raise ControllerUnproven("its challenge has no valid nonce")
        expected = handshake.controller_proof(key, nonce, theirs, self.agent_id)
        if not handshake.proof_matches(expected, challenge.proof):
            raise ControllerUnproven("wrong proof")
        proof = handshake.agent_proof(key, nonce, theirs, self.agent_id)
        await ws.send(json.dumps(am.Auth(proof=proof).to_wire()))
        return handshake.Channel.for_agent(handshake.session_key(key, nonce, theirs, self.agent_id))

    async def _send(self, ws: ClientConnection, msg: am.Message) -> None:
        assert self._channel is not None
        await ws.send(self._channel.seal(json.dumps(msg.to_wire())))

    async def _helper_reports(self) -> dict[str, str | None]:
        """Each node's active features as its helpers.conf Helpers report them, run off the
        event loop (a Helper may take up to ExecTime)."""
        features = self.config.rules.node_features
        if features is None:
            return {}
        names = [n.name for n in self.config.nodes]
        return await asyncio.to_thread(lambda: {name: helper_features(features, name) for name in names})

    def _register(self, active_features: dict[str, str | None] | None = None) -> am.Register:
        active = active_features or {}
        actions = self.power.report()
        return am.Register(
            agent_id=self.agent_id,
            nodes=[
                n.info(self.node_boot.get(n.name, self.boot_time), actions, active.get(n.name))
                for n in self.config.nodes
            ],
            running=self.jobs.running(),
            completions=self.jobs.unacknowledged(),
        )

    async def _session(self, ws: ClientConnection) -> bool:
        assert self._channel is not None
        active_features = await self._helper_reports()
        queue: asyncio.Queue[am.Message] = asyncio.Queue()
        # Snapshot and queue are taken together: anything emitted later is queued.
        self._queue = queue
        register = self._register(active_features)
        tasks: list[asyncio.Task[None]] = []
        registered = False
        self._was_registered = False
        try:
            await self._send(ws, register)
            log.info(
                "connected to %s; sent register: %d node(s), %d running, %d completion(s)",
                self.url, len(register.nodes), len(register.running), len(register.completions),
            )  # fmt: skip
            async for frame in ws:
                try:
                    raw = self._channel.open(frame if isinstance(frame, str) else frame.decode())
                except (handshake.BadFrame, UnicodeDecodeError):
                    # Not from the controller that proved the key (a relay injecting its own):
                    # drop this connection; a fresh handshake starts a fresh session.
                    log.error("a message from %s failed authentication; reconnecting", self.url)
                    return registered
                msg = self._decode(raw)
                if msg is None:
                    continue
                if isinstance(msg, am.Registered):
                    self.jobs.restated()  # the register carried every unacknowledged completion
                    if self._on_registered(msg):
                        self._held_retries += 1
                        tasks.append(asyncio.create_task(self._register_later(self._held_retries)))
                    else:
                        self._held_retries = 0
                    if not registered:
                        registered = self._was_registered = True
                        tasks += [
                            asyncio.create_task(self._sender(ws, queue)),
                            asyncio.create_task(self._pinger()),
                            asyncio.create_task(self._resender()),
                        ]
                    continue
                self._dispatch(msg)
        finally:
            self._queue = None
            for t in tasks:
                t.cancel()
            for t in tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await t
        return registered

    def _emit(self, msg: am.Message) -> None:
        if self._queue is not None:
            self._queue.put_nowait(msg)

    async def _sender(self, ws: ClientConnection, queue: asyncio.Queue[am.Message]) -> None:
        while True:
            msg = await queue.get()
            # A completion silenced by registered.kill after it was queued stays unsaid.
            if isinstance(msg, am.Completed) and not self.jobs.is_reportable(msg.job_id):
                continue
            await self._send(ws, msg)

    async def _register_later(self, attempt: int) -> None:
        """Register again while a node is held by another agent: it gets it once that one is
        gone (1 s, 2 s, 4 s ... up to two heartbeats: the old holder's end is seen that fast)."""
        await asyncio.sleep(min(2.0 ** (attempt - 1), 2 * self.ping_interval))
        self._emit(self._register(await self._helper_reports()))

    async def _sample_load(self) -> None:
        while True:
            self.load.sample()
            await asyncio.sleep(SAMPLE_INTERVAL)

    async def _pinger(self) -> None:
        while True:
            await asyncio.sleep(self.ping_interval)
            self._emit(self._ping())
            if (usage := self.usage.report(self.node_names, self.clock())) is not None:
                self._emit(usage)  # sstat's figures, as fresh as the heartbeat

    async def _resender(self) -> None:
        """Send again the completions the controller has not acknowledged for a while.

        It may have dropped them while the connection stayed up (its database restarting):
        without this the job stays RUNNING there, holding its CPUs, until the next reconnect.
        The controller records a completion once and acknowledges every copy.
        """
        tick = min(1.0, self.config.resend_after / 4)
        while True:
            await asyncio.sleep(tick)
            due = self.jobs.due_completions()
            if not due:
                continue
            log.info("re-sending %d unacknowledged completion(s): %s", len(due),
                     ",".join(str(c.job_id) for c in due))  # fmt: skip
            self._emit(am.CompletedBatch(completions=due))

    def _ping(self) -> am.Ping:
        indices = self.load.latest
        if indices is None:
            load = am.NodeLoad(cpu_load=os.getloadavg()[0], free_mem=psutil.virtual_memory().available // MIB)
        else:  # FreeMem= is the load indices' mem, as the spec's "avail Mem" of top
            wire = am.LoadIndices(**indices.to_wire())
            load = am.NodeLoad(cpu_load=os.getloadavg()[0], free_mem=indices.mem, indices=wire)
        # Every frame received so far was dispatched (launches are recorded as they are
        # read), so ``jobs`` holds every launch up to ``seen``.
        seen = self._channel.received if self._channel is not None else None
        return am.Ping(
            time=self.clock(),
            nodes=self.node_names,
            load={name: load for name in self.node_names},
            jobs=self.jobs.held(),
            seen=seen,
        )

    # -- controller messages --------------------------------------------------------

    @staticmethod
    def _parse(raw: str | bytes) -> dict[str, Any] | None:
        try:
            msg = json.loads(raw)
        except ValueError:
            log.warning("ignoring a message that is not JSON: %.80r", raw)
            return None
        if not isinstance(msg, dict) or "type" not in msg:
            log.warning("ignoring a message without a type: %.80r", raw)
            return None
        return msg

    @classmethod
    def _decode(cls, raw: str | bytes) -> am.Message | None:
        """The controller's message in ``raw``; None (logged) for one this agent cannot take."""
        msg = cls._parse(raw)
        if msg is None:
            return None
        if not isinstance(msg["type"], str) or msg["type"] not in am.CONTROLLER_MESSAGES:
            log.warning("ignoring unknown message type %r", msg["type"])
            return None
        try:
            return am.decode(msg, am.CONTROLLER_MESSAGES)
        except am.MessageError as exc:
            log.warning("ignoring malformed %s message (%s)", msg["type"], exc)
            return None

    def _on_registered(self, msg: am.Registered) -> bool:
        """Apply a ``registered``; True if a node was refused only because another agent has it."""
        for name, reason in msg.rejected.items():
            log.warning("node %s rejected by the controller: %s", name, reason)
        if msg.ping_interval:
            self.ping_interval = float(msg.ping_interval)
        if msg.kill:
            self.jobs.kill_silently(msg.kill)
        log.info("registered: nodes %s, %d job(s) to kill", ",".join(msg.nodes), len(msg.kill))
        # A spool that failed earlier still fails: the controller must keep these nodes drained.
        problem = getattr(self.jobs, "problem", None)
        if problem and msg.nodes:
            self._emit(am.Drain(nodes=msg.nodes, reason=str(problem)))
        return HELD_ELSEWHERE in msg.rejected.values()

    def _dispatch(self, msg: am.Message) -> None:
        kind = msg.TYPE
        try:
            match msg:
                case am.Launch():
                    self.jobs.launch(msg.job)
                case am.Signal():
                    self.jobs.signal(msg.job_id, msg.signal)
                case am.Notify():
                    self.jobs.notify(msg.job_id, msg.message)
                case am.Cancel():
                    wait = msg.kill_wait
                    released = None
                    if msg.exit_code is not None:  # an allocation's release, with its status
                        released = (int(msg.exit_code), int(msg.exit_signal or 0))
                    self.jobs.cancel(msg.job_id, DEFAULT_KILL_WAIT if wait is None else float(wait), released)
                case am.Ack():
                    self.jobs.ack(msg.job_ids)
                case am.PowerAction():
                    self.power.run(msg)
                case am.Reboot():
                    self.reboots.run(msg)
                case am.RunEpilog():
                    self.jobs.hooks.node_epilog(msg, self.jobs)
                case am.StepLaunch():
                    self.steps.launch(msg)
                case am.StepSignal():
                    self.steps.signal(msg)
                case am.RunProlog():
                    self.jobs.hooks.node_prolog(msg, self.jobs)
                case _:  # the protocol's, but not for now (a second challenge)
                    log.warning("ignoring unknown message type %r", kind)
        except (KeyError, TypeError, ValueError) as exc:
            log.warning("ignoring malformed %s message (%s: %s)", kind, type(exc).__name__, exc)
        except Exception:
            # One bad job must not take the node down; the controller's cycles will notice.
            log.exception("error while handling a %s message", kind)
