"""The world around the simulated controller: node agents, power programs, a load trace.

Each plays the part of something outside the controller and speaks to it only through the
live services an agent or a program reaches (agent_register, jobs_started,
jobs_completed, agent_ping, the prolog/epilog answers, a power run's exit): what the
controller decides from it is the live code's.
"""

from __future__ import annotations

import csv
import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cluster.core.hostlists import expand
from cluster.services import agents, prolog_epilog

if TYPE_CHECKING:
    from simulator.engine import Engine

log = logging.getLogger(__name__)

AGENT_ID = "simulator"
# A resumed node registers after this fraction of ResumeTimeout (a boot that takes half the
# time the controller allows); a suspended one is off once its SuspendProgram ran.
BOOT_FRACTION = 0.5
# What a killed batch script reports: SIGTERM, as a shell ends on scancel's first signal.
SIGTERM = 15
# The load trace's columns after t and node: the agent heartbeat's indices (load.core).
LOAD_FIELDS = ("mem", "ut", "r15s", "r1m", "r15m", "run_queue")


@dataclass
class _Running:
    node: str
    run: int
    started: float  # virtual seconds
    left: float  # seconds of its run time still to go when it last (re)started
    paused_at: float | None = None
    token: int = 0  # the completion event that is current (a pause moves it)


class Agents:
    """Every node's agent, and the power programs' hands on the nodes."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.running: dict[int, _Running] = {}
        self.on_node: dict[str, set[int]] = {}  # batch host -> its running jobs: the ping's list
        self.booting: set[str] = set()
        self._tokens = 0

    # -- installing -----------------------------------------------------------------------

    def install(self) -> None:
        from power import services as power  # noqa: PLC0415

        power.install_spawner(_Programs(self))  # type: ignore[arg-type]

    def uninstall(self) -> None:
        from power import services as power  # noqa: PLC0415

        power.install_spawner(None)

    # -- registration -----------------------------------------------------------------------

    def register_all(self) -> None:
        """t=0: every node of slurm.conf that is not powered off (State=CLOUD) registers,
        booted a minute before."""
        from cluster.core.states import NodeFlag  # noqa: PLC0415
        from cluster.models import Node  # noqa: PLC0415

        names = [
            name
            for name, flags in Node.objects.filter(in_conf=True).values_list("name", "flags")
            if not flags & NodeFlag.POWERED_DOWN
        ]
        self.register(names, boot_time=self.engine.start_epoch - 60)

    def register(self, names: Sequence[str], *, boot_time: float) -> None:
        from cluster.models import Node  # noqa: PLC0415

        info = [
            {"name": name, "cpus": cpus, "real_memory": memory, "boot_time": boot_time}
            for name, cpus, memory in Node.objects.filter(name__in=list(names))
            .order_by("name")
            .values_list("name", "cpus", "real_memory")
        ]
        if info:
            agents.agent_register(agent_id=AGENT_ID, nodes=info, running=[], completions=[])

    def boot(self, names: Sequence[str]) -> None:
        """A resumed node's boot is over: its agent registers with a new boot time."""
        self.booting.difference_update(names)
        self.register(names, boot_time=self.engine.start_epoch + self.engine.t)

    # -- commands from the controller -------------------------------------------------------

    def receive(self, node: str, payloads: Iterable[dict[str, Any]]) -> None:
        for payload in payloads:
            kind = payload.get("type")
            if kind == "launch":
                self._launch(node, payload["job"])
            elif kind == "cancel":
                self._kill(int(payload["job_id"]))
            elif kind == "signal":
                self._signal(int(payload["job_id"]), str(payload.get("signal", "")))
            elif kind == "run_prolog":
                prolog_epilog.prolog_done(job_id=int(payload["job_id"]), node=node, run=int(payload["run"]))
            elif kind == "run_epilog":
                prolog_epilog.epilog_done(job_id=int(payload["job_id"]), node=node, run=int(payload["run"]))
            elif kind == "power_action":
                from power.services import agent_power_action_done  # noqa: PLC0415

                self._power_program(str(payload.get("node", node)), payload)
                agent_power_action_done(run_id=int(payload["run_id"]), exit_code=0)
            # registered, ack, reboot, steps: nothing a simulated node does with them

    def _launch(self, node: str, job: dict[str, Any]) -> None:
        if job.get("allocation"):
            return  # salloc's: never in a workload
        job_id, run = int(job["job_id"]), int(job["run"])
        sim = self.engine.by_fsched.get(job_id)
        run_time = max(0.0, float(sim.run_time)) if sim is not None else 0.0
        agents.jobs_started(items=[{"job_id": job_id, "node": node, "run": run}])
        self._tokens += 1
        earlier = self.running.get(job_id)
        if earlier is not None:
            self.on_node[earlier.node].discard(job_id)
        self.running[job_id] = _Running(node, run, self.engine.t, run_time, token=self._tokens)
        self.on_node.setdefault(node, set()).add(job_id)
        self.engine.log.started(job_id, sim)
        self.engine.push(self.engine.t + run_time, "complete", (job_id, self._tokens))
        limit = job.get("time_limit")
        if limit and run_time > limit * 60:
            # The live pass ends it at its limit (its time-limit handling): a pass then.
            self.engine.push(self.engine.t + limit * 60, "limit")

    def complete(self, job_id: int, token: int) -> None:
        """The job's script ended by itself at its recorded run time."""
        running = self.running.get(job_id)
        if running is None or running.token != token or running.paused_at is not None:
            return
        sim = self.engine.by_fsched.get(job_id)
        self._report_end(job_id, running, exit_code=sim.exit_code if sim is not None else 0, signal=0)

    def _kill(self, job_id: int) -> None:
        running = self.running.get(job_id)
        if running is not None:
            self._report_end(job_id, running, exit_code=0, signal=SIGTERM)

    def _report_end(self, job_id: int, running: _Running, *, exit_code: int, signal: int) -> None:
        del self.running[job_id]
        self.on_node[running.node].discard(job_id)
        agents.jobs_completed(
            completions=[
                {
                    "job_id": job_id,
                    "node": running.node,
                    "exit_code": exit_code,
                    "signal": signal,
                    "end_time": self.engine.start_epoch + self.engine.t,
                    "run": running.run,
                }
            ]
        )

    def _signal(self, job_id: int, signal: str) -> None:
        """STOP and CONT (a suspend, a load threshold's stop): the run time stands still."""
        running = self.running.get(job_id)
        if running is None:
            return
        t = self.engine.t
        if signal == "STOP" and running.paused_at is None:
            running.left -= t - running.started
            running.paused_at = t
            self.engine.log.load_action(job_id, "stop")
        elif signal == "CONT" and running.paused_at is not None:
            running.paused_at = None
            running.started = t
            self._tokens += 1
            running.token = self._tokens
            self.engine.push(t + max(0.0, running.left), "complete", (job_id, running.token))
            self.engine.log.load_action(job_id, "continue")

    # -- power ----------------------------------------------------------------------------

    def _power_program(self, nodes_text: str, payload: dict[str, Any]) -> None:
        """A Location=slurmd PowerAction: its kind is its run's."""
        from power.models import PowerRun  # noqa: PLC0415

        run = PowerRun.objects.filter(pk=int(payload["run_id"])).first()
        if run is not None:
            self.power_run(run.kind, expand(run.nodes, limit=1_000_000))

    def power_run(self, kind: str, nodes: Sequence[str]) -> None:
        from power.services import partition_membership, settings_in_force  # noqa: PLC0415

        if kind != "resume":
            # SuspendProgram: the node is off; the controller marks it POWERED_DOWN after
            # SuspendTimeout by itself. A ResumeFailProgram changes nothing here.
            return
        power = settings_in_force()
        parts = partition_membership()
        by_delay: dict[float, list[str]] = {}
        for name in nodes:
            if name in self.booting:
                continue
            self.booting.add(name)
            delay = BOOT_FRACTION * power.effective_resume_timeout(parts.get(name, ()))
            by_delay.setdefault(delay, []).append(name)
        for delay, names in by_delay.items():
            self.engine.push(self.engine.t + delay, "boot", names)

    # -- load -----------------------------------------------------------------------------

    def heartbeat(self, sample: tuple[str, dict[str, Any]]) -> None:
        node, info = sample
        # A simulated agent reads every launch the moment it is sent: none is in flight.
        agents.agent_ping(nodes=[node], load={node: info}, jobs=self.on_node.get(node, ()))


class _Programs:
    """The power extension's spawner (power.services.spawner()) in a simulation: a program
    "runs" at once, acts on the virtual nodes, and exits 0 at the same instant."""

    def __init__(self, world: Agents) -> None:
        self.world = world
        self._pid = 100_000

    def spawn(
        self,
        run_id: int,
        argv: Iterable[str],
        *,
        env: Iterable[tuple[str, str]] = (),
        resume_file: str | None = None,
    ) -> int:
        from power.models import PowerRun  # noqa: PLC0415
        from power.services import agent_power_action_done  # noqa: PLC0415

        run = PowerRun.objects.filter(pk=run_id).first()
        if run is not None:
            self.world.power_run(run.kind, expand(run.nodes, limit=1_000_000))
        # Its exit, as the reaper records it (agent_power_action_done is the same record).
        agent_power_action_done(run_id=run_id, exit_code=0)
        self._pid += 1
        return self._pid

    def running(self) -> list[int]:
        return []

    def wait_all(self, timeout: float) -> list[int]:
        return []

    def close(self) -> None:
        return None


def read_load_trace(path: Path) -> Iterator[tuple[float, tuple[str, dict[str, Any]]]]:
    """``t,node,mem,ut,r15s,r1m,r15m,run_queue`` lines (a header line is allowed) → the
    heartbeat's load object per node, as an agent sends it."""
    with path.open(encoding="utf-8", newline="") as handle:
        for number, row in enumerate(csv.reader(handle), 1):
            if not row or row[0].strip().startswith("#") or (number == 1 and row[0].strip() == "t"):
                continue
            if len(row) != 2 + len(LOAD_FIELDS):
                raise ValueError(f"{path}:{number}: want t,node,{','.join(LOAD_FIELDS)}")
            try:
                t = float(row[0])
                values = [float(v) for v in row[2:]]
            except ValueError as exc:
                raise ValueError(f"{path}:{number}: {exc}") from None
            indices = dict(zip(LOAD_FIELDS, values, strict=True))
            indices["mem"] = int(indices["mem"])
            indices["run_queue"] = int(indices["run_queue"])
            yield (
                t,
                (
                    row[1].strip(),
                    {"cpu_load": indices["r1m"], "free_mem": indices["mem"], "indices": indices},
                ),
            )
