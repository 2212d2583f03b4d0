"""Celery tasks (each runs one cycle function from cluster.cycles and returns a short string),
and the scheduling loop each Celery worker runs beside its pool.

Passes asked for by events (a submission, a completion) are run by that loop, not by a
task each: a worker thread waits on a Redis list (BLPOP), lets the burst that woke it
gather for FSCHED_SCHED_MIN_INTERVAL, then runs one pass, as embedded mode's cycle thread
does.  A task per pass lost passes: a task whose pass found the lock held (a periodic pass,
or the previous event pass on the worker's other thread) returned "busy" after clearing
the coalescing flag, and the completions that asked for it waited for the next periodic
pass (300 instant jobs as an array: 32 jobs/s against embedded's 151; docs/scaling.md).  The loop waits
for the lock instead.  Every worker of the cluster runs one; the PostgreSQL advisory lock
keeps one pass at a time across machines, and a wake-up is taken by one loop only.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from functools import partial

import redis
from celery import shared_task
from celery.signals import worker_process_init, worker_ready, worker_shutdown
from django.conf import settings
from django.db import close_old_connections, connection

from cluster import cycles, publish

log = logging.getLogger(__name__)
_redis: redis.Redis | None = None


# How long a loop retries a held lock (another loop's pass, or a periodic one) before it
# gives up and leaves the wake-up to the next request or the periodic pass.
_LOCK_PATIENCE = 30.0
# The periodic cycles that are passes, and so share the event passes' lock.
_PASSES = frozenset({"schedule", "backfill"})


def _when_free(run: Callable[[], str]) -> str:
    """``run`` once the pass lock is free, for at most _LOCK_PATIENCE seconds.

    The periodic passes (the whole queue; backfill) share the lock of the event passes,
    which the scheduling loop runs back to back under a stream of submissions: tried once,
    they found it held nearly every time and were skipped (10,000 jobs pending on 200
    nodes, 40 s: no backfill pass at all), leaving every job below the event passes'
    depth to wait. Slurm's backfill thread likewise waits for the locks it shares with the
    main scheduler rather than skipping its turn.
    """
    deadline = time.monotonic() + _LOCK_PATIENCE
    while (result := run()) == "busy" and time.monotonic() < deadline:
        time.sleep(0.005)
    return result


@shared_task(name="fsched.schedule", ignore_result=True)
def schedule() -> str:
    return _when_free(cycles.run_schedule)


@shared_task(name="fsched.event_schedule", ignore_result=True)
def event_schedule() -> str:
    """The quick pass, as a task: for a worker of an earlier release still queueing them."""
    return cycles.run_event_schedule()


@shared_task(name="fsched.backfill", ignore_result=True)
def backfill() -> str:
    return _when_free(cycles.run_backfill)


@shared_task(name="fsched.health", ignore_result=True)
def health() -> str:
    return cycles.run_health()


@shared_task(name="fsched.cycle", ignore_result=True)
def cycle(name: str) -> str:
    """Any cycle of cluster.cycles.periodic() by its name: what beat sends."""
    if name in _PASSES:
        return _when_free(partial(cycles.run_named, name))
    return cycles.run_named(name)


# A list holding at most one element: "a pass is wanted".
WAKE_KEY = "fsched:schedule-wake"
# Seconds a loop blocks in BLPOP before it looks at its stop flag; below redis-py's read timeout.
_WAIT = 1.0


def _client() -> redis.Redis:
    global _redis  # noqa: PLW0603 - one connection pool per process
    if _redis is None:
        _redis = redis.Redis.from_url(settings.REDIS_URL)
    return _redis


def request_schedule_pass() -> None:
    """Wake a scheduling loop: a burst of requests leaves one element, so it costs one pass."""
    with _client().pipeline(transaction=False) as pipe:
        pipe.rpush(WAKE_KEY, 1).ltrim(WAKE_KEY, -1, -1).execute()


class CeleryTriggers:
    """The triggers' backend in distributed mode (installed by cluster.apps): a pass wakes
    a worker's scheduling loop through Redis, a power cycle is a Celery task."""

    def schedule(self) -> None:
        request_schedule_pass()

    def power(self) -> None:
        cycle.delay("power")


class SchedulingLoop:
    """The event-driven passes of one Celery worker, in a thread of its main process."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="fsched-scheduling", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout)

    def _loop(self) -> None:
        from cluster.services import pass_snapshot  # noqa: PLC0415 - keep import light

        # Its passes keep their snapshot between passes, reading the database's log of
        # every process's writes first (cluster/services/change_log.py).
        with pass_snapshot.keep(live=True):
            self._run()

    def _run(self) -> None:
        client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=_WAIT + 10)
        while not self._stop.is_set():
            try:
                if client.blpop([WAKE_KEY], timeout=_WAIT) is None:
                    continue
                # Let the burst that woke us gather (its other requests find the element
                # gone and leave a new one only once we take it), then one pass. Embedded
                # mode's thread also waits as long as its last pass took, so that passes
                # back to back do not take SQLite's one write lock from the completions
                # that feed them; PostgreSQL's completions do not wait on a pass, and a
                # pass here takes 50-170 ms: that wait halved the passes (1000 single jobs
                # from 8 clients: 71-79 jobs/s with it, 86-91 without).
                self._stop.wait(settings.FSCHED_SCHED_MIN_INTERVAL)
                client.delete(WAKE_KEY)
                self._pass()
            except redis.RedisError:
                log.warning("scheduling loop: Redis unreachable, retrying", exc_info=True)
                self._stop.wait(1)
            except Exception:
                log.exception("scheduling loop: pass failed")
            finally:
                close_old_connections()
        connection.close()  # this thread's own, or it outlives the loop

    def _pass(self) -> None:
        deadline = time.monotonic() + _LOCK_PATIENCE
        # A held lock is a pass running now that may have read the queue before the events
        # that woke us: run ours after it, as embedded mode's thread would.
        while cycles.run_event_schedule() == "busy":
            if self._stop.wait(0.005) or time.monotonic() > deadline:
                return


_loop: SchedulingLoop | None = None


def _bind_publishing_loop() -> None:
    """Publish from one event loop of this process's own.

    Without one, every send (a launch per job started) went through async_to_sync: a new
    thread, a new event loop and so new Redis connections for channels_redis, whose pools
    are per loop; that was half of a pass's time in the worker.
    """
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, name="fsched-publish", daemon=True).start()
    publish.bind_server_loop(loop)


@worker_process_init.connect
def _prefork_child(**_: object) -> None:
    if settings.DISTRIBUTED:  # a prefork pool's process runs tasks and so publishes
        _bind_publishing_loop()
        # ... and its periodic passes keep their snapshot, as the loop's do.
        from cluster.services import pass_snapshot  # noqa: PLC0415 - keep import light

        pass_snapshot.keep_live()


@worker_ready.connect
def _start_loop(**_: object) -> None:
    global _loop  # noqa: PLW0603 - one loop per worker
    if _loop is None and settings.DISTRIBUTED:
        _bind_publishing_loop()
        _loop = SchedulingLoop()
        _loop.start()


@worker_shutdown.connect
def _stop_loop(**_: object) -> None:
    global _loop  # noqa: PLW0603
    if _loop is not None:
        _loop.stop()
        _loop = None
