"""Running the cycles: one list of periodic jobs, two ways to run them.

Embedded: a thread of the server process wakes on ``triggers.request_schedule()`` (submit,
completion) or every FSCHED_SCHED_INTERVAL seconds; it is the triggers' backend there.
Distributed: Celery beat runs the same functions from :func:`periodic`; the triggers wake the
scheduling loop of a Celery worker (cluster.tasks), coalesced so a burst of completions
costs one pass, and a database lock keeps two passes from overlapping, on any machine.

Each cycle is also a row an administrator edits (interval, enabled): the cycles app keeps
django-celery-beat's PeriodicTask rows, which beat's DatabaseScheduler reads, and installs
itself here (:func:`install_rows`) so that the embedded thread reads the same rows and
every run is recorded on its row.  Without it (the app not installed) the intervals of
:func:`periodic` apply.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Protocol

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError, close_old_connections, connection, transaction

from cluster import clock, extensions, triggers

if TYPE_CHECKING:
    from cluster.services.scheduling import PassSummary

log = logging.getLogger(__name__)

# Stable 64-bit keys for PostgreSQL advisory locks (backfill shares "schedule's").  An
# extension's cycle gets one from its name; power's and usage's keep those of the releases
# before the extensions, so that a rolling upgrade never runs one twice at once.
_LOCK_KEYS = {"schedule": 0x5C4ED001, "health": 0x5C4ED002, "power": 0x5C4ED003, "usage": 0x5C4ED004}
_local_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def lock_key(name: str) -> int:
    return _LOCK_KEYS.get(name) or 0x5C4E_0000_0000 | zlib.crc32(name.encode())


@contextlib.contextmanager
def cycle_lock(name: str) -> Iterator[bool]:
    """Yields whether this process got the lock; never waits (a busy lock means a pass is running)."""
    with _locks_guard:
        local = _local_locks.setdefault(name, threading.Lock())
    if not local.acquire(blocking=False):
        yield False
        return
    try:
        if connection.vendor != "postgresql":
            yield True  # SQLite means one controller process: the thread lock is enough
            return
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [lock_key(name)])
                got = cursor.fetchone()[0]
            yield got
    finally:
        local.release()


def run_schedule(*, backfill: bool = False, queue_depth: int | None = None) -> str:
    """A scheduler pass over every pending job (Slurm's main scheduling loop, sched_interval)."""
    from cluster.services.scheduling import schedule_pass  # noqa: PLC0415 - keep import light

    with cycle_lock("schedule") as got:
        if not got:
            return "busy"
        start = time.perf_counter()
        summary = schedule_pass(backfill=backfill, queue_depth=queue_depth)
        elapsed = (time.perf_counter() - start) * 1000
        _record(summary, elapsed, backfill=backfill)
    text = f"pending={summary.pending} started={summary.started} timeouts={summary.timeouts}"
    log.debug("%s pass: %s in %.1f ms", "backfill" if backfill else "main", text, elapsed)
    return text


def _record(summary: PassSummary, elapsed_ms: float, *, backfill: bool) -> None:
    """The pass in sdiag's counters: one UPDATE, in a savepoint so that a failure to count
    (a busy SQLite) never undoes the pass it counts (on PostgreSQL both are in the
    transaction of the pass lock)."""
    from cluster.services import diagnostics  # noqa: PLC0415 - keep import light

    figures = diagnostics.PassFigures(
        elapsed_us=round(elapsed_ms * 1000),
        depth=summary.pending,
        backfilled=summary.backfilled,
        tried=summary.bf_tested,
    )
    try:
        with transaction.atomic():
            diagnostics.record_pass(figures, backfill=backfill)
    except DatabaseError as exc:
        log.warning("sdiag counters not updated for this pass: %s", exc)


def run_backfill() -> str:
    """A backfill pass: the whole queue planned, started early what delays no job (bf_interval)."""
    return run_schedule(backfill=True)


def run_event_schedule() -> str:
    """The quick pass after a submission or a completion: the head of each queue only."""
    from cluster.services.scheduler_params import event_queue_depth  # noqa: PLC0415 - keep import light

    return run_schedule(queue_depth=event_queue_depth())


def run_health() -> str:
    """Nodes not heard from, then launches and cancels their agents never answered."""

    from cluster import job_mail, liveness  # noqa: PLC0415
    from cluster.services.allocations import expire_holders  # noqa: PLC0415
    from cluster.services.launch_watch import launch_watch_pass  # noqa: PLC0415
    from cluster.services.reboots import reboot_pass  # noqa: PLC0415
    from cluster.services.scheduling import health_pass  # noqa: PLC0415

    with cycle_lock("health") as got:
        if not got:
            return "busy"
        now = clock.now()
        downed = health_pass(now=now, heard_since=liveness.heard_since(), received=liveness.last_received())
        expire_holders(now=now)  # allocations whose salloc/srun went silent
        watched = launch_watch_pass(now=now)
        # scontrol reboot: issued once a node is idle, DOWN after ResumeTimeout without it.
        with transaction.atomic():
            rebooted = reboot_pass(now=now)
        mailed = job_mail.time_limit_pass(now=now)  # --mail-type=TIME_LIMIT_90/80/50
    tail = (f" rebooted={len(rebooted)}" if rebooted else "") + (f" mailed={mailed}" if mailed else "")
    return f"down={len(downed)} {watched}{tail}"


def run_cycle(cycle: extensions.Cycle) -> str:
    """An extension's cycle, one process of the cluster at a time."""
    with cycle_lock(cycle.name) as got:
        if not got:
            return "busy"
        return cycle.run()


def cycle_specs() -> list[extensions.Cycle]:
    """Every periodic cycle with where its default interval is set: the core's, then the
    extensions'.  The scheduler's and backfill's follow slurm.conf's SchedulerParameters
    (sched_interval, bf_interval) when it sets them."""
    out = [
        extensions.Cycle(
            "schedule",
            run_schedule,
            settings.FSCHED_SCHED_INTERVAL,
            setting="FSCHED_SCHED_INTERVAL",
            slurm_parameter="SchedulerParameters=sched_interval",
        ),
        extensions.Cycle(
            "backfill",
            run_backfill,
            settings.FSCHED_BACKFILL_INTERVAL,
            setting="FSCHED_BACKFILL_INTERVAL",
            slurm_parameter="SchedulerParameters=bf_interval",
        ),
        extensions.Cycle(
            "health", run_health, settings.FSCHED_HEALTH_INTERVAL, setting="FSCHED_HEALTH_INTERVAL"
        ),
    ]
    names = {c.name for c in out}
    for cycle in extensions.cycles():
        if cycle.name in names:
            raise ImproperlyConfigured(f"two cycles are named {cycle.name!r}")
        names.add(cycle.name)
        out.append(cycle)
    return out


_CORE = frozenset({"schedule", "backfill", "health"})


def periodic() -> dict[str, tuple[Callable[[], str], float]]:
    """name → (function, default interval in seconds): the core's cycles, then the
    extensions'.  Celery beat and the embedded thread both run these (at the intervals
    of their rows when the cycles app keeps them)."""
    return {c.name: (c.run if c.name in _CORE else partial(run_cycle, c), c.interval) for c in cycle_specs()}


class CycleRows(Protocol):
    """The cycles' rows (the cycles app): what the administrator set, and each run's outcome."""

    def plan(self) -> Mapping[str, tuple[float, bool]]:
        """name → (interval in seconds, enabled), cheap when nothing changed."""

    def record(self, name: str, *, started: datetime, seconds: float, result: str) -> None:
        """One run of the cycle ``name`` and what it returned."""

    def sync(self) -> None:
        """A row for every cycle of :func:`cycle_specs`, defaults from slurm.conf and the settings."""


_rows: CycleRows | None = None


def install_rows(rows: CycleRows | None) -> None:
    global _rows  # noqa: PLW0603 - one source of rows per process
    _rows = rows


# What a run answers when it did nothing: not recorded as a run on the row.
_NOT_RUNS = frozenset({"busy", "not due", "unknown"})


def run_recorded(name: str, func: Callable[[], str]) -> str:
    """Run one cycle and record it on its row (last run, duration, result)."""
    started = clock.now()
    t0 = time.perf_counter()
    try:
        result = func()
    except Exception as exc:
        _record_run(name, started, time.perf_counter() - t0, f"failed: {type(exc).__name__}: {exc}")
        raise
    if result not in _NOT_RUNS:
        _record_run(name, started, time.perf_counter() - t0, result)
    return result


def _record_run(name: str, started: datetime, seconds: float, result: str) -> None:
    rows = _rows
    if rows is None:
        return
    try:
        rows.record(name, started=started, seconds=seconds, result=result)
    except DatabaseError as exc:
        # A busy database must not turn a pass that ran into a failed one.
        log.warning("cycle %s: its row not updated: %s", name, exc)


def interval_in_force(name: str) -> float:
    """The interval of the cycle ``name`` now: its row's (an admin's edit), else its default.
    For a cycle whose decisions depend on how often it runs (load's "one check interval")."""
    rows = _rows
    if rows is not None:
        try:
            found = rows.plan().get(name)
        except DatabaseError as exc:
            log.warning("cycle %s: its row unreadable, its default used: %s", name, exc)
            found = None
        if found is not None:
            return found[0]
    return periodic()[name][1]


def sync_rows() -> None:
    """Bring the cycles' rows up to date (at a start: an extension added, a setting changed)."""
    rows = _rows
    if rows is None:
        return
    try:
        rows.sync()
    except DatabaseError as exc:
        log.warning("cycles' rows not synchronised: %s", exc)


def run_named(name: str) -> str:
    """The cycle ``name`` once (the Celery task of beat's entries)."""
    found = periodic().get(name)
    if found is None:
        log.warning("no cycle named %r: ignored", name)
        return "unknown"
    return run_recorded(name, found[0])


# How often the embedded thread looks whether the rows changed (one indexed read of
# django-celery-beat's change marker): an edit in the admin is in force within this.
ROWS_POLL = 1.0


class EmbeddedCycles:
    """The cycles in a thread of the server process (embedded mode)."""

    def __init__(self) -> None:
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_plan: Mapping[str, tuple[float, bool]] = {}
        self._plan_read_at = -ROWS_POLL

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="fsched-cycles", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread:
            self._thread.join(timeout)

    def kick(self) -> None:
        self._wake.set()

    # The triggers' backend (cluster.triggers): every request wakes the thread, which runs
    # the scheduler pass at once and each other cycle when it is due.
    schedule = kick
    power = kick

    def _plan(self, cycles: Mapping[str, tuple[Callable[[], str], float]]) -> dict[str, tuple[float, bool]]:
        """name → (interval, enabled): the rows', else the defaults of :func:`periodic`.
        The rows are looked at once per ROWS_POLL, not at every pass a burst of events wakes."""
        rows = _rows
        now = time.monotonic()
        if rows is not None and now - self._plan_read_at >= ROWS_POLL:
            self._plan_read_at = now
            try:
                self._last_plan = rows.plan()
            except DatabaseError as exc:
                log.warning("cycles' rows unreadable, their last values kept: %s", exc)
        plan = {name: (interval, True) for name, (_, interval) in cycles.items()}
        plan.update((name, value) for name, value in self._last_plan.items() if name in plan)
        return plan

    def _loop(self) -> None:
        # The pass keeps its snapshot between passes where the database logs every
        # process's writes (an SQLite file); elsewhere this keeps nothing.
        from cluster.services import pass_snapshot  # noqa: PLC0415 - keep import light

        with pass_snapshot.keep(live=True):
            self._run()

    def _run(self) -> None:
        cycles = periodic()
        sync_rows()
        last: dict[str, float] = {}
        spent = 0.0  # seconds the last event-driven pass took
        while not self._stop.is_set():
            if self._wake.is_set():
                # Let the burst that woke us finish (the request that kicked us answers
                # first, completions arriving together are handled together), then one pass.
                # Waiting at least as long as the last pass took keeps passes to about half
                # of the process's time under a steady stream of events: the other half
                # goes to the submissions and completions that feed them (measured, 1,000
                # single jobs from 8 clients: passes back to back took 55% of the GIL).
                self._stop.wait(max(settings.FSCHED_SCHED_MIN_INTERVAL, spent))
            plan = self._plan(cycles)
            now = time.monotonic()
            kicked = self._wake.is_set()
            self._wake.clear()
            for name, (func, _default) in cycles.items():
                interval, enabled = plan[name]
                # A disabled row stops the periodic runs only: a submission or a completion
                # still asks for a pass (Slurm's sched_interval=-1 leaves those too).
                due = enabled and now - last.get(name, 0) >= interval
                if due or (name == "schedule" and kicked):
                    if due:
                        last[name] = now
                    started = time.monotonic()
                    try:
                        run_recorded(name, func) if due else run_event_schedule()
                    except Exception:
                        log.exception("cycle %s failed", name)
                    finally:
                        close_old_connections()
                    if not due:
                        spent = time.monotonic() - started
            # Coalesce bursts: many kicks during a pass cause one more pass, not many.
            # Wake for the next cycle due, and at least every ROWS_POLL for the rows.
            waits = [interval for interval, enabled in plan.values() if enabled]
            self._wake.wait(timeout=min([ROWS_POLL, *waits]))


_embedded: EmbeddedCycles | None = None


def start_embedded() -> EmbeddedCycles:
    global _embedded  # noqa: PLW0603 - one cycle thread per process
    if _embedded is None:
        _embedded = EmbeddedCycles()
        _embedded.start()
        triggers.install(_embedded)
    return _embedded


def stop_embedded() -> None:
    global _embedded  # noqa: PLW0603
    if _embedded is not None:
        triggers.uninstall(_embedded)
        _embedded.stop()
        _embedded = None
