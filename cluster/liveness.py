"""Since when the controller could hear its agents: the start of SlurmdTimeout's count.

A node is marked DOWN when its agent has been silent for SlurmdTimeout. But an agent is
silent too while no server process listens: the server crashed, or is being upgraded. In
distributed mode the health pass runs in Celery meanwhile. In embedded mode it runs again
as soon as the server is back, before the agents have reconnected. Either way, the
controller's own outage took every node DOWN and requeued or killed every running job.
slurmctld does not do that: it cannot ping while it is down, and on restart it counts
from its own start.

So silence counts from the later of the node's last contact and ``heard_since()``: the
start of the oldest server process listening now. None means no server process listens
(or, in distributed mode, Redis cannot say): nobody could have heard the agents, so
there is no verdict.

- Embedded mode has one server process, the one running the health pass:
  ``listening()`` at its start records the moment in memory.
- Distributed mode: each server process keeps a key in Redis,
  ``fsched:listening:<host>:<pid>:<random>``. Its value is the process's start, and it
  expires after ``3 * BEAT`` seconds unless renewed every ``BEAT``. A process killed
  outright stops counting within that time, and one stopped in order at once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime

from django.conf import settings

log = logging.getLogger(__name__)

PREFIX = "fsched:listening:"
BEAT = 5.0  # seconds, the agents' heartbeat
TTL = int(3 * BEAT)

_since: float | None = None  # this process's start of listening (epoch seconds)
_beat: _Beat | None = None
_reader = None  # the health pass's Redis client, made once per process


def _client():  # redis is imported in distributed mode only
    import redis  # noqa: PLC0415

    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=BEAT, socket_connect_timeout=BEAT)


class _Beat:
    """The thread renewing this server process's key in Redis."""

    def __init__(self, since: float) -> None:
        self.key = f"{PREFIX}{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self.since = since
        self.client = _client()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fsched-listening", daemon=True)

    def start(self) -> None:
        self._renew()
        self._thread.start()

    def _renew(self) -> None:
        try:
            self.client.set(self.key, repr(self.since), ex=TTL)
        except Exception as exc:  # Redis restarting: the next beat tries again
            log.warning("cannot say this server listens (%s: %s)", type(exc).__name__, exc)

    def _run(self) -> None:
        while not self._stop.wait(BEAT):
            self._renew()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(BEAT + 1)
        with contextlib.suppress(Exception):  # it expires by itself
            self.client.delete(self.key)


def listening(*, now: float | None = None) -> None:
    """This server process listens to agents from now on (its start-up is done)."""
    global _since, _beat  # noqa: PLW0603 - one server per process
    _since = time.time() if now is None else now
    if settings.DISTRIBUTED and _beat is None:
        _beat = _Beat(_since)
        _beat.start()


def stopped() -> None:
    """This server process no longer listens (it is shutting down)."""
    global _since, _beat  # noqa: PLW0603
    _since = None
    if _beat is not None:
        _beat.stop()
        _beat = None


def heard_since() -> datetime | None:
    """The start of the oldest server process listening now; None if there is none."""
    if not settings.DISTRIBUTED:
        return None if _since is None else datetime.fromtimestamp(_since, UTC)
    global _reader  # noqa: PLW0603
    import redis  # noqa: PLC0415

    try:
        _reader = _reader or _client()
        keys = list(_reader.scan_iter(match=f"{PREFIX}*", count=100))
        values = _reader.mget(keys) if keys else []
    except redis.RedisError as exc:
        log.warning("cannot tell which servers listen (%s): no node verdicts this pass", exc)
        return None
    starts = []
    for value in values:
        try:
            starts.append(float(value))
        except (TypeError, ValueError):
            continue  # expired between the scan and the read, or not ours
    return datetime.fromtimestamp(min(starts), UTC) if starts else None


# When this process last read a frame from each connected agent: its nodes were heard
# then, though the message may wait (the connection's inbox, the database thread busy
# with other agents' registrations) before it is handled and their last contact written.
# Slurm's SlurmdTimeout counts from the last message the controller received, so the
# server's own backlog must not make a node NOT_RESPONDING. connection -> (nodes, epoch).
_received: dict[int, tuple[Sequence[str], float]] = {}


def received(connection: int, nodes: Sequence[str], *, at: float | None = None) -> None:
    """A frame from the agent of ``nodes`` was read on ``connection`` (now, or ``at``)."""
    _received[connection] = (nodes, time.time() if at is None else at)


def gone(connection: int) -> None:
    _received.pop(connection, None)


def last_received() -> dict[str, datetime]:
    """Node -> when this process last read a frame from its agent (connected ones only)."""
    heard: dict[str, float] = {}
    for nodes, at in list(_received.values()):  # a copy: the server's loop adds meanwhile
        for node in nodes:
            if heard.get(node, 0.0) < at:
                heard[node] = at
    return {node: datetime.fromtimestamp(at, UTC) for node, at in heard.items()}
