"""The dashboard's one publisher: a read per cycle, rendered once, sent to every open dashboard.

The other console pages re-fetch their fragments when told something changed, one request
per browser.  The dashboard reads the whole cluster, so a hundred open dashboards would
read it a hundred times on every change.  Instead, each server process runs one publisher
(an asyncio task on its event loop) that:

- listens to the console's change notes like any page (the ``console`` group: it works
  across processes in distributed mode, where Celery workers publish);
- after a note, and at least every ``REFRESH`` seconds, reads the overview once
  (cluster.overview.read_overview, a fixed number of queries), renders
  ``console/_overview.html`` once, and sends that same text to every dashboard socket of
  this process;
- passes come at most every ``MIN_GAP`` seconds: a burst of notes costs one pass.

A dashboard that connects gets the last text at once, without a read.  With no dashboard
open the publisher only wakes to take the trend's sample (cluster.overview.SAMPLE_EVERY),
and it is not in the ``console`` group: every change note of the cluster would otherwise
reach it through the channel layer (Redis, in distributed mode) to be thrown away.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from channels.layers import get_channel_layer
from django.db import close_old_connections
from django.template.loader import render_to_string
from django.utils import timezone

from cluster import overview, publish, visibility
from cluster.services.errors import DATABASE_UNREACHABLE

log = logging.getLogger(__name__)

MIN_GAP = 0.25  # seconds between two passes: a push arrives within half a second of a change
REFRESH = 10.0  # seconds: figures that change without a note (usage, the trend's time axis)
REJOIN = 3600.0  # seconds: the channel layer forgets group members after a day
HEAR_WAIT = 5.0  # seconds: how soon a publisher nobody watches leaves the console group


# slurm.conf's PrivateData words that take parts of the overview away from a viewer: the
# recent events name other users' jobs (jobs), the node panel their nodes (nodes).
PRIVATE_WORDS = ("jobs", "nodes")


def audience(user: Any) -> str:
    """Which text of the overview ``user`` is sent: the PrivateData words that hide parts of
    it from them, comma-separated ("" for the whole overview)."""
    return ",".join(word for word in PRIVATE_WORDS if visibility.hides(user, word))


def context(*, record: bool = False, hidden: str = "") -> dict[str, Any]:
    """What ``console/_overview.html`` shows: one read of the overview."""
    ov = overview.read_overview(now=timezone.now(), record=record)
    return {"ov": ov, "sample_minutes": int(overview.SAMPLE_EVERY.total_seconds() // 60), **_flags(hidden)}


def _flags(hidden: str) -> dict[str, bool]:
    words = set(hidden.split(","))
    return {"hide_jobs": "jobs" in words, "hide_nodes": "nodes" in words}


def render(audiences: frozenset[str] = frozenset({""})) -> dict[str, str]:
    """One read, and one render per audience: the texts the dashboards are sent."""
    close_old_connections()
    try:
        shown = context(record=True)
        texts = {}
        for hidden in audiences:
            html = render_to_string("console/_overview.html", {**shown, **_flags(hidden)})
            texts[hidden] = json.dumps({"type": "overview", "html": html})
    finally:
        close_old_connections()
    return texts


class Publisher:
    """One per server process and event loop."""

    def __init__(self, *, keep_running: bool) -> None:
        self.subscribers: dict[AsyncWebsocketConsumer, str] = {}  # -> its audience
        self.keep_running = keep_running  # started with the server: keeps sampling the trend
        self.latest: dict[str, str] = {}  # audience -> the text it was sent last
        self.passes = 0
        self._dirty = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._listener: asyncio.Task[None] | None = None
        self._last_pass = float("-inf")
        self._reading = False
        self._stale = True  # something changed since ``latest`` was read
        self._watched = asyncio.Event()  # a dashboard is open: hear the change notes
        self.listening = False  # in the console group now (for tests and the curious)
        # Reads in a thread of their own, not the one thread that channels gives every
        # consumer's database calls (the agents' messages would wait behind a read).
        self.executor = ThreadPoolExecutor(1, thread_name_prefix="fsched-overview")

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._run())
        self._listener = asyncio.ensure_future(self._listen())

    def stop(self) -> None:
        for task in (self._task, self._listener):
            if task is not None:
                with contextlib.suppress(RuntimeError):  # its loop is closed already
                    task.cancel()
        self.executor.shutdown(wait=False)

    async def stopped(self) -> None:
        self.stop()
        for task in (self._task, self._listener):
            if task is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    def changed(self) -> None:
        self._stale = True
        self._dirty.set()

    async def subscribe(self, consumer: AsyncWebsocketConsumer, hidden: str = "") -> None:
        self.subscribers[consumer] = hidden
        self._watched.set()
        if hidden in self.latest and not self._stale:
            await consumer.send(text_data=self.latest[hidden])
        elif not self._reading:
            self.changed()  # the first dashboard; one arriving during the first read gets its text

    def unsubscribe(self, consumer: AsyncWebsocketConsumer) -> None:
        self.subscribers.pop(consumer, None)
        if not self.subscribers:
            self._watched.clear()

    async def _listen(self) -> None:
        """The console's change notes, on a channel of the publisher's own, while a
        dashboard is open."""
        layer = get_channel_layer()
        if layer is None:
            return
        channel = await layer.new_channel()
        while True:
            await self._watched.wait()
            await layer.group_add(publish.CONSOLE_GROUP, channel)
            self.listening = True
            try:
                await self._hear(layer, channel)
            finally:
                self.listening = False
                # Notes are not heard from now on: the next dashboard's text is read anew.
                self._stale = True
                with contextlib.suppress(Exception):
                    await layer.group_discard(publish.CONSOLE_GROUP, channel)

    async def _hear(self, layer: Any, channel: str) -> None:
        """Until the last dashboard closes (noticed within ``HEAR_WAIT`` seconds)."""
        joined = time.monotonic()
        while self.subscribers:
            if time.monotonic() - joined > REJOIN:
                await layer.group_add(publish.CONSOLE_GROUP, channel)
                joined = time.monotonic()
            try:
                message = await asyncio.wait_for(layer.receive(channel), timeout=HEAR_WAIT)
            except TimeoutError:
                continue
            if message.get("type") == "console.changed":
                self.changed()

    async def _run(self) -> None:
        try:
            await self._passes()
        finally:
            if self._listener is not None:
                self._listener.cancel()

    async def _passes(self) -> None:
        sample_every = overview.SAMPLE_EVERY.total_seconds()
        loop = asyncio.get_running_loop()
        while True:
            wait = REFRESH if self.subscribers else sample_every
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._dirty.wait(), timeout=wait)
            if not self.subscribers:
                if not self.keep_running:
                    return  # the last dashboard closed: the next one starts another
                if time.monotonic() - self._last_pass < sample_every:
                    self._dirty.clear()
                    continue  # nobody watches and no sample is due
            gap = MIN_GAP - (time.monotonic() - self._last_pass)
            if gap > 0:
                await asyncio.sleep(gap)  # the rest of a burst joins this pass
            self._dirty.clear()
            self._stale = False  # a note from now on asks for the pass after this one
            self._last_pass = time.monotonic()
            self._reading = True
            audiences = frozenset({"", *self.subscribers.values()})
            try:
                texts = await loop.run_in_executor(self.executor, render, audiences)
            except DATABASE_UNREACHABLE as exc:  # a restart or a lock: the next pass tries again
                log.warning("the dashboard's overview could not be read: %s", exc)
                self._stale = True
                continue
            except Exception:
                log.exception("the dashboard's overview could not be read")
                self._stale = True
                continue
            finally:
                self._reading = False
            self.latest = texts
            self.passes += 1
            await self._send(texts)

    async def _send(self, texts: dict[str, str]) -> None:
        sends = [
            consumer.send(text_data=texts[hidden])
            for consumer, hidden in list(self.subscribers.items())
            if hidden in texts
        ]
        results = await asyncio.gather(*sends, return_exceptions=True)
        for result in results:
            if isinstance(result, Exception):  # a socket closing meanwhile: its disconnect unsubscribes it
                log.debug("a dashboard was not sent the overview: %s", result)


_publisher: Publisher | None = None


def publisher(*, keep_running: bool = False) -> Publisher:
    """This process's publisher, started on the running loop when there is none running."""
    global _publisher  # noqa: PLW0603 - one publisher per process
    loop = asyncio.get_running_loop()
    current = _publisher
    alive = current is not None and current._task is not None and not current._task.done()
    if current is None or not alive or current._task.get_loop() is not loop:
        if current is not None:
            current.stop()
        current = _publisher = Publisher(keep_running=keep_running)
        current.start()
    elif keep_running:
        current.keep_running = True
    return current


def start_with_server() -> None:
    """Called once the server's loop runs: the trend is sampled whether or not anyone watches."""
    publisher(keep_running=True)


async def stop() -> None:
    """Stop this process's publisher (the server's shutdown, and tests)."""
    global _publisher
    found, _publisher = _publisher, None
    if found is not None:
        await found.stopped()


class OverviewConsumer(AsyncWebsocketConsumer):
    """``/ws/overview/``: a dashboard.  Logged-in users only; it is sent the publisher's
    text and never reads or writes anything itself."""

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4001)
            return
        hidden = await database_sync_to_async(audience)(user)
        await self.accept()
        self._publisher = publisher()
        await self._publisher.subscribe(self, hidden)

    async def disconnect(self, code: int) -> None:
        found = getattr(self, "_publisher", None)
        if found is not None:
            found.unsubscribe(self)

    async def receive(
        self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any
    ) -> None:
        pass  # the dashboard only listens
