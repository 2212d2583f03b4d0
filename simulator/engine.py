"""The simulator's engine: the live controller's services on a virtual clock.

Nothing here decides what the cluster does: submissions go through the live submit service,
passes are the live passes (cluster.cycles), power programs are the power extension's, and
node and job state is what the live services wrote to the store. The engine only plays the
world around the controller: the clock (cluster.clock), the agents (cluster.publish's agent
backend, simulator.world), the power programs' effect on the nodes, the load trace, and
when each cycle runs. The clock jumps from event to event: nothing sleeps.
"""

from __future__ import annotations

import heapq
import itertools
import json
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from auditlog.context import disable_auditlog
from django.conf import settings

from cluster import clock, collector, cycles, publish, triggers
from cluster.services import pass_snapshot
from cluster.services.errors import ServiceError
from simulator import observe, world
from simulator.records import SimJob

log = logging.getLogger(__name__)

# The virtual clock's t=0: a fixed instant, so that two runs of one workload write the same
# log (2026-01-01T00:00:00Z).
START_EPOCH = 1_767_225_600.0
# An event-driven pass at most once per virtual second (Slurm's sched_min_interval idea:
# a burst of submissions and completions costs one pass).
PASS_MIN_INTERVAL = 1.0
# The cycles the simulator does not run, and why: the health cycle looks for agents that
# went silent and launches nobody answered; a simulated agent answers at once and is never
# lost, so it would only read the store.
SKIPPED_CYCLES = frozenset({"health"})
# Live, the "power" cycle polls every FSCHED_POWER_INTERVAL whether node states changed
# (the power extension's dirty mark) and acts when power_save_min_interval allows. Polling
# a quiet cluster every virtual second would cost most of a simulation, so it is polled only
# from a request (cluster.triggers.request_power) until the mark is cleared: the same calls
# whenever the live poll would do anything.
POLLED_ON_REQUEST = "power"
# A workload whose last jobs can never run (a dependency never satisfied, a request no
# node fits) would keep a live controller passing for ever: the simulation stops once
# nothing but the cycles is left to happen and nothing changed for this long (virtual
# seconds, at least three runs of the slowest cycle).
IDLE_STOP = 600.0
# Order of events at one instant: what ends comes before what starts, so that a pass at
# that instant sees the freed nodes (as a live completion arrives before the pass it asks for).
_ORDER = {"complete": 0, "boot": 1, "load": 2, "submit": 3, "cycle": 4, "poll": 5, "limit": 6, "pass": 6}

_CYCLES = frozenset({"cycle", "poll"})


class SimulationError(Exception):
    """The configuration or the workload cannot be simulated: the message says which and why."""


@dataclass
class Summary:
    jobs: int
    simulated_seconds: float
    wall_seconds: float


@dataclass(order=True)
class _Event:
    t: float
    order: int
    seq: int
    kind: str = field(compare=False)
    data: Any = field(compare=False, default=None)


class Engine:
    """One simulation: ``run()`` once."""

    def __init__(
        self,
        *,
        conf_dir: Path,
        jobs: Sequence[SimJob],
        out_dir: Path,
        workload_name: str = "",
        until: float | None = None,
        progress: Path | None = None,
        load_trace: Path | None = None,
        start_epoch: float = START_EPOCH,
    ) -> None:
        self.conf_dir = conf_dir
        self.jobs = list(jobs)
        self.out_dir = out_dir
        self.workload_name = workload_name
        self.until = until
        self.progress_path = progress
        self.load_trace = load_trace
        self.start = datetime.fromtimestamp(start_epoch, UTC)
        self.start_epoch = start_epoch
        self.t = 0.0
        self._heap: list[_Event] = []
        self._seq = itertools.count()
        self._want_pass = False
        self._want_power = False
        self._polling = False
        self._poll: tuple[Callable[[], str], float] | None = None
        self._slowest_cycle = 0.0
        self._world_events = 0  # events in the queue that are not cycles
        self._pass_queued_at: float | None = None
        self._last_event_pass = -PASS_MIN_INTERVAL
        self._inbox: list[tuple[str, list[dict[str, Any]]]] = []
        self.by_fsched: dict[int, SimJob] = {}
        self.fsched_of: dict[int, int] = {}
        self.ended = 0
        self.total = len(self.jobs)
        self._progress_written = 0.0
        self.log: observe.EventLog | None = None
        self.agents: world.Agents | None = None
        self.cycle_runs: dict[str, int] = {}
        self._users: dict[str, Any] = {}

    # -- the controller's pluggable leaves ---------------------------------------------

    def now(self) -> datetime:
        """The virtual clock (cluster.clock's backend)."""
        return self.start + timedelta(seconds=self.t)

    def schedule(self) -> None:
        """A service asked for a pass (cluster.triggers' backend): one, coalesced, soon."""
        self._want_pass = True

    def power(self) -> None:
        """A service asked for a power-save cycle sooner (node states changed)."""
        self._want_power = True

    def _commands(self, by_node: dict[str, list[dict[str, Any]]]) -> None:
        """cluster.publish's agent backend: what the controller sent, handled after the
        event that caused it (never inside another service's commit)."""
        self._inbox.extend(by_node.items())

    # -- the queue ----------------------------------------------------------------------

    def push(self, t: float, kind: str, data: Any = None) -> None:
        heapq.heappush(self._heap, _Event(t, _ORDER[kind], next(self._seq), kind, data))
        if kind not in _CYCLES:
            self._world_events += 1

    # -- running ------------------------------------------------------------------------

    def run(self) -> Summary:
        # django-auditlog records the changes people make to nodes and partitions; a
        # simulation has no people, nothing reads those rows, and each node save cost an
        # extra read and an insert (profiled at 10,000 nodes: 50 of the first 180 s).
        # Every writer of the store is in this process: the passes keep their snapshot's
        # nodes and holding jobs between passes (cluster.services.pass_snapshot).
        # The garbage collector as the server's workers run it (cluster.collector).
        with disable_auditlog(), pass_snapshot.keep(), collector.tuned():
            return self._run()

    def _run(self) -> Summary:
        wall = time.perf_counter()
        clock.install(self.now)
        triggers.install(self)
        publish.install_agents(self._commands)
        self.agents = world.Agents(self)
        self.agents.install()
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.log = observe.EventLog(self.out_dir / "events.jsonl", self)
        try:
            self._configure()
            self.log.watch_nodes()
            self.log.meta()
            self.agents.register_all()
            self._queue_start()
            # The registrations' requests (a pass, a power cycle) and the nodes they made
            # idle belong to t=0, not to whatever event comes first (which was the
            # maintenance cycle's at t=2 while it ran here).
            self._settle()
            self.log.observe()
            self._loop()
            wall_seconds = time.perf_counter() - wall
            self.log.write(
                "done",
                jobs=self.total,
                simulated_seconds=round(self.t, 3),
                wall_seconds=round(wall_seconds, 3),
            )
            self._write_progress(force=True)
            return Summary(self.total, self.t, wall_seconds)
        finally:
            self.log.unwatch_nodes()
            self.log.close()
            self.agents.uninstall()
            publish.install_agents(None)
            triggers.uninstall(self)
            clock.uninstall()

    def _configure(self) -> None:
        """The configuration directory as the controller loads it at start, then the
        accounting dump (sacctmgr load), then the workload's users."""
        from django.contrib.auth import get_user_model  # noqa: PLC0415

        from cluster.services.configuration import config_load  # noqa: PLC0415
        from limits.dump import load_text  # noqa: PLC0415

        settings.CONF_DIR = self.conf_dir
        try:
            config_load(path=self.conf_dir / "slurm.conf")
        except ServiceError as exc:
            raise SimulationError(f"--conf {self.conf_dir}: {exc}") from exc
        dump = self.conf_dir / "accounts.cfg"
        if dump.is_file():
            try:
                load_text(actor=None, text=dump.read_text(encoding="utf-8"))
            except ServiceError as exc:
                raise SimulationError(f"{dump}: {exc}") from exc
        model = get_user_model()
        wanted = {j.user for j in self.jobs}
        existing = set(model.objects.values_list("username", flat=True))
        for name in sorted(wanted - existing):
            model.objects.create_user(name)
        # Read once: nothing changes a user during a simulation (a read a submission saved).
        self._users = {u.get_username(): u for u in model.objects.filter(username__in=sorted(wanted))}

    def _queue_start(self) -> None:
        for job in sorted(self.jobs, key=lambda j: (j.submit, j.job_id)):
            self.push(job.submit, "submit", job)
        skipped = SKIPPED_CYCLES | _idle_cycles()
        for name, (func, _interval) in cycles.periodic().items():
            if name in skipped:
                continue
            interval = cycles.interval_in_force(name)
            if name == POLLED_ON_REQUEST:
                self._poll = (func, interval)
                self._want_power = True  # the first run after the start, as live
                continue
            if interval > 0:
                self.push(interval, "cycle", (name, func, interval))
                self._slowest_cycle = max(self._slowest_cycle, interval)
        if self.load_trace is not None:
            try:
                for t, payload in world.read_load_trace(self.load_trace):
                    self.push(t, "load", payload)
            except (OSError, ValueError) as exc:
                raise SimulationError(f"--load-trace: {exc}") from exc

    def _finished(self) -> bool:
        if self.ended >= self.total:
            return True
        if self.agents.running or self.agents.booting:
            return False
        if self._world_events:
            return False
        return self.t - self.log.last_change > max(IDLE_STOP, 3 * self._slowest_cycle)

    def _loop(self) -> None:
        while self._heap and not self._finished():
            event = heapq.heappop(self._heap)
            if event.kind not in _CYCLES:
                self._world_events -= 1
            if self.until is not None and event.t > self.until:
                self.t = self.until
                break
            self.t = max(self.t, event.t)
            self._handle(event)
            self._settle()
            if not self._heap or self._heap[0].t > self.t:
                # The instant is over: what it changed, once.
                self.log.observe()
                self._write_progress()

    def _settle(self) -> None:
        """The agents' answers to what the event made the controller send, and the passes
        it asked for, until nothing more happens at this instant."""
        while self._inbox:
            inbox, self._inbox = self._inbox, []
            for node, payloads in inbox:
                self.agents.receive(node, payloads)
        if self._want_power:
            self._want_power = False
            if self._poll is not None and not self._polling:
                self._polling = True
                self.push(self.t, "poll")
        if self._want_pass:
            self._want_pass = False
            at = max(self.t, self._last_event_pass + PASS_MIN_INTERVAL)
            if self._pass_queued_at is None or self._pass_queued_at > at:
                self._pass_queued_at = at
                self.push(at, "pass")

    def _handle(self, event: _Event) -> None:
        kind = event.kind
        if kind == "submit":
            self._submit(event.data)
        elif kind == "complete":
            self.agents.complete(*event.data)
        elif kind == "boot":
            self.agents.boot(event.data)
        elif kind == "load":
            self.agents.heartbeat(event.data)
        elif kind == "pass":
            if self._pass_queued_at is not None and event.t < self._pass_queued_at:
                return  # superseded by a later coalesced one
            self._pass_queued_at = None
            self._last_event_pass = self.t
            self._run_cycle("event pass", _event_pass)
        elif kind == "limit":
            self._run_cycle("time limit pass", _event_pass)
        elif kind == "poll" and self._poll is not None:
            func, interval = self._poll
            result = func()
            self.cycle_runs[POLLED_ON_REQUEST] = self.cycle_runs.get(POLLED_ON_REQUEST, 0) + 1
            if result == "not due" and not _power_dirty():
                self._polling = False
            else:
                self.push(self.t + interval, "poll")
        elif kind == "cycle":
            name, func, interval = event.data
            self._run_cycle(name, _PASSES.get(name, func))
            self.push(self.t + interval, "cycle", event.data)

    def _run_cycle(self, name: str, func: Callable[[], str]) -> None:
        self.cycle_runs[name] = self.cycle_runs.get(name, 0) + 1
        func()
        if name in _PASS_NAMES:
            self.log.reasons_dirty = True

    # -- submissions --------------------------------------------------------------------

    def _submit(self, job: SimJob) -> None:
        from cluster.services.jobs import job_submit  # noqa: PLC0415

        user = self._users[job.user]
        try:
            submitted = job_submit(user=user, spec=self.spec_of(job))
        except ServiceError as exc:
            self.ended += 1
            self.log.write("reject", job=job.job_id, error=sbatch_error(exc))
            return
        fsched_id = submitted.job_ids[0]
        self.by_fsched[fsched_id] = job
        self.log.reasons_dirty = True
        self.fsched_of[job.job_id] = fsched_id
        self.log.submitted(job, fsched_id)

    def spec_of(self, job: SimJob) -> dict[str, Any]:
        """The sbatch request of a workload job, as the API receives it."""
        spec: dict[str, Any] = {
            "wrap": "true",
            "work_dir": "/tmp",  # noqa: S108 - a simulated job's working directory is never used
            "nodes": str(job.nodes),
            "ntasks": job.ntasks,
            "cpus_per_task": job.cpus_per_task,
        }
        for key, value in (
            ("partition", job.partition),
            ("account", job.account),
            ("qos", job.qos),
            ("licenses", job.licenses),
            ("name", job.name),
        ):
            if value:
                spec[key] = value
        if job.mem_mb:
            spec["mem"] = f"{job.mem_mb}M"
        if job.time_limit is not None:
            spec["time"] = str(job.time_limit)
        if job.dependency:
            spec["dependency"] = translate_dependency(job.dependency, self.fsched_of)
        return spec

    # -- what the agents report ---------------------------------------------------------

    def job_ended(self, fsched_id: int) -> None:
        if fsched_id in self.by_fsched:
            self.ended += 1

    def _write_progress(self, *, force: bool = False) -> None:
        if self.progress_path is None:
            return
        wall = time.monotonic()
        if not force and wall - self._progress_written < 1.0:
            return
        self._progress_written = wall
        tmp = self.progress_path.with_name(self.progress_path.name + ".tmp")
        tmp.write_text(json.dumps({"done": self.ended, "total": self.total, "t": round(self.t, 3)}))
        tmp.replace(self.progress_path)


# The passes are the live ones (cluster.services.scheduling.schedule_pass, as
# cluster.cycles runs them) without the bookkeeping around them that only an operator reads:
# sdiag's counters (diagnostics.record_pass) and each cycle's row (cycles' CycleStatus).
# Profiled, those two took a fifth of a simulation; they decide nothing.
def _event_pass() -> str:
    from cluster.services.scheduler_params import event_queue_depth  # noqa: PLC0415
    from cluster.services.scheduling import schedule_pass  # noqa: PLC0415

    schedule_pass(backfill=False, queue_depth=event_queue_depth())
    return "ran"


def _main_pass() -> str:
    from cluster.services.scheduling import schedule_pass  # noqa: PLC0415

    schedule_pass(backfill=False)
    return "ran"


def _backfill_pass() -> str:
    from cluster.services.scheduling import schedule_pass  # noqa: PLC0415

    schedule_pass(backfill=True)
    return "ran"


_PASSES: dict[str, Callable[[], str]] = {"schedule": _main_pass, "backfill": _backfill_pass}
_PASS_NAMES = frozenset({"schedule", "backfill", "event pass", "time limit pass"})


def _idle_cycles() -> frozenset[str]:
    """Cycles that can change nothing in this simulation. The maintenance cycle flags the
    nodes of MAINT reservations as they begin and end: a simulation's store is fresh and
    nothing in it creates a reservation after the start (no one calls scontrol), so with
    none at the start it would only read the store every FSCHED_HEALTH_INTERVAL (profiled:
    a tenth of a 300-job simulation)."""
    from cluster.models import Reservation  # noqa: PLC0415

    return frozenset() if Reservation.objects.exists() else frozenset({"maintenance"})


def _power_dirty() -> bool:
    from cluster.services import rows  # noqa: PLC0415
    from power.models import PowerState  # noqa: PLC0415

    found = rows.select(PowerState, ("dirty",), {"pk": 1})
    return bool(found and found[0][0])


def sbatch_error(exc: ServiceError) -> str:
    """What sbatch prints for a refused submission (one "sbatch: error: " per line)."""
    lines = [
        *(exc.err_msg.splitlines() if getattr(exc, "err_msg", "") else ()),
        f"Batch job submission failed: {exc}",
    ]
    return "\n".join(f"sbatch: error: {line}" for line in lines)


def translate_dependency(text: str, fsched_of: dict[int, int]) -> str:
    """``afterok:12:13,after:7+5`` naming workload job numbers → the same naming fsched ids.
    A number the workload never submitted (or that was refused) is left as it is: the live
    submit service refuses it as sbatch would."""
    out = []
    for sep_part in _split_keep(text, ",?"):
        if sep_part in {",", "?"}:
            out.append(sep_part)
            continue
        kind, colon, rest = sep_part.partition(":")
        if not colon:
            out.append(sep_part)
            continue
        ids = []
        for item in rest.split(":"):
            number, plus, delay = item.partition("+")
            if number.isdigit() and int(number) in fsched_of:
                number = str(fsched_of[int(number)])
            ids.append(number + plus + delay)
        out.append(kind + ":" + ":".join(ids))
    return "".join(out)


def _split_keep(text: str, separators: str) -> Iterable[str]:
    part = ""
    for ch in text:
        if ch in separators:
            yield part
            yield ch
            part = ""
        else:
            part += ch
    yield part
