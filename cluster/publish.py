"""Publishing to websockets, always after the database commit.

Two audiences: the console (group ``console``; payloads are small "something changed"
notes, the page re-reads what it shows) and node agents (group ``node.<name>``; commands
such as launch and cancel).  Sending only on commit means a listener never hears of a
change it cannot yet read, and a rolled-back change is never announced.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Callable
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

from cluster import triggers

log = logging.getLogger(__name__)

CONSOLE_GROUP = "console"


def node_group(node: str) -> str:
    return f"node.{node}"


_server_loop: asyncio.AbstractEventLoop | None = None


def bind_server_loop(loop: asyncio.AbstractEventLoop) -> None:
    """The server's event loop, which owns the consumers (and the in-memory layer's queues).

    Sends from worker threads are handed to it without waiting: a channel layer's queues
    must only be touched from that loop, and a service should not block on delivery.
    """
    global _server_loop  # noqa: PLW0603 - one loop per server process
    _server_loop = loop


# An HTTP helper process (config.helpers) has no consumers, cycles or agents: what it would
# publish or ask for is kept here and handed back to the server with the response.
_relay: list[tuple[Any, ...]] | None = None


class _RelayedTriggers:
    """A helper's triggers' backend: the server asks for the passes after the response."""

    def schedule(self) -> None:
        relayed(("schedule",))

    def power(self) -> None:
        relayed(("power",))


def relay_to_server() -> None:
    """This process is an HTTP helper: keep what it publishes for the server."""
    global _relay  # noqa: PLW0603 - one relay per helper process
    _relay = []
    triggers.install(_RelayedTriggers())


def relayed(effect: tuple[Any, ...]) -> bool:
    """Keep ``effect`` for the server when this process is a helper (True), else False."""
    if _relay is None:
        return False
    _relay.append(effect)
    return True


def take_relayed() -> list[tuple[Any, ...]]:
    """What this helper kept since the last call (its request's effects)."""
    effects = list(_relay or ())
    if _relay:
        _relay.clear()
    return effects


def _report(future: concurrent.futures.Future[None]) -> None:
    if future.exception() is not None:
        log.error("publishing failed: %s", future.exception())


def send_now(group: str, message: dict[str, Any]) -> None:
    """Send to a channel-layer group now (not on commit): for what is already committed."""
    if relayed(("send", group, message)):
        return
    layer = get_channel_layer()
    if layer is None:
        return
    loop = _server_loop
    try:
        if loop is not None and loop.is_running():
            asyncio.run_coroutine_threadsafe(layer.group_send(group, message), loop).add_done_callback(
                _report
            )
        else:  # a Celery worker or a management command: no server loop here
            async_to_sync(layer.group_send)(group, message)
    except Exception:  # a dead channel layer must never undo a committed change
        log.exception("publishing to %s failed", group)


def on_commit(group: str, message: dict[str, Any]) -> None:
    transaction.on_commit(lambda: send_now(group, message))


# A page re-reads what it shows on every note: during a burst (hundreds of submissions a
# second) the notes of this window are merged into one per topic set.
CONSOLE_WINDOW = 0.05
_console_lock = threading.Lock()
_console_topics: set[str] = set()
_console_flush_due = False


def _flush_console() -> None:
    global _console_flush_due  # noqa: PLW0603 - one window per server process
    with _console_lock:
        topics = sorted(_console_topics)
        _console_topics.clear()
        _console_flush_due = False
    send_now(CONSOLE_GROUP, {"type": "console.changed", "topics": topics})


def console_note_now(topics: set[str]) -> None:
    global _console_flush_due  # noqa: PLW0603
    if relayed(("console", sorted(topics))):
        return
    loop = _server_loop
    if loop is None or not loop.is_running():
        send_now(CONSOLE_GROUP, {"type": "console.changed", "topics": sorted(topics)})
        return
    with _console_lock:
        _console_topics.update(topics)
        if _console_flush_due:
            return
        _console_flush_due = True
    loop.call_soon_threadsafe(loop.call_later, CONSOLE_WINDOW, _flush_console)


def console_changed(*topics: str) -> None:
    """Tell console pages that these topics (``jobs``, ``nodes``, ...) changed."""
    wanted = set(topics)
    transaction.on_commit(lambda: console_note_now(wanted))


# Who receives the agents' commands when no agent is connected through the channel layer:
# the simulator's virtual agents (simulator/), installed at its start like triggers'.
AgentCommands = Callable[[dict[str, list[dict[str, Any]]]], None]
_agents: AgentCommands | None = None


def install_agents(backend: AgentCommands | None) -> None:
    """From now on, agents' commands (node -> payloads, on commit) go to ``backend``;
    None: back to the channel layer."""
    global _agents  # noqa: PLW0603 - one per process
    _agents = backend


def to_agent(node: str, payload: dict[str, Any]) -> None:
    to_agents([(node, payload)])


def to_agents(commands: list[tuple[str, dict[str, Any]]]) -> None:
    """Commands for agents, sent on commit as one channel-layer message per node, in order:
    a pass that starts sixty jobs on sixteen nodes sends sixteen, not sixty (in distributed
    mode each is a Redis round trip from the worker and a receive in the server holding
    the agent)."""
    by_node: dict[str, list[dict[str, Any]]] = {}
    for node, payload in commands:
        by_node.setdefault(node, []).append(payload)
    backend = _agents
    if backend is not None:
        transaction.on_commit(lambda: backend(by_node))
        return
    for node, payloads in by_node.items():
        on_commit(node_group(node), {"type": "agent.command", "payloads": payloads})
