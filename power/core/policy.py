"""Power saving's pure core: what to suspend, resume, time out and mark, at ``now``.

Slurm's power_save.html, without Django or a clock.  The adapter loads plain :class:`PowerNode`
and :class:`PowerJob` records, calls a function here with ``now``, and applies the
decisions it gets back in one transaction, then starts the programs:

* :func:`power_cycle` -- the power-save thread's pass, every ``power_save_interval``
  (see :func:`power.core.config.cycle_due`):

  1. **Timeouts.**  A node POWERING_UP that has not registered ResumeTimeout after its
     resume request becomes DOWN ("ResumeTimeout reached") and powered down, the jobs
     allocated to it are requeued (NODE_FAIL when not requeueable) and ResumeFailProgram
     runs.  A node POWERING_DOWN for SuspendTimeout is POWERED_DOWN: only then can it be
     resumed (it is unusable until then).
  2. **Resumes.**  Powered-down nodes with a power-up request (a job allocated to them,
     ``scontrol power up``) get ResumeProgram (or the requested PowerAction), at most
     ResumeRate nodes per minute, with the ``SLURM_RESUME_FILE`` document.
  3. **Suspends.**  Nodes with a power-down request (``scontrol power down``,
     PowerDownOnIdle) once they run nothing, whatever the exclusions; then, when automatic
     power saving is on, nodes IDLE or DOWN for their SuspendTime that no SuspendExcNodes /
     SuspendExcParts / SuspendExcStates rule keeps (a ``:count`` set keeps that many of
     its usable nodes up).  Requests go first; together at most SuspendRate per minute.
  4. **Launches.**  CONFIGURING jobs whose nodes have all registered.

* :func:`power_request` -- ``scontrol power up|down [asap|force]`` and ``scontrol update
  State=POWER_DOWN|POWER_DOWN_ASAP|POWER_DOWN_FORCE|POWER_UP|RESUME`` (Slurm's
  power_save.html, "Manual Power Saving"), one node at a time; :func:`parse_power_command`
  reads the command.
* :func:`on_registration` -- a node agent registered (end of POWERING_UP, or "Node
  unexpectedly rebooted").
* :func:`on_node_idle` -- a node went from COMPLETING to IDLE (PowerDownOnIdle).
* :func:`on_allocation` -- the scheduler gave a job powered-down nodes.
* :func:`power_node_order_key` -- the scheduler's node order with power states.

Rates are "nodes per minute" over a sliding 60-second window carried between cycles in
a :class:`RateState`: at most ``rate`` nodes in any 60 seconds, 0 = unlimited.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from cluster.core.scheduler import NodeView
from cluster.core.states import HOLDING_JOB_STATES, JobState, NodeBase, NodeFlag
from power.core.config import Exclusions, PowerConfig, PowerProgram
from power.core.resume_file import resume_file_text

# Slurm's NODE_STATE_POWER_DRAIN: the DRAIN flag was set by POWER_DOWN_ASAP, so powering
# down (or ``power up force``) removes it, while a DRAIN an administrator set stays.
# To be moved into cluster.core.states.NodeFlag with this value (it is persisted).
POWER_DRAIN = NodeFlag.POWER_DRAIN

POWER_FLAGS = (
    NodeFlag.POWER_DOWN
    | NodeFlag.POWER_UP
    | NodeFlag.POWERED_DOWN
    | NodeFlag.POWERING_DOWN
    | NodeFlag.POWERING_UP
)

RESUME_TIMEOUT_REASON = "ResumeTimeout reached"
UNEXPECTED_REBOOT_REASON = "Node unexpectedly rebooted"
RATE_WINDOW = 60.0  # seconds: rates are per minute

# --------------------------------------------------------------------------- records


@dataclass(frozen=True, slots=True)
class PowerNode:
    """A node as the power core sees it (one row of the adapter's snapshot)."""

    name: str
    base: str  # NodeBase value
    flags: int  # NodeFlag bitmask
    partitions: tuple[str, ...] = ()
    weight: int = 1
    last_busy: float = 0.0  # when it last ran a job (or was resumed); idle time counts from it
    suspend_time: int | None = None  # per-node SuspendTime now (conf or scontrol); None = unset
    power_entered: float | None = None  # when the current POWERING_UP/_DOWN (request) began
    boot_time: float | None = None  # BootTime from the last registration
    power_action: str | None = None  # PowerAction asked for with ``Action=``, for the next run
    reason: str = ""
    # Location=slurmd PowerActions its agent reported it cannot run, with why.
    unrunnable: tuple[tuple[str, str], ...] = ()

    def cannot_run(self, program: PowerProgram | None) -> str | None:
        """Why this node cannot run ``program`` (a Location=slurmd action its agent
        reported unusable), or None."""
        if program is None or program.location != "slurmd" or program.action is None:
            return None
        return dict(self.unrunnable).get(program.action)


@dataclass(frozen=True, slots=True)
class PowerJob:
    """A job holding nodes (CONFIGURING while it waits for them to power up)."""

    job_id: int
    nodes: tuple[str, ...]  # allocated nodes, in allocation order
    state: str = JobState.CONFIGURING
    partition: str = ""
    requeue: bool = True  # requeued on a node failure; else cancelled
    reservation: str = ""
    features: str = ""
    exclusive: str = "NO"  # NO, NODE, USER, MCS, TOPO
    oversubscribe: str = "OK"  # NO, YES, OK
    extra: str = ""
    layout: str = ""


# --------------------------------------------------------------------------- decisions


@dataclass(frozen=True, slots=True)
class NodeChange:
    """Flag and field changes for one node: ``flags = (flags & ~clear_flags) | set_flags``.

    ``None`` leaves a field alone; ``action=""`` clears the requested PowerAction.
    """

    node: str
    set_flags: int = 0
    clear_flags: int = 0
    base: str | None = None
    reason: str | None = None
    power_entered: float | None = None
    last_busy: float | None = None
    action: str | None = None

    def apply(self, node: PowerNode) -> PowerNode:
        """The node after this change (what the adapter writes, and what the core uses to
        chain the steps of a cycle)."""
        return replace(
            node,
            flags=(node.flags & ~self.clear_flags) | self.set_flags,
            base=self.base if self.base is not None else node.base,
            reason=self.reason if self.reason is not None else node.reason,
            power_entered=self.power_entered if self.power_entered is not None else node.power_entered,
            last_busy=self.last_busy if self.last_busy is not None else node.last_busy,
            power_action=(self.action or None) if self.action is not None else node.power_action,
        )

    def then(self, other: NodeChange) -> NodeChange:
        """This change followed by ``other`` (same node), as one change."""
        return NodeChange(
            self.node,
            set_flags=(self.set_flags & ~other.clear_flags) | other.set_flags,
            clear_flags=(self.clear_flags | other.clear_flags) & ~other.set_flags,
            base=other.base if other.base is not None else self.base,
            reason=other.reason if other.reason is not None else self.reason,
            power_entered=other.power_entered if other.power_entered is not None else self.power_entered,
            last_busy=other.last_busy if other.last_busy is not None else self.last_busy,
            action=other.action if other.action is not None else self.action,
        )


@dataclass(frozen=True, slots=True)
class SuspendNodes:
    """Run the suspend program for ``nodes`` (``program=None``: none configured, the state
    change is all there is, as for manual power saving without programs)."""

    nodes: tuple[str, ...]
    program: PowerProgram | None


@dataclass(frozen=True, slots=True)
class ResumeNodes:
    """Run the resume program for ``nodes`` with ``SLURM_RESUME_FILE`` holding
    ``resume_file``; ``jobs`` are the jobs waiting for them."""

    nodes: tuple[str, ...]
    program: PowerProgram | None
    jobs: tuple[int, ...] = ()
    resume_file: str = ""


@dataclass(frozen=True, slots=True)
class ResumeFailed:
    """Run ResumeFailProgram for ``nodes`` (they did not register within ResumeTimeout)."""

    nodes: tuple[str, ...]
    program: PowerProgram


@dataclass(frozen=True, slots=True)
class MarkDown:
    node: str
    reason: str


@dataclass(frozen=True, slots=True)
class RequeueJobs:
    job_ids: tuple[int, ...]
    reason: str


@dataclass(frozen=True, slots=True)
class CancelJobs:
    job_ids: tuple[int, ...]
    reason: str


@dataclass(frozen=True, slots=True)
class NodeFailJobs:
    """Jobs that cannot be requeued, lost with a node that failed (ResumeTimeout): they
    end NODE_FAIL, as slurmctld ends a job on a failed node that it cannot requeue."""

    job_ids: tuple[int, ...]
    reason: str


@dataclass(frozen=True, slots=True)
class LaunchJobs:
    """CONFIGURING jobs whose nodes are all up: start them (a conditional
    CONFIGURING -> RUNNING update, so a launch already done is not repeated)."""

    job_ids: tuple[int, ...]


Decision = (
    NodeChange
    | SuspendNodes
    | ResumeNodes
    | ResumeFailed
    | MarkDown
    | RequeueJobs
    | CancelJobs
    | NodeFailJobs
    | LaunchJobs
)


@dataclass(frozen=True)
class RateState:
    """Times of the suspends and resumes of the last minute (kept between cycles)."""

    suspends: tuple[float, ...] = ()
    resumes: tuple[float, ...] = ()

    @staticmethod
    def room(times: Sequence[float], rate: int, now: float) -> int | None:
        """How many more may start now; None = unlimited."""
        if rate <= 0:
            return None
        recent = sum(1 for t in times if now - t < RATE_WINDOW)
        return max(0, rate - recent)

    def pruned(self, now: float) -> RateState:
        return RateState(
            tuple(t for t in self.suspends if now - t < RATE_WINDOW),
            tuple(t for t in self.resumes if now - t < RATE_WINDOW),
        )


@dataclass(frozen=True)
class CycleResult:
    decisions: tuple[Decision, ...]
    rates: RateState  # pass to the next cycle
    deferred_suspends: tuple[str, ...] = ()  # eligible but over SuspendRate this cycle
    deferred_resumes: tuple[str, ...] = ()  # waiting for ResumeRate

    def of(self, kind: type) -> list:
        return [d for d in self.decisions if isinstance(d, kind)]

    def changes(self) -> dict[str, NodeChange]:
        """Every node's changes in this result, merged per node."""
        out: dict[str, NodeChange] = {}
        for d in self.decisions:
            if isinstance(d, NodeChange):
                out[d.node] = out[d.node].then(d) if d.node in out else d
        return out


@dataclass(frozen=True)
class PowerOutcome:
    """A manual request's result: decisions to apply and a note for the user."""

    decisions: tuple[Decision, ...] = ()
    message: str = ""


class PowerRequestError(ValueError):
    """A request Slurm refuses (bad Action=, Reason= on power up, RESUME on an IDLE node)."""


# --------------------------------------------------------------------------- helpers


def is_powered_down(flags: int) -> bool:
    return bool(flags & NodeFlag.POWERED_DOWN)


def _holding(jobs: Iterable[PowerJob]) -> dict[str, list[PowerJob]]:
    by_node: dict[str, list[PowerJob]] = {}
    for job in jobs:
        if job.state in HOLDING_JOB_STATES:
            for n in job.nodes:
                by_node.setdefault(n, []).append(job)
    return by_node


def _is_idle(node: PowerNode, holding: Mapping[str, list[PowerJob]]) -> bool:
    """Runs nothing: IDLE or DOWN, not COMPLETING, no job holds it."""
    return (
        node.base in (NodeBase.IDLE, NodeBase.DOWN)
        and not node.flags & NodeFlag.COMPLETING
        and not holding.get(node.name)
    )


def node_states(node: PowerNode) -> frozenset[str]:
    """The SuspendExcStates words that describe the node.  (FAIL and DEGRADED have no
    flag in cluster.core.states yet, so they never match.)"""
    f, out = node.flags, set()
    for flag, word in (
        (NodeFlag.CLOUD, "CLOUD"),
        (NodeFlag.DRAIN, "DRAIN"),
        (NodeFlag.INVALID_REG, "INVALID_REG"),
        (NodeFlag.MAINTENANCE, "MAINTENANCE"),
        (NodeFlag.NOT_RESPONDING, "NOT_RESPONDING"),
        (NodeFlag.PLANNED, "PLANNED"),
        (NodeFlag.RESERVED, "RESERVED"),
    ):
        if f & flag:
            out.add(word)
    if node.base == NodeBase.DOWN:
        out.add("DOWN")
    if f & NodeFlag.DYNAMIC:
        out.add("DYNAMIC_FUTURE" if node.base == NodeBase.FUTURE else "DYNAMIC_NORM")
    return frozenset(out)


def _usable_up(node: PowerNode) -> bool:
    """Counts toward a SuspendExcNodes ``:count``: IDLE and not DOWN, DRAIN(ING) or
    (going to be) powered down."""
    return (
        node.base == NodeBase.IDLE
        and not node.flags & (NodeFlag.DRAIN | NodeFlag.COMPLETING)
        and not node.flags
        & (NodeFlag.POWERED_DOWN | NodeFlag.POWERING_DOWN | NodeFlag.POWER_DOWN | NodeFlag.POWERING_UP)
    )


def _program_for(config: PowerConfig, node: PowerNode, default: PowerProgram | None) -> PowerProgram | None:
    if node.power_action:
        return config.action(node.power_action) or default
    return default


def _group(
    config: PowerConfig, nodes: Sequence[PowerNode], default: PowerProgram | None
) -> list[tuple[PowerProgram | None, tuple[str, ...]]]:
    """Nodes grouped by the program that handles them, in first-seen order."""
    groups: dict[PowerProgram | None, list[str]] = {}
    for n in nodes:
        groups.setdefault(_program_for(config, n, default), []).append(n.name)
    return [(prog, tuple(names)) for prog, names in groups.items()]


def _kill_jobs(jobs: Iterable[PowerJob], reason: str, *, node_failed: bool = False) -> list[Decision]:
    """Requeue the requeueable jobs; cancel the others (``scontrol power ... force``), or,
    when their node failed, end them NODE_FAIL (slurmctld's node failure handling)."""
    unique = {j.job_id: j for j in jobs}
    requeue = tuple(sorted(i for i, j in unique.items() if j.requeue))
    others = tuple(sorted(i for i, j in unique.items() if not j.requeue))
    out: list[Decision] = []
    if requeue:
        out.append(RequeueJobs(requeue, reason))
    if others:
        out.append(NodeFailJobs(others, reason) if node_failed else CancelJobs(others, reason))
    return out


# --------------------------------------------------------------------------- the cycle


class _Cycle:
    def __init__(
        self,
        config: PowerConfig,
        *,
        nodes: Sequence[PowerNode],
        jobs: Sequence[PowerJob],
        now: float,
        rates: RateState,
        exclusions: Exclusions,
        auto: bool,
    ) -> None:
        self.cfg = config
        self.now = now
        self.order = [n.name for n in nodes]
        self.nodes = {n.name: n for n in nodes}
        self.jobs = list(jobs)
        self.holding = _holding(jobs)
        self.rates = rates.pruned(now)
        self.exc = exclusions
        self.auto = auto
        self.out: list[Decision] = []
        self.deferred_suspends: list[str] = []
        self.deferred_resumes: list[str] = []

    def change(self, change: NodeChange) -> None:
        self.nodes[change.node] = change.apply(self.nodes[change.node])
        self.out.append(change)

    def each(self) -> Iterable[PowerNode]:
        for name in self.order:
            yield self.nodes[name]

    def run(self) -> CycleResult:
        self.timeouts()
        self.resumes()
        self.suspends()
        self.launches()
        return CycleResult(
            tuple(self.out), self.rates, tuple(self.deferred_suspends), tuple(self.deferred_resumes)
        )

    # 1 -------------------------------------------------------------------------------

    def timeouts(self) -> None:
        failed: list[PowerNode] = []
        killed: list[PowerJob] = []
        for node in list(self.each()):
            entered = node.power_entered if node.power_entered is not None else self.now
            if node.flags & NodeFlag.POWERING_UP:
                if self.now - entered < self.cfg.effective_resume_timeout(node.partitions):
                    continue
                # Slurm puts it DOWN and back to powered down, so a later request can
                # resume it again; a POWER_UP asked for meanwhile is kept for that.
                self.change(
                    NodeChange(
                        node.name,
                        set_flags=NodeFlag.POWERED_DOWN,
                        clear_flags=NodeFlag.POWERING_UP | NodeFlag.NOT_RESPONDING,
                        base=NodeBase.DOWN,
                        reason=RESUME_TIMEOUT_REASON,
                        power_entered=self.now,
                    )
                )
                self.out.append(MarkDown(node.name, RESUME_TIMEOUT_REASON))
                failed.append(node)
                killed += self.holding.pop(node.name, [])
            elif node.flags & NodeFlag.POWERING_DOWN:
                if self.now - entered < self.cfg.effective_suspend_timeout(node.partitions):
                    continue
                # A POWER_DOWN asked for while it was powering down is now satisfied.
                self.change(
                    NodeChange(
                        node.name,
                        set_flags=NodeFlag.POWERED_DOWN,
                        clear_flags=NodeFlag.POWERING_DOWN | NodeFlag.POWER_DOWN,
                        power_entered=self.now,
                    )
                )
        if killed:
            self.out += _kill_jobs(killed, RESUME_TIMEOUT_REASON, node_failed=True)
            dead = {j.job_id for j in killed}
            self.jobs = [j for j in self.jobs if j.job_id not in dead]
            self.holding = _holding(self.jobs)
        if failed and self.cfg.resume_fail_program is not None:
            self.out.append(ResumeFailed(tuple(n.name for n in failed), self.cfg.resume_fail_program))

    # 2 -------------------------------------------------------------------------------

    def resumes(self) -> None:
        wanted = [
            n
            for n in self.each()
            if n.flags & NodeFlag.POWERED_DOWN
            and not n.flags & NodeFlag.POWERING_DOWN
            and (n.flags & NodeFlag.POWER_UP or self.holding.get(n.name))
        ]
        room = RateState.room(self.rates.resumes, self.cfg.resume_rate, self.now)
        if room is not None and len(wanted) > room:
            self.deferred_resumes = [n.name for n in wanted[room:]]
            wanted = wanted[:room]
        if not wanted:
            return
        self.rates = replace(self.rates, resumes=self.rates.resumes + (self.now,) * len(wanted))
        for program, names in _group(self.cfg, wanted, self.cfg.resume_program):
            for name in names:
                self.change(
                    NodeChange(
                        name,
                        set_flags=NodeFlag.POWERING_UP,
                        clear_flags=NodeFlag.POWER_UP | NodeFlag.POWERED_DOWN,
                        power_entered=self.now,
                        action="",
                    )
                )
            resuming = set(names)
            jobs = [j for j in self.jobs if j.state in HOLDING_JOB_STATES and resuming & set(j.nodes)]
            self.out.append(
                ResumeNodes(
                    names,
                    program,
                    tuple(sorted(j.job_id for j in jobs)),
                    resume_file_text(names, jobs),
                )
            )

    # 3 -------------------------------------------------------------------------------

    def suspends(self) -> None:
        requested: list[PowerNode] = []
        for node in list(self.each()):
            if not node.flags & NodeFlag.POWER_DOWN or node.flags & NodeFlag.POWERING_DOWN:
                continue
            if node.flags & NodeFlag.POWERED_DOWN:
                # Already down (e.g. powered down by hand meanwhile): nothing left to do.
                self.change(NodeChange(node.name, clear_flags=NodeFlag.POWER_DOWN | POWER_DRAIN))
                continue
            if node.flags & NodeFlag.POWERING_UP or not _is_idle(node, self.holding):
                continue  # after its jobs, or once it has registered
            requested.append(node)

        room = RateState.room(self.rates.suspends, self.cfg.suspend_rate, self.now)
        chosen = requested if room is None else requested[:room]
        self.deferred_suspends += [n.name for n in requested[len(chosen) :]]
        for node in chosen:
            self._mark_suspending(node)
        left = None if room is None else room - len(chosen)

        if self.auto:
            auto = self._auto_candidates()
            picked: list[PowerNode] = []
            for node in auto:
                if left is not None and len(picked) >= left:
                    self.deferred_suspends.append(node.name)
                    continue
                picked.append(node)
                self._mark_suspending(node)
            chosen = chosen + picked
        if not chosen:
            return
        self.rates = replace(self.rates, suspends=self.rates.suspends + (self.now,) * len(chosen))
        for program, names in _group(self.cfg, chosen, self.cfg.suspend_program):
            self.out.append(SuspendNodes(names, program))

    def _mark_suspending(self, node: PowerNode) -> None:
        clear = NodeFlag.POWER_DOWN | POWER_DRAIN | NodeFlag.POWER_UP
        if node.flags & POWER_DRAIN:
            clear |= NodeFlag.DRAIN  # the ASAP drain ends when powering down starts
        base = None
        if self.cfg.idle_on_node_suspend:
            clear |= NodeFlag.DRAIN
            base = NodeBase.IDLE
        # The action is kept on the decision (SuspendNodes.program), cleared on the node.
        change = NodeChange(
            node.name,
            set_flags=NodeFlag.POWERING_DOWN,
            clear_flags=clear,
            base=base,
            power_entered=self.now,
            action="",
        )
        self.nodes[node.name] = change.apply(self.nodes[node.name])
        self.out.append(change)

    def _auto_candidates(self) -> list[PowerNode]:
        exc_nodes, exc_parts, exc_states = self.exc.nodes, self.exc.parts, self.exc.states
        # Slurm's _node_state_suspendable(): never a node whose reboot is pending or issued.
        skip = POWER_FLAGS | NodeFlag.COMPLETING | NodeFlag.REBOOT_REQUESTED | NodeFlag.REBOOT_ISSUED
        candidates = []
        for node in self.each():
            limit = self.cfg.effective_suspend_time(node.suspend_time, node.partitions)
            if limit < 0 or node.flags & skip or not _is_idle(node, self.holding):
                continue
            if self.now - node.last_busy < limit:
                continue
            if node.name in exc_nodes or exc_parts.intersection(node.partitions):
                continue
            if exc_states and exc_states & node_states(node):
                continue
            if node.cannot_run(_program_for(self.cfg, node, self.cfg.suspend_program)):
                continue  # its agent cannot run the program: it would never power down
            candidates.append(node)
        counted = self.exc.counted
        if not counted:
            return candidates
        # Each ":count" set may lose only the usable nodes beyond its count (Slurm's
        # power_save.html: "prevent N usable nodes (IDLE and not DOWN, DRAINING or already
        # powered down) from being powered down"); nodes powering down on request just above
        # no longer count.
        budget = [
            sum(1 for n in s.nodes if n in self.nodes and _usable_up(self.nodes[n])) - (s.count or 0)
            for s in counted
        ]
        kept = []
        for node in candidates:
            if not _usable_up(node):
                kept.append(node)  # a DOWN or drained node is not one the count protects
                continue
            hits = [i for i, s in enumerate(counted) if node.name in s.nodes]
            if any(budget[i] <= 0 for i in hits):
                continue
            for i in hits:
                budget[i] -= 1
            kept.append(node)
        return kept

    # 4 -------------------------------------------------------------------------------

    def launches(self) -> None:
        ready = ready_jobs(self.nodes, self.jobs)
        if ready:
            self.out.append(LaunchJobs(ready))


def power_cycle(
    config: PowerConfig,
    nodes: Sequence[PowerNode],
    jobs: Sequence[PowerJob] = (),
    *,
    now: float,
    rates: RateState | None = None,
    exclusions: Exclusions | None = None,
    auto_enabled: bool | None = None,
) -> CycleResult:
    """One power-save pass at ``now``; see the module docstring.

    ``nodes`` in node table order (suspends and resumes go in that order); ``jobs`` the
    jobs holding nodes; ``rates`` what the previous cycle returned; ``exclusions`` the
    running SuspendExc* (default: the file's); ``auto_enabled`` whether automatic power
    saving is on (default :attr:`PowerConfig.auto_enabled`; the adapter passes its sticky
    flag, see :func:`power.core.config.node_suspend_time_change`).
    """
    return _Cycle(
        config,
        nodes=nodes,
        jobs=jobs,
        now=now,
        rates=rates or RateState(),
        exclusions=exclusions if exclusions is not None else config.exclusions,
        auto=config.auto_enabled if auto_enabled is None else auto_enabled,
    ).run()


def ready_jobs(nodes: Mapping[str, PowerNode], jobs: Iterable[PowerJob]) -> tuple[int, ...]:
    """CONFIGURING jobs none of whose nodes is powered down, powering up, waiting for a
    power up or not responding (Slurm's power_save.html, "Use of Allocations")."""
    waiting = POWER_FLAGS & ~NodeFlag.POWER_DOWN | NodeFlag.NOT_RESPONDING
    out = []
    for job in jobs:
        if job.state != JobState.CONFIGURING or not job.nodes:
            continue
        if all(n in nodes and not nodes[n].flags & waiting for n in job.nodes):
            out.append(job.job_id)
    return tuple(sorted(out))


# --------------------------------------------------------------------------- events


def on_registration(
    config: PowerConfig,
    node: PowerNode,
    jobs: Sequence[PowerJob] = (),
    *,
    boot_time: float,
    now: float,
    all_nodes: Mapping[str, PowerNode] | None = None,
) -> tuple[Decision, ...]:
    """A node registered with ``boot_time``.

    POWERING_UP and booted since the resume request, within ResumeTimeout: powered up
    (and, with ``fast_power_up_launch``, the jobs now complete are launched -- pass
    ``all_nodes`` to judge their other nodes).  Booted after ResumeTimeout, or booting on
    its own while powered down or DOWN after a failed resume: DOWN with "Node unexpectedly
    rebooted" -- unless no ResumeProgram is configured: then nothing here can power a node
    up, so a powered-down node that registers was started by its administrator and is up
    (a ``State=CLOUD`` node whose agent is simply started, as in fsched's load thresholds'
    example).  A boot time older than the resume request means slurmd was not restarted by
    the power up (``slurmd -b`` reports now): it still waits.
    """
    holding = [j for j in jobs if j.state in HOLDING_JOB_STATES and node.name in j.nodes]
    rebooted = node.boot_time is None or boot_time > node.boot_time
    if node.flags & NodeFlag.POWERING_UP:
        entered = node.power_entered if node.power_entered is not None else now
        if boot_time < entered:
            return ()
        if now - entered > config.effective_resume_timeout(node.partitions):
            return _unexpected_reboot(node, holding)
        change = NodeChange(
            node.name,
            clear_flags=NodeFlag.POWERING_UP | NodeFlag.NOT_RESPONDING,
            power_entered=now,
            last_busy=now,
        )
        out: list[Decision] = [change]
        if config.fast_power_up_launch:
            view = dict(all_nodes or {})
            view[node.name] = change.apply(node)
            ready = ready_jobs(view, holding)
            if ready:
                out.append(LaunchJobs(ready))
        return tuple(out)
    after_failed_resume = node.base == NodeBase.DOWN and node.reason == RESUME_TIMEOUT_REASON
    if (
        config.resume_program is None
        and node.flags & NodeFlag.POWERED_DOWN
        and not node.flags & NodeFlag.POWERING_DOWN
        and not after_failed_resume
    ):
        return (
            NodeChange(
                node.name,
                clear_flags=NodeFlag.POWERED_DOWN | NodeFlag.NOT_RESPONDING,
                power_entered=now,
                last_busy=now,
            ),
        )
    if (
        rebooted
        and not node.flags & NodeFlag.REBOOT_REQUESTED
        and (node.flags & (NodeFlag.POWERED_DOWN | NodeFlag.POWERING_DOWN) or after_failed_resume)
    ):
        return _unexpected_reboot(node, holding)
    return ()


def _unexpected_reboot(node: PowerNode, holding: Sequence[PowerJob]) -> tuple[Decision, ...]:
    return (
        NodeChange(
            node.name,
            clear_flags=NodeFlag.POWERING_UP
            | NodeFlag.POWERED_DOWN
            | NodeFlag.POWERING_DOWN
            | NodeFlag.POWER_UP,
            base=NodeBase.DOWN,
            reason=UNEXPECTED_REBOOT_REASON,
        ),
        MarkDown(node.name, UNEXPECTED_REBOOT_REASON),
        *_kill_jobs(holding, UNEXPECTED_REBOOT_REASON),
    )


def on_node_idle(
    config: PowerConfig, node: PowerNode, job_partitions: Iterable[str]
) -> tuple[NodeChange, ...]:
    """The node went from COMPLETING to IDLE (its last job ended, none allocated since).

    If one of those jobs was allocated from a ``PowerDownOnIdle=YES`` partition and power
    saving can run (:attr:`PowerConfig.ready`), the node is asked to power down; this
    request ignores SuspendExc*.  With Exclusive=USER/NODE the node is IDLE exactly when
    the second and third cases in Slurm's power_save.html say, so one rule covers all three.
    """
    if not config.ready or node.flags & (NodeFlag.POWERED_DOWN | NodeFlag.POWERING_DOWN):
        return ()
    for name in job_partitions:
        part = config.partitions.get(name)
        if part is not None and part.power_down_on_idle:
            return (NodeChange(node.name, set_flags=NodeFlag.POWER_DOWN),)
    return ()


def on_allocation(nodes: Sequence[PowerNode]) -> tuple[bool, tuple[NodeChange, ...]]:
    """The scheduler started a job on ``nodes``: (the job must wait CONFIGURING, the power
    up requests for its powered-down nodes)."""
    changes = tuple(
        NodeChange(n.name, set_flags=NodeFlag.POWER_UP)
        for n in nodes
        if n.flags & NodeFlag.POWERED_DOWN and not n.flags & NodeFlag.POWER_UP
    )
    waits = any(n.flags & (NodeFlag.POWERED_DOWN | NodeFlag.POWERING_UP | NodeFlag.POWER_UP) for n in nodes)
    return waits, changes


def drain_change(node: PowerNode, reason: str) -> NodeChange:
    """An administrator drains the node: that DRAIN outlives a pending POWER_DOWN_ASAP."""
    return NodeChange(node.name, set_flags=NodeFlag.DRAIN, clear_flags=POWER_DRAIN, reason=reason)


# --------------------------------------------------------------------------- scheduler order


def power_node_order_key(node: NodeView) -> tuple[int, ...]:
    """Powered-up nodes first, powering-up second, powered-down last; by Weight in each
    set, then index (Slurm's power_save.html, "Weight").  A powered-down node with a
    power-up already asked for counts as powering up.  Same signature as
    ``cluster.core.scheduler.node_order_key``.
    """
    flags = node.flags
    if flags & _POWERING_UP or (flags & _POWERED_DOWN and flags & _POWER_UP):
        rank = 1
    elif flags & _DOWN_OR_GOING:
        rank = 2
    else:
        rank = 0
    return (rank, node.weight, node.index)


# The key's flags as plain ints: ``int & NodeFlag.X`` runs enum's Python __and__ (about
# 2 µs against 30 ns), and each pass sorts every node of a partition with this key
# (profiled at 10,000 nodes: 0.3 s a pass).
_POWERING_UP = int(NodeFlag.POWERING_UP)
_POWERED_DOWN = int(NodeFlag.POWERED_DOWN)
_POWER_UP = int(NodeFlag.POWER_UP)
_DOWN_OR_GOING = int(NodeFlag.POWERED_DOWN | NodeFlag.POWERING_DOWN)


# --------------------------------------------------------------------------- manual requests

OPS = ("POWER_DOWN", "POWER_DOWN_ASAP", "POWER_DOWN_FORCE", "POWER_UP", "POWER_UP_FORCE", "RESUME")


@dataclass(frozen=True)
class PowerCommand:
    """``scontrol power <up|down> [asap|force] {ALL|<nodelist>} [Action=] [Reason=]``."""

    op: str  # one of OPS except RESUME
    nodes: str  # "ALL" or a hostlist / nodeset expression, as written
    action: str | None = None
    reason: str | None = None

    @property
    def all_nodes(self) -> bool:
        return self.nodes.upper() == "ALL"


def parse_power_command(words: Sequence[str]) -> PowerCommand:
    """The words after ``scontrol power``; :class:`PowerRequestError` with the reason."""
    args = list(words)
    if not args or args[0].lower() not in ("up", "down"):
        raise PowerRequestError(
            "usage: power <up|down> [asap|force] {ALL|<nodelist>} [Action=<name>] [Reason=<reason>]"
        )
    direction = args.pop(0).lower()
    mode = ""
    if args and args[0].lower() in ("asap", "force"):
        mode = args.pop(0).lower()
    if direction == "up" and mode == "asap":
        raise PowerRequestError("asap is only valid for power down")
    if not args or "=" in args[0]:
        raise PowerRequestError("a node list (or ALL) is required")
    nodes = args.pop(0)
    action = reason = None
    for word in args:
        key, eq, value = word.partition("=")
        if not eq:
            raise PowerRequestError(f"unexpected argument {word!r}")
        if key.lower() == "action":
            if not value:
                raise PowerRequestError("Action= needs a PowerAction name")
            action = value
        elif key.lower() == "reason":
            if direction == "up":
                raise PowerRequestError("Reason= is only accepted for power down")
            reason = value
        else:
            raise PowerRequestError(f"unknown option {key}=")
    op = "POWER_" + direction.upper() + (f"_{mode.upper()}" if mode else "")
    return PowerCommand(op, nodes, action, reason)


def power_request(
    config: PowerConfig,
    node: PowerNode,
    jobs: Sequence[PowerJob] = (),
    *,
    op: str,
    now: float,
    action: str | None = None,
    reason: str | None = None,
) -> PowerOutcome:
    """One node's manual power transition (Slurm's power_save.html, "Manual Power Saving").

    ``op``: POWER_DOWN, POWER_DOWN_ASAP, POWER_DOWN_FORCE, POWER_UP, POWER_UP_FORCE
    (``scontrol power up force``) or RESUME.  ``jobs``: the jobs holding the node (force
    requeues the requeueable ones and cancels the others).  The power programs run later,
    from :func:`power_cycle`: requests are flags the cycle acts on.
    """
    op = op.upper()
    if op not in OPS:
        raise PowerRequestError(f"invalid node state {op}")
    if action is not None:
        prog = config.action(action)
        if prog is None:
            raise PowerRequestError(f"Action={action}: no such PowerAction")
        if op.startswith("POWER_UP") and prog.location != "slurmctld":
            raise PowerRequestError(
                f"Action={action}: power up actions must use Location=slurmctld (it has {prog.location})"
            )
    if reason is not None and not op.startswith("POWER_DOWN"):
        raise PowerRequestError("Reason= is only accepted for power down")
    if op.startswith("POWER_DOWN"):
        prog = config.action(action) if action is not None else config.suspend_program
        why = node.cannot_run(prog)
        if why and prog is not None:
            raise PowerRequestError(f"{node.name} cannot run PowerAction {prog.action} ({prog.path}): {why}")
    holding = [j for j in jobs if j.state in HOLDING_JOB_STATES and node.name in j.nodes]
    if op == "RESUME":
        return _resume(node, now)
    if op.startswith("POWER_DOWN"):
        return _power_down(node, holding, op=op, action=action, reason=reason)
    return _power_up(node, holding, force=op == "POWER_UP_FORCE", now=now, action=action)


def _power_down(
    node: PowerNode, holding: Sequence[PowerJob], *, op: str, action: str | None, reason: str | None
) -> PowerOutcome:
    f = node.flags
    out: list[Decision] = []
    force = op == "POWER_DOWN_FORCE"
    if force and holding:
        out += _kill_jobs(holding, "Node power down forced")
    if f & NodeFlag.POWERED_DOWN:
        if force:
            # Its waiting jobs are gone; it stays down, reset to IDLE.
            base = NodeBase.IDLE if node.base != NodeBase.DOWN else None
            out.append(NodeChange(node.name, clear_flags=NodeFlag.POWER_UP, base=base, reason=reason))
            return PowerOutcome(tuple(out), f"{node.name} is already powered down")
        if f & NodeFlag.POWER_UP:
            out.append(NodeChange(node.name, clear_flags=NodeFlag.POWER_UP))
            return PowerOutcome(tuple(out), f"{node.name}: power up request cancelled")
        return PowerOutcome((), f"{node.name} is already powered down")
    set_flags: int = NodeFlag.POWER_DOWN
    clear: int = NodeFlag.POWER_UP
    base = None
    message = ""
    if f & NodeFlag.POWERING_DOWN:
        message = f"{node.name} is already powering down; the request takes effect after SuspendTimeout"
    if op == "POWER_DOWN_ASAP" and not f & NodeFlag.DRAIN:
        set_flags |= NodeFlag.DRAIN | POWER_DRAIN
    if force:
        # Jobs gone, state reset to IDLE; a power up in progress is abandoned.
        clear |= NodeFlag.COMPLETING | NodeFlag.POWERING_UP
        base = NodeBase.IDLE
    out.append(
        NodeChange(
            node.name,
            set_flags=set_flags,
            clear_flags=clear,
            base=base,
            reason=reason,
            action=action if action is not None else None,
        )
    )
    return PowerOutcome(tuple(out), message)


def _power_up(
    node: PowerNode, holding: Sequence[PowerJob], *, force: bool, now: float, action: str | None
) -> PowerOutcome:
    f = node.flags
    if force:
        out: list[Decision] = _kill_jobs(holding, "Node power up forced")
        clear = (
            NodeFlag.POWERING_UP
            | NodeFlag.POWERING_DOWN
            | NodeFlag.POWER_DOWN
            | NodeFlag.COMPLETING
            | POWER_DRAIN
        )
        if f & POWER_DRAIN:
            clear |= NodeFlag.DRAIN
        base = NodeBase.IDLE if node.base in (NodeBase.ALLOCATED, NodeBase.MIXED) else None
        out.append(
            NodeChange(
                node.name,
                set_flags=NodeFlag.POWERED_DOWN | NodeFlag.POWER_UP,
                clear_flags=clear,
                base=base,
                power_entered=now,
                action=action,
            )
        )
        return PowerOutcome(tuple(out))
    if f & (NodeFlag.POWERED_DOWN | NodeFlag.POWERING_DOWN):
        message = ""
        if f & NodeFlag.POWERING_DOWN:
            message = f"{node.name} is powering down; it powers up after SuspendTimeout"
        change = NodeChange(
            node.name, set_flags=NodeFlag.POWER_UP, clear_flags=NodeFlag.POWER_DOWN, action=action
        )
        return PowerOutcome((change,), message)
    if f & NodeFlag.POWERING_UP:
        change = NodeChange(node.name, set_flags=NodeFlag.POWER_UP, action=action)
        return PowerOutcome(
            (change,), f"{node.name} is already powering up; a new request follows ResumeTimeout"
        )
    if f & NodeFlag.POWER_DOWN:
        clear = NodeFlag.POWER_DOWN | POWER_DRAIN
        if f & POWER_DRAIN:
            clear |= NodeFlag.DRAIN
        return PowerOutcome(
            (NodeChange(node.name, clear_flags=clear, action=""),),
            f"{node.name}: power down request cancelled",
        )
    return PowerOutcome((), f"{node.name} is already powered up")


def _resume(node: PowerNode, now: float) -> PowerOutcome:
    """State=RESUME: DOWN/DRAIN/REBOOT back to service; POWERING_DOWN ends at once."""
    f = node.flags
    down = node.base == NodeBase.DOWN
    if not (down or f & (NodeFlag.DRAIN | NodeFlag.REBOOT_REQUESTED | NodeFlag.POWERING_DOWN)):
        raise PowerRequestError(
            f"{node.name}: Invalid node state specified (not DOWN, DRAIN, REBOOT or POWERING_DOWN)"
        )
    clear = NodeFlag.DRAIN | POWER_DRAIN | NodeFlag.REBOOT_REQUESTED
    set_flags = 0
    power_entered = None
    powered_down = bool(f & (NodeFlag.POWERED_DOWN | NodeFlag.POWERING_DOWN))
    if f & NodeFlag.POWERING_DOWN:
        # Eligible for allocation now: it is treated as powered down (a job resumes it).
        clear |= NodeFlag.POWERING_DOWN | NodeFlag.POWER_DOWN
        set_flags |= NodeFlag.POWERED_DOWN
        power_entered = now
    # A DOWN or rebooting node must register again: NoResp until it does.  Not when it
    # is powered down: it is neither pinged nor able to register, the flag would stick.
    if (down or f & NodeFlag.REBOOT_REQUESTED) and not powered_down:
        set_flags |= NodeFlag.NOT_RESPONDING
    change = NodeChange(
        node.name,
        set_flags=set_flags,
        clear_flags=clear,
        base=NodeBase.IDLE if down else None,
        reason="",
        power_entered=power_entered,
    )
    return PowerOutcome((change,))


__all__ = [
    "OPS",
    "POWER_DRAIN",
    "POWER_FLAGS",
    "RESUME_TIMEOUT_REASON",
    "UNEXPECTED_REBOOT_REASON",
    "CancelJobs",
    "CycleResult",
    "Decision",
    "LaunchJobs",
    "MarkDown",
    "NodeChange",
    "NodeFailJobs",
    "PowerCommand",
    "PowerJob",
    "PowerNode",
    "PowerOutcome",
    "PowerRequestError",
    "RateState",
    "RequeueJobs",
    "ResumeFailed",
    "ResumeNodes",
    "SuspendNodes",
    "drain_change",
    "is_powered_down",
    "node_states",
    "on_allocation",
    "on_node_idle",
    "on_registration",
    "parse_power_command",
    "power_cycle",
    "power_node_order_key",
    "power_request",
    "ready_jobs",
]
