"""The scheduler's pure core: one pass from a :class:`Snapshot` to decisions.

No Django and no clock: the adapter (``cluster.services.scheduling``) builds the snapshot
with ``now`` in it, calls :func:`schedule`, and applies the :class:`Start`, :class:`Pending`
and :class:`Timeout` decisions in one transaction.  The simulator replays the same core
with a virtual clock, so a pass is deterministic: the same snapshot (and plugins in the
same state) gives the same decisions.

A pass, as Slurm's controller does it:

1. **Timeouts.**  RUNNING jobs whose ``start_time + TimeLimit`` has come get :class:`Timeout`.
2. **Order.**  Pending jobs sorted by partition ``PriorityTier``, then by priority
   (:func:`job_priority`), then job id.
3. **Main scheduler.**  Each job, in that order: cheap per-job checks first (held,
   BeginTime, partition state and limits, ReqNodeNotAvail, BadConstraints, plugin gates),
   then a fit on the partition's nodes.  Dependencies come right after a hold, as Slurm's
   job_independent tests them: ``Dependency`` or ``DependencyNeverSatisfied``, from the
   snapshot's ``depend_facts`` in O(the job's terms) (``cluster.core.dependencies``).
   The first job of a partition that does not fit
   gets ``Resources`` and *blocks* the partition: every later job there gets ``Priority``
   in O(1), and the partition's nodes are withheld from lower-priority jobs of other
   partitions (Slurm's ``failed_parts`` / ``avail_node_bitmap`` handling).
4. **Backfill** (``SchedulerConfig.backfill``, see ``cluster.core.backfill``).  The jobs left
   waiting for ``Resources``/``Priority`` are tested again in priority order, at most
   ``bf_max_job_test`` of them: each either starts now without delaying the planned start
   of any job tested before it, or gets such a planned start itself (reported as
   ``Pending.start_time``, what ``squeue --start`` shows).

Fit rules (Slurm's defaults for select/cons_tres without ``--exclusive``):

* a job gets ``max(min_nodes, len(req_nodes))`` nodes (``max_nodes`` is not used to grow);
* tasks are spread in blocks, as evenly as the node count allows: with T tasks on N nodes the
  first ``T mod N`` nodes run ``ceil(T/N)`` tasks and the others ``floor(T/N)``; a node runs
  at least one task.  Every node must have ``ceil(T/N) * cpus_per_task`` CPUs free, and is
  charged ``tasks_on_it * cpus_per_task``;
* memory is per node: ``mem_per_node=None`` means not requested (``DefMemPerNode``, i.e.
  ``SchedulerConfig.default_mem_per_node``, 0 by default: nothing charged), ``0`` means all
  of the node's memory as Slurm's ``--mem=0`` (the node must have no memory allocated, and
  is charged its ``RealMemory``), any other value is MB needed free on every node;
* nodes are usable per :func:`cluster.core.states.is_usable`, not in ``exc_nodes``, and have the
  job's ``features`` (``a``, ``a&b``, ``a|b``; ``&`` binds tighter than ``|``);
* nodes are taken in :func:`node_order_key` order (lowest Weight, then index, which is name
  order) after the ``req_nodes``, which are always part of the allocation;
* an ``exclusive`` job (Slurm's ``sbatch --exclusive``, OverSubscribe=NO) takes whole
  nodes: only nodes with nothing allocated, each charged all its CPUs and all its memory,
  so no other job shares them while it holds them.

A job time limit of ``0`` is Slurm's "no limit" (INFINITE); ``None`` takes the partition's
DefaultTime, else its MaxTime.  A partition in state DRAIN still runs the jobs already queued
in it (Slurm: DRAIN refuses new submissions only); DOWN and INACTIVE run none.

Advanced reservations (``job.reservation``) and ``licenses`` are left to plugins (see
:class:`SchedulerPlugin`; ``cluster.core.reservations`` keeps jobs off reserved nodes through
:meth:`SchedulerPlugin.excluded_nodes`).

What a pass keeps for the next one (#18: a pass's cost should not grow with the cluster
between two passes that changed little of it).  The node side (:class:`_NodeSide`: sizes,
usability, partitions' node sets, allocation orders) is kept per node key and brought up
to date from the node views that are new objects; what the holding jobs hold
(:class:`_Holdings`: per-node sums, timeouts, release lists, free arrays, backfill's ready
times) is kept and brought up to date from the holding views that left and came, said by
the snapshot's builder (``Snapshot.running_since``) or found by identity.  Nothing kept is
changed once a pass may read it: each pass copies what it changes, so a dry run on another
thread (a start estimate) reads consistent state.  Every decision is the one a pass that
builds everything gets (tests/cluster/test_pass_kept_delta.py); :func:`forget_kept` drops it all.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial
from itertools import compress, islice, repeat
from operator import is_not, le

from cluster.core import constraints, dependencies
from cluster.core.backfill import INF, BaseReady, Request, Timeline
from cluster.core.states import PAUSED_JOB_STATES, UNUSABLE_FLAGS, JobState, NodeBase, Reason, is_usable

# --------------------------------------------------------------------------- the snapshot


@dataclass(frozen=True, slots=True)
class NodeView:
    index: int
    name: str
    cpus: int
    real_memory: int  # MB
    weight: int
    base: str  # NodeBase value
    flags: int  # NodeFlag bitmask
    features: frozenset[str] = frozenset()
    # What is allocated on the node now.  The core also sums the running jobs' per-node
    # allocations and uses whichever is larger, so either source alone is enough.
    alloc_cpus: int = 0
    alloc_mem: int = 0


@dataclass(frozen=True, slots=True)
class PartitionView:
    name: str
    node_indices: tuple[int, ...]
    state: str = "UP"
    max_time: int | None = None  # minutes, None = INFINITE
    default_time: int | None = None
    max_nodes: int | None = None
    min_nodes: int = 0
    priority_tier: int = 1
    priority_job_factor: int = 1


@dataclass(frozen=True, slots=True)
class JobView:
    job_id: int
    partition: str
    user: str
    submit_time: float
    priority: int = 0  # 0: computed by job_priority()
    min_nodes: int = 1
    max_nodes: int | None = None
    num_tasks: int = 1
    cpus_per_task: int = 1
    mem_per_node: int | None = None  # MB; None = DefMemPerNode; 0 = all of each node's memory
    time_limit: int | None = None  # minutes; None = partition default; 0 = INFINITE
    begin_time: float | None = None
    hold: str | None = None  # "user" | "admin"
    req_nodes: frozenset[str] = frozenset()
    exc_nodes: frozenset[str] = frozenset()
    features: str = ""
    reservation: str = ""
    licenses: str = ""
    state: str = "PENDING"
    start_time: float | None = None
    paused: int = 0  # seconds SUSPENDED or STOPPED so far: not counted against the limit
    node_indices: tuple[int, ...] = ()
    alloc_cpus: tuple[int, ...] = ()  # per node, parallel to node_indices
    alloc_mem: tuple[int, ...] = ()
    array_job_id: int | None = None
    array_max_tasks: int | None = None  # the %N throttle of ``sbatch -a``
    # Accounting (Slurm's resource_limits.html): the limits plugin and multifactor read these.
    account: str = ""
    qos: str = ""
    gres: str = ""  # per node, as --gres (gpu:tesla:2)
    exclusive: bool = False  # --exclusive: whole nodes, shared with no other job
    nice: int = 0  # sbatch --nice: taken off the computed priority
    # --dependency (parsed) and what it needs of the job itself: singleton's name and
    # aftercorr's task id.
    dependency: dependencies.Dependency | None = None
    name: str = ""
    array_task_id: int | None = None
    # sbatch --deadline (epoch) and --time-min (minutes): see _Pass._missed_deadline.
    deadline: float | None = None
    time_min: int | None = None


@dataclass(frozen=True)
class SchedulerConfig:
    backfill: bool = True
    bf_max_job_test: int = 500
    max_starts_per_pass: int | None = None  # the main loop's (Slurm's sched_max_job_start)
    bf_max_job_start: int | None = None  # backfill's own starts in a pass
    default_mem_per_node: int = 0  # DefMemPerNode, MB
    bf_window: int = 1440  # minutes ahead backfill plans reservations (Slurm's bf_window)
    # Seconds the main loop tries jobs for (Slurm's max_sched_time), by the clock given to
    # schedule(); None: no budget.
    max_sched_time: float | None = None


@dataclass(frozen=True, slots=True)
class RunningChange:
    """How a snapshot's holding jobs (``result``) came from an earlier tuple of them
    (``base``): base's views less ``gone``, plus ``came`` (views, by identity).  A pass
    whose predecessor ran on ``base`` brings what it kept up to date from these alone."""

    base: tuple[JobView, ...]
    result: tuple[JobView, ...]
    gone: tuple[JobView, ...]
    came: tuple[JobView, ...]


@dataclass(frozen=True, slots=True)
class Snapshot:
    now: float
    nodes: tuple[NodeView, ...]
    partitions: Mapping[str, PartitionView]
    pending: tuple[JobView, ...]
    running: tuple[JobView, ...]  # RUNNING/SUSPENDED/CONFIGURING/COMPLETING: holding resources
    config: SchedulerConfig = field(default_factory=SchedulerConfig)
    # The jobs the pending jobs' dependencies name, read once for the pass.
    depend_facts: dependencies.Facts | None = None
    # What changed in ``running`` since an earlier tuple, when the builder knows it: a
    # hint for what passes keep, not part of what the snapshot says.
    running_since: RunningChange | None = field(default=None, compare=False, repr=False)


# --------------------------------------------------------------------------- decisions


@dataclass(frozen=True, slots=True)
class Start:
    job_id: int
    node_indices: tuple[int, ...]  # ascending
    cpus_per_node: tuple[int, ...]  # parallel to node_indices
    mem_per_node: tuple[int, ...]
    time_limit: int | None  # resolved, minutes; None = INFINITE
    priority: int
    backfill: bool = False  # started by the backfill phase


@dataclass(frozen=True, slots=True)
class Pending:
    job_id: int
    reason: str  # Reason value
    detail: str = ""
    priority: int = 0
    start_time: float | None = None  # planned start from backfill, if any
    sched_nodes: tuple[int, ...] = ()  # nodes planned for it (Slurm's SchedNodeList)


@dataclass(frozen=True, slots=True)
class Timeout:
    job_id: int


@dataclass(frozen=True, slots=True)
class PassStats:
    considered: int = 0  # pending jobs in the snapshot
    started: int = 0
    backfilled: int = 0  # of started
    bf_tested: int = 0
    reservations: int = 0  # jobs given a planned start by backfill
    timeouts: int = 0
    fit_attempts: int = 0  # jobs that reached a node search in the main scheduler
    untried: int = 0  # jobs the main loop did not try: its max_sched_time was spent


@dataclass(frozen=True)
class PassResult:
    starts: tuple[Start, ...]
    pending: tuple[Pending, ...]
    timeouts: tuple[Timeout, ...]
    stats: PassStats
    # From plugins that have them (the limits): running jobs to end because a limit is
    # spent (objects with ``job_id``, ``reason``, ``detail``), and the pending jobs that
    # begin accruing age priority now.  The adapter applies them with the rest.
    kills: tuple = ()
    accrue_start: frozenset[int] = frozenset()
    # Pending jobs whose stored dependency changed (terms fulfilled or failed): job id ->
    # its new text, "" once satisfied (Slurm then shows Dependency=(null)).
    dependencies: Mapping[int, str] = field(default_factory=dict)
    # Pending jobs that can no longer end by their --deadline: they end DEADLINE.
    expired: tuple[int, ...] = ()


# --------------------------------------------------------------------------- extension points


@dataclass(frozen=True, slots=True)
class Blocked:
    """A plugin's refusal: the job stays pending with this reason (a Reason value)."""

    reason: str
    detail: str = ""


class SchedulerPlugin:
    """Hooks for limits, licenses, HRES and the like.  Subclass and override what you need;
    every hook defaults to doing nothing.

    Plugins are called in the order given to :func:`schedule`, for the main scheduler and for
    backfill starts.  They may keep state for the pass (counters): :meth:`begin_pass` is
    called first, :meth:`on_start` for every job started, so a job started earlier in the
    pass is counted when a later one is gated.  Backfill *reservations* (planned starts)
    do not consult plugins.

    A ``Blocked`` with reason ``Resources`` blocks the job's partition like a failed fit;
    any other reason (``Licenses``, ``QOSMaxJobsPerUserLimit``...) only holds that job.
    """

    def begin_pass(self, snapshot: Snapshot) -> None:
        """Called once per pass, before any other hook: (re)build counters from the snapshot."""

    def job_gate(self, job: JobView, partition: PartitionView) -> Blocked | None:
        """Per-job check before any node search (limits, licenses counts): None lets it on."""
        return None

    def select_nodes(
        self, job: JobView, candidates: Sequence[int], count: int, proposal: tuple[int, ...]
    ) -> tuple[int, ...] | Blocked:
        """Choose the job's nodes among ``candidates``.

        ``candidates`` are every node (index) that could take the job now, in preference
        order; ``proposal`` is the core's choice (the required nodes plus the first others).
        Return ``count`` of the candidates (including every required node), or a
        ``Blocked`` to veto.  Overriding this makes the core list every candidate instead
        of stopping at the first ``count``, so leave it alone unless you need it.
        """
        return proposal

    def selects(self, job: JobView) -> bool:
        """Whether :meth:`select_nodes` wants a say for this job.  Returning False keeps
        the core's fast path (stop at the first ``count`` nodes) for jobs the plugin does
        not care about, e.g. jobs without hierarchical resources."""
        return True

    def on_start(self, job: JobView, start: Start) -> None:
        """The job starts in this pass: charge what it consumes."""

    def excluded_nodes(self, job: JobView) -> frozenset[int]:
        """Nodes (indices) the job may not be given now, whatever their free resources,
        e.g. nodes reserved for others.  Applied like ``--exclude`` before any node
        search, by the main scheduler and backfill, so every later plugin's
        ``candidates`` already leave them out.  Required nodes are the plugin's business
        (refuse the job in :meth:`job_gate`)."""
        return frozenset()

    def exempt_partition_limit(self, job: JobView, reason: str) -> bool:
        """Whether ``job`` may go past its partition's ``reason`` (PartitionTimeLimit or
        PartitionNodeLimit): the QOS flags PartitionTimeLimit / PartitionMaxNodes /
        PartitionMinNodes (Slurm's resource_limits.html, "Hierarchy").  The plugin that says yes
        enforces the QOS's own bound in :meth:`job_gate`."""
        return False


NodeKey = Callable[[NodeView], tuple[int, ...]]


def node_order_key(node: NodeView) -> tuple[int, ...]:
    """The order nodes are allocated in: lowest Weight first, then index (name order).

    Power saving puts "powered up, powering up, powered down" in front of Weight by
    passing another key to :func:`schedule` (or changing this one).
    """
    return (node.weight, node.index)


# slurmctld's TOP_PRIORITY: priority/basic gives each new job one less than the last, from
# here down, so the numbers stay in the 32 bits Slurm's tools print and parse.
TOP_PRIORITY = 0xFFFF0000


def job_priority(job: JobView, partition: PartitionView | None, now: float) -> int:
    """The job's priority (priority/basic): higher runs first.

    An explicit ``job.priority`` wins.  Otherwise submit order, counting down from
    ``TOP_PRIORITY - 1`` by job id as slurmctld counts down from its last job, less the
    job's nice as Slurm's priority/basic takes it off, and at least 1 (0 is a held job's).
    PriorityTier is not in the number: the pass sorts by it first, as Slurm does.
    Multifactor priority replaces this function.
    """
    if job.priority:
        return job.priority
    return max(1, TOP_PRIORITY - job.job_id - job.nice)


# --------------------------------------------------------------------------- per-job rules


def resolve_time_limit(job: JobView, partition: PartitionView | None) -> int | None:
    """Minutes, or None for INFINITE: the job's own (0 = INFINITE), else DefaultTime, else MaxTime."""
    if job.time_limit is not None:
        return job.time_limit or None
    if partition is None:
        return None
    if partition.default_time is not None:
        return partition.default_time
    return partition.max_time


def node_count(job: JobView) -> int:
    return max(job.min_nodes, len(job.req_nodes), 1)


def cpu_layout(job: JobView, nodes: int) -> tuple[int, list[int]]:
    """(CPUs every node must have free, CPUs charged per node in allocation order)."""
    return cpu_layout_of(nodes, job.num_tasks, job.cpus_per_task)


def missed_deadline(now: float, deadline: float, time_min: int | None, time_limit: int | None) -> bool:
    """sbatch(1) --deadline: "remove the job if no ending is possible before this deadline
    (start > (deadline - time[-min]))"; --time-min counts, else the time limit (a job
    without one only needs to start before it). Times in epoch seconds, limits in minutes."""
    minutes = time_min if time_min is not None else (time_limit or 0)
    return now + 60 * minutes > deadline


def cpu_layout_of(nodes: int, num_tasks: int, cpus_per_task: int) -> tuple[int, list[int]]:
    """:func:`cpu_layout` of a request not made a JobView yet (--mem-per-cpu's charge)."""
    cpt = max(cpus_per_task, 1)
    tasks = max(num_tasks, nodes)
    base, extra = divmod(tasks, nodes)
    need = (base + (1 if extra else 0)) * cpt
    return need, [(base + 1) * cpt] * extra + [base * cpt] * (nodes - extra)


WHOLE_MEM = -1  # a memory request of all of the node's memory (--mem=0)


def mem_request(job: JobView, default_mem: int) -> int:
    """MB per node, or WHOLE_MEM."""
    if job.mem_per_node is None:
        return default_mem
    return job.mem_per_node if job.mem_per_node > 0 else WHOLE_MEM


_FEATURE = re.compile(r"^[A-Za-z0-9_.:+\-]+$")


def split_features(text: str | None) -> frozenset[str]:
    """A node's feature list (``rack1,fast``) as a set."""
    return frozenset(f.strip() for f in (text or "").split(",") if f.strip())


def parse_constraint(expr: str) -> tuple[frozenset[str], ...] | None:
    """``a``, ``a&b``, ``a|b&c``, ``(a|b)&c``: alternatives of features all required
    (cluster.core.constraints).  ``()`` for no constraint; None for what this core does
    not support (brackets, counts, ``!``), which submission refuses."""
    try:
        return constraints.parse(expr)
    except constraints.ConstraintError:
        return None


def _has_features(node: NodeView, dnf: tuple[frozenset[str], ...]) -> bool:
    return not dnf or any(alt <= node.features for alt in dnf)


def _partition_limit(job: JobView, partition: PartitionView) -> str | None:
    limit = resolve_time_limit(job, partition)
    if partition.max_time is not None and (limit is None or limit > partition.max_time):
        return Reason.PARTITION_TIME_LIMIT
    n = node_count(job)
    if (
        n > len(partition.node_indices)
        or (partition.max_nodes is not None and n > partition.max_nodes)
        or n < partition.min_nodes
    ):
        return Reason.PARTITION_NODE_LIMIT
    return None


def validate_against_partition(
    job: JobView, partition: PartitionView, nodes: Sequence[NodeView] | Mapping[int, NodeView]
) -> str | None:
    """The reason ``job`` can never run in ``partition`` as configured, or None.

    ``PartitionTimeLimit``, ``PartitionNodeLimit``, or ``BadConstraints`` when no ``N``
    nodes of the partition (whatever their state) have the CPUs, memory and features asked
    for.  Used at submit time (Slurm refuses such a job unless limits are not enforced) and
    by every pass.  ``nodes`` is indexed by node index.
    """
    reason = _partition_limit(job, partition)
    if reason:
        return reason
    dnf = parse_constraint(job.features)
    if dnf is None:
        return Reason.BAD_CONSTRAINTS
    if job.req_nodes & job.exc_nodes:
        return Reason.BAD_CONSTRAINTS
    n = node_count(job)
    need_cpus, _ = cpu_layout(job, n)
    mem = mem_request(job, 0)
    capable = 0
    for i in partition.node_indices:
        node = nodes[i]
        if node.name in job.exc_nodes or not _has_features(node, dnf):
            continue
        if node.cpus >= need_cpus and node.real_memory >= mem:
            capable += 1
    return Reason.BAD_CONSTRAINTS if capable < n else None


# --------------------------------------------------------------------------- the pass


PriorityFn = Callable[[JobView, PartitionView | None, float], int]


def schedule(
    snapshot: Snapshot,
    plugins: Sequence[SchedulerPlugin] = (),
    *,
    node_key: NodeKey = node_order_key,
    priority: PriorityFn = job_priority,
    clock: Callable[[], float] | None = None,
) -> PassResult:
    """One scheduler pass at ``snapshot.now``; see the module docstring.  ``priority``
    replaces priority/basic (:func:`job_priority`), e.g. with priority/multifactor.

    ``clock`` (seconds) measures the main loop's ``max_sched_time``: once it is spent the
    loop tries no more jobs, as Slurm's main scheduler breaks out of a loop taking too
    long; those jobs wait with reason Priority for the next pass (backfill may still
    start them, as it may the jobs past ``sched_max_job_start``).  Without a clock, or
    with a clock that does not move while a pass runs (the simulator's virtual one), the
    budget never runs out."""
    return _Pass(snapshot, plugins, node_key, priority, clock).run()


def _never() -> bool:
    return False


# is_usable's test of the base state, by its value: NodeBase(value) per node was most of it.
_BASE_USABLE = {b.value: is_usable(b, 0) for b in NodeBase}


class _Order:
    """A partition's nodes with one feature constraint, in allocation order.  Kept with the
    node side between passes (``_NodeSide.order``); each pass works on its own
    :meth:`for_pass` copy, whose ``pos`` is the pass's."""

    __slots__ = ("capable", "every", "every_set", "min_cpus", "min_mem", "pos", "usable")

    def __init__(self, every: list[int], usable: list[int], cap_cpus: list[int], cap_mem: list[int]) -> None:
        self.every = every  # whatever their state: for "can this ever run" checks
        self.every_set = frozenset(every)
        self.min_cpus = min((cap_cpus[i] for i in every), default=0)
        self.min_mem = min((cap_mem[i] for i in every), default=0)
        self.usable = usable
        self.pos = 0  # usable[:pos] are known to have no free CPU for the main scheduler
        # (CPUs, MB) -> how many nodes could hold one share: depends on the node sizes
        # alone, so shared by the passes that keep the order.
        self.capable: dict[tuple[int, int], int] = {}

    def for_pass(self) -> _Order:
        order = object.__new__(_Order)
        order.every = self.every
        order.every_set = self.every_set
        order.min_cpus = self.min_cpus
        order.min_mem = self.min_mem
        order.usable = self.usable
        order.capable = self.capable
        order.pos = 0
        return order


class _Shape:
    """A pending job's request resolved against its partition (shared by equal requests)."""

    __slots__ = ("charges", "constraint", "duration", "limit", "mem", "need", "nodes", "order", "time_limit")

    def __init__(
        self, nodes: int, need: int, charges: tuple[int, ...], mem: int, time_limit: int | None
    ) -> None:
        self.nodes = nodes
        self.need = need  # CPUs free on every node
        self.charges = charges  # CPUs charged per node, ascending node index
        self.mem = mem  # MB per node, or WHOLE_MEM
        self.time_limit = time_limit  # resolved minutes, None = INFINITE
        self.duration = time_limit * 60 if time_limit is not None else INF  # seconds
        self.limit: Blocked | None = None  # PartitionTimeLimit / PartitionNodeLimit
        self.constraint: Blocked | None = None  # BadConstraints
        self.order: _Order | None = None


class _Part:
    __slots__ = ("blocked", "members", "run_state", "view")

    def __init__(self, view: PartitionView, members: frozenset[int]) -> None:
        self.view = view
        self.members = members
        self.blocked = False
        self.run_state = view.state.upper()


class _Pass:
    def __init__(
        self,
        snap: Snapshot,
        plugins: Sequence[SchedulerPlugin],
        node_key: NodeKey,
        priority: PriorityFn = job_priority,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.snap = snap
        self.now = snap.now
        self.cfg = snap.config
        self.clock = clock
        self.priority = priority
        self.plugins = tuple(plugins)
        self.exempting = [
            p
            for p in self.plugins
            if type(p).exempt_partition_limit is not SchedulerPlugin.exempt_partition_limit
        ]
        self.reserving = [p for p in self.plugins if hasattr(p, "may_reserve")]
        self.gating = any(type(p).job_gate is not SchedulerPlugin.job_gate for p in self.plugins)
        self.selecting = [p for p in self.plugins if type(p).select_nodes is not SchedulerPlugin.select_nodes]
        self.starting = [p for p in self.plugins if type(p).on_start is not SchedulerPlugin.on_start]
        self.excluding = [
            p for p in self.plugins if type(p).excluded_nodes is not SchedulerPlugin.excluded_nodes
        ]

        # The node side (sizes, usable, allocation orders) and what the holding jobs hold,
        # kept from the last pass and brought up to date by what changed since.
        self.side = side = _side_for(snap.nodes, node_key)
        self.node_at = side.node_at
        self.cap_cpus = side.cap_cpus
        self.cap_mem = side.cap_mem
        self.usable = side.usable
        self.held = _holdings_for(snap, side, want_table=bool(snap.config.backfill and snap.pending))
        self.timeouts = self.held.timeouts(self.now)
        # Free resources; the main scheduler works on copies where unusable nodes and the
        # nodes of blocked partitions read -1, so its scan is two comparisons per node.
        free_cpus, free_mem, main_cpus, main_mem = self.held.free_arrays(side)
        self.free_cpus = free_cpus.copy()
        self.free_mem = free_mem.copy()
        self.main_cpus = main_cpus.copy()
        self.main_mem = main_mem.copy()
        self.parts = {name: _Part(p, side.members(p)) for name, p in snap.partitions.items()}
        self.node_key = node_key
        self.orders: dict[tuple[str, str], _Order | None] = {}
        self.shapes: dict[tuple, _Shape] = {}
        self.starts: list[Start] = []
        self.fit_attempts = 0
        self.depend_facts = snap.depend_facts or dependencies.Facts()
        self.dependency_text: dict[int, str] = {}

    @cached_property
    def index_of(self) -> dict[str, int]:
        """Node name -> index, for the jobs that name nodes (--nodelist, --exclude)."""
        return self.side.index_of()

    # -- helpers ---------------------------------------------------------------------

    def _order(self, part: _Part, features: str) -> _Order | None:
        """The allocation order for (partition, constraint), this pass's copy of the kept
        one; None if the syntax is bad."""
        key = (part.view.name, features)
        order = self.orders.get(key, False)
        if order is not False:
            return order
        kept = self.side.order(part.view, features)
        result = self.orders[key] = kept.for_pass() if kept is not None else None
        return result

    def _capable(self, order: _Order, need_cpus: int, mem: int, exc: frozenset[int]) -> int:
        """How many nodes (any state) could ever hold one share of the job."""
        if need_cpus <= order.min_cpus and mem <= order.min_mem:
            return len(order.every_set - exc) if exc else len(order.every)
        cc = self.cap_cpus
        cm = self.cap_mem
        key = (need_cpus, mem)
        if not exc and key in order.capable:
            return order.capable[key]
        count = sum(1 for i in order.every if cc[i] >= need_cpus and cm[i] >= mem and i not in exc)
        if not exc:
            order.capable[key] = count
        return count

    # -- the pass ----------------------------------------------------------------------

    def run(self) -> PassResult:
        snap = self.snap
        now = self.now
        spent = self._budget()
        for p in self.plugins:
            p.begin_pass(snap)
        timeouts = self.timeouts

        ranked = []
        for pos, job in enumerate(snap.pending):
            part = self.parts.get(job.partition)
            view = part.view if part else None
            prio = self.priority(job, view, now)
            tier = view.priority_tier if view else 0
            ranked.append((-tier, -prio, job.job_id, pos))
        ranked.sort()

        decisions: dict[int, Pending] = {}
        waiting: list[tuple[JobView, _Part, _Shape, int]] = []  # Resources/Priority: backfill may start them
        expired: list[int] = []
        limit = self.cfg.max_starts_per_pass
        untried = 0
        for _, neg_prio, _, pos in ranked:
            job = snap.pending[pos]
            if job.deadline is not None and self._missed_deadline(job):
                expired.append(job.job_id)  # held or not, as Slurm removes it
                continue
            prio = -neg_prio
            part = self.parts.get(job.partition)
            shape = self._static_reason(job, part)
            if type(shape) is Blocked:
                # A held job's priority is 0 until released, as Slurm shows it (and as
                # hold and submission store it: nothing to write back each pass).
                shown = 0 if job.hold else prio
                decisions[job.job_id] = Pending(job.job_id, shape.reason, shape.detail, shown)
                continue
            assert part is not None and type(shape) is _Shape
            if self.gating:
                verdict = self._gate(job, part)
                if verdict is not None:
                    decisions[job.job_id] = Pending(job.job_id, verdict.reason, verdict.detail, prio)
                    continue
            # A job of a reservation runs on nodes set aside for it: a blocked partition
            # does not hold it back, and its failing does not block the partition.
            if (part.blocked and not job.reservation) or (limit is not None and len(self.starts) >= limit):
                decisions[job.job_id] = Pending(job.job_id, Reason.PRIORITY, "", prio)
                waiting.append((job, part, shape, prio))
                continue
            if untried or spent():
                untried += 1
                decisions[job.job_id] = Pending(job.job_id, Reason.PRIORITY, "", prio)
                waiting.append((job, part, shape, prio))
                continue
            self.fit_attempts += 1
            outcome = self._try_main(job, part, shape, prio)
            if outcome is None:
                continue  # started
            decisions[job.job_id] = Pending(job.job_id, outcome.reason, outcome.detail, prio)
            if outcome.reason == Reason.RESOURCES:
                if not job.reservation:
                    self._block(part, self._avoid(job) if self.excluding else frozenset())
                waiting.append((job, part, shape, prio))

        bf_tested = reservations = 0
        # The main loop's start limit is its own: backfill may still start the jobs it
        # did not reach, within bf_max_job_start (as Slurm's backfill thread does).
        if self.cfg.backfill and waiting:
            bf_tested, reservations = self._backfill(waiting, decisions)

        gone = {s.job_id for s in self.starts}.union(expired)
        pending = tuple(
            decisions[snap.pending[pos].job_id] for *_, pos in ranked if snap.pending[pos].job_id not in gone
        )
        stats = PassStats(
            considered=len(snap.pending),
            started=len(self.starts),
            backfilled=sum(1 for s in self.starts if s.backfill),
            bf_tested=bf_tested,
            reservations=reservations,
            timeouts=len(timeouts),
            fit_attempts=self.fit_attempts,
            untried=untried,
        )
        kills = tuple(k for p in self.plugins for k in getattr(p, "kills", ()))
        accrue = frozenset(i for p in self.plugins for i in getattr(p, "accrue_start", ()))
        return PassResult(
            tuple(self.starts), pending, timeouts, stats, kills, accrue, self.dependency_text, tuple(expired)
        )

    def _budget(self) -> Callable[[], bool]:
        """Whether the main loop's max_sched_time, counted from now, is spent."""
        clock, seconds = self.clock, self.cfg.max_sched_time
        if clock is None or seconds is None:
            return _never
        spent_at = clock() + seconds
        return lambda: clock() >= spent_at

    def _missed_deadline(self, job: JobView) -> bool:
        assert job.deadline is not None
        return missed_deadline(self.now, job.deadline, job.time_min, job.time_limit)

    def _shape(self, job: JobView, part: _Part) -> _Shape:
        """The job's request resolved against its partition, cached: a queue holds many
        jobs of the same shape, so most jobs cost one dict lookup here."""
        key = (
            part.view.name,
            job.features,
            job.min_nodes,
            len(job.req_nodes),
            job.max_nodes,
            job.num_tasks,
            job.cpus_per_task,
            job.mem_per_node,
            job.time_limit,
        )
        shape = self.shapes.get(key)
        if shape is None:
            shape = self.shapes[key] = self._new_shape(job, part)
        return shape

    def _new_shape(self, job: JobView, part: _Part) -> _Shape:
        n = node_count(job)
        need, charges = cpu_layout(job, n)
        mem = mem_request(job, self.cfg.default_mem_per_node)
        limit = resolve_time_limit(job, part.view)
        shape = _Shape(n, need, tuple(charges), mem, limit)
        reason = _partition_limit(job, part.view)
        if reason:
            # Kept going: a plugin may exempt the job (QOS PartitionTimeLimit and the like).
            shape.limit = Blocked(reason)
        order = self._order(part, job.features)
        if order is None:
            shape.constraint = Blocked(Reason.BAD_CONSTRAINTS, f"unsupported constraint {job.features!r}")
        elif not order.every:
            shape.constraint = Blocked(
                Reason.BAD_CONSTRAINTS, f"no node of {part.view.name} has {job.features}"
            )
        else:
            shape.order = order
            if self._capable(order, need, max(mem, 0), frozenset()) < n:
                shape.constraint = Blocked(
                    Reason.BAD_CONSTRAINTS, f"no {n} nodes of {part.view.name} fit the request"
                )
        return shape

    def _static_reason(self, job: JobView, part: _Part | None) -> Blocked | _Shape:
        """The cheap per-job checks, in the order Slurm reports them; the shape if all pass."""
        if job.hold:
            return Blocked(Reason.JOB_HELD_USER if job.hold == "user" else Reason.JOB_HELD_ADMIN)
        # Dependencies before BeginTime, as Slurm's job_independent tests them.
        if job.dependency is not None:
            waits = self._dependency(job)
            if waits is not None:
                return waits
        if job.begin_time is not None and job.begin_time > self.now:
            return Blocked(Reason.BEGIN_TIME)
        if part is None:
            return Blocked(Reason.PARTITION_DOWN, f"partition {job.partition} does not exist")
        if part.run_state == "DOWN":
            return Blocked(Reason.PARTITION_DOWN)
        if part.run_state == "INACTIVE":
            return Blocked(Reason.PARTITION_INACTIVE)
        shape = self._shape(job, part)
        if shape.limit is not None and not (
            self.exempting and any(p.exempt_partition_limit(job, shape.limit.reason) for p in self.exempting)
        ):
            return shape.limit
        if job.req_nodes:
            bad = sorted(
                name
                for name in job.req_nodes
                if (i := self.index_of.get(name)) is None or i not in part.members or not self.usable[i]
            )
            if bad:
                return Blocked(Reason.REQ_NODE_NOT_AVAIL, "UnavailableNodes:" + ",".join(bad))
        if shape.constraint is not None:
            return shape.constraint
        if job.req_nodes:
            assert shape.order is not None
            misfit = self._req_misfit(job, shape, shape.order)
            if misfit:
                return Blocked(Reason.BAD_CONSTRAINTS, misfit)
        if job.exc_nodes:
            assert shape.order is not None
            if self._capable(shape.order, shape.need, max(shape.mem, 0), self._exc(job)) < shape.nodes:
                return Blocked(
                    Reason.BAD_CONSTRAINTS, f"no {shape.nodes} nodes of {part.view.name} fit the request"
                )
        return shape

    def _dependency(self, job: JobView) -> Blocked | None:
        """Evaluate the job's dependency against the pass's facts: O(its terms)."""
        dep = job.dependency
        assert dep is not None
        outcome = dependencies.evaluate(
            dep,
            dependencies.Dependent(job.job_id, job.user, job.name, job.array_task_id),
            self.depend_facts,
            self.now,
        )
        reason = dependencies.reason_of(outcome.verdict)
        text = outcome.text()
        if outcome.dependency is not dep or reason is None:
            self.dependency_text[job.job_id] = text
        return Blocked(reason, text) if reason else None

    def _req_misfit(self, job: JobView, shape: _Shape, order: _Order) -> str:
        """Why a required node can never take the job ("" if they all can)."""
        for name in sorted(job.req_nodes):
            i = self.index_of[name]
            if name in job.exc_nodes:
                return f"required node {name} is excluded"
            if i not in order.every_set:
                return f"required node {name} lacks {job.features}"
            mem = self.cap_mem[i] if shape.mem == WHOLE_MEM else shape.mem
            if self.cap_cpus[i] < shape.need or self.cap_mem[i] < mem:
                return f"required node {name} is too small"
        return ""

    def _exc(self, job: JobView) -> frozenset[int]:
        if not job.exc_nodes:
            return frozenset()
        return frozenset(i for name in job.exc_nodes if (i := self.index_of.get(name)) is not None)

    def _avoid(self, job: JobView) -> frozenset[int]:
        """``--exclude`` plus what plugins withhold from this job (reserved nodes)."""
        out = self._exc(job)
        for p in self.excluding:
            extra = p.excluded_nodes(job)
            if extra:
                out = out | extra
        return out

    def _req(self, job: JobView) -> list[int]:
        return sorted(self.index_of[name] for name in job.req_nodes)

    def _selects(self, job: JobView) -> bool:
        return any(p.selects(job) for p in self.selecting)

    def _gate(self, job: JobView, part: _Part | None) -> Blocked | None:
        assert part is not None
        for p in self.plugins:
            verdict = p.job_gate(job, part.view)
            if verdict is not None:
                return verdict
        return None

    def _block(self, part: _Part, spare: frozenset[int] = frozenset()) -> None:
        """Withhold the partition's nodes from the rest of the main scheduler, except the
        ``spare`` ones the blocking job could not have used (reserved for others)."""
        part.blocked = True
        mc = self.main_cpus
        mm = self.main_mem
        kept = [(i, mc[i], mm[i]) for i in spare if i in part.members]
        # Slice by slice (a partition is mostly a few runs of indexes), not node by node.
        for a, b in self.side.spans(part.view):
            mc[a:b] = mm[a:b] = [-1] * (b - a)
        for i, c, m in kept:
            mc[i] = c
            mm[i] = m

    # -- main scheduler ------------------------------------------------------------------

    def _try_main(self, job: JobView, part: _Part, shape: _Shape, prio: int) -> Blocked | None:
        """Start the job now if it fits; None when started, else why not."""
        order = shape.order
        assert order is not None
        n = shape.nodes
        need = shape.need
        mem = shape.mem
        mc = self.main_cpus
        mm = self.main_mem
        cap = self.cap_mem
        usable = order.usable
        # Skip the prefix of nodes with no CPU left: resources only shrink during the main
        # scheduler, so the prefix only grows.
        pos = order.pos
        while pos < len(usable) and mc[usable[pos]] <= 0:
            pos += 1
        order.pos = pos

        req = self._req(job) if job.req_nodes else []
        exc = self._avoid(job) if job.exc_nodes or self.excluding else None
        whole = job.exclusive
        cc = self.cap_cpus
        for i in req:
            if whole and not (mc[i] >= cc[i] >= need and mm[i] >= cap[i] >= max(mem, 0)):
                return Blocked(Reason.RESOURCES)
            if mc[i] < need or mm[i] < (cap[i] if mem == WHOLE_MEM else mem):
                return Blocked(Reason.RESOURCES)
        want = n - len(req)
        full = self._selects(job)
        picked: list[int] = []
        if want or full:
            skip = (exc or frozenset()) | frozenset(req) if (exc or req) else None
            it = self._fitting(usable, pos, need, mem, whole)
            if whole:
                # Nothing allocated on the node (an unusable or withheld node reads -1).
                floor = max(mem, 0)
                for i in it:
                    free = mc[i] >= cc[i] >= need and mm[i] >= cap[i] >= floor
                    if free and (skip is None or i not in skip):
                        picked.append(i)
                        if not full and len(picked) >= want:
                            break
            elif mem == WHOLE_MEM:
                for i in it:
                    if mc[i] >= need and mm[i] >= cap[i] and (skip is None or i not in skip):
                        picked.append(i)
                        if not full and len(picked) >= want:
                            break
            else:
                for i in it:
                    if mc[i] >= need and mm[i] >= mem and (skip is None or i not in skip):
                        picked.append(i)
                        if not full and len(picked) >= want:
                            break
            if len(picked) < want:
                return Blocked(Reason.RESOURCES)
        candidates = req + picked
        proposal = tuple(req + picked[:want])
        chosen = self._select(job, candidates, n, proposal, req)
        if isinstance(chosen, Blocked):
            return chosen
        self._start(job, shape, prio=prio, chosen=chosen, backfill=False)
        return None

    def _fitting(self, usable: list[int], pos: int, need: int, mem: int, whole: bool) -> Iterator[int]:
        """The nodes of ``usable[pos:]`` in order, but for some that cannot hold one share
        of the request (``need`` CPUs at least 1, ``mem``, ``whole``) now: those that had
        it free before the pass as backfill keeps them (BaseReady.free_now: the pass only
        takes resources), else the nodes with ``need`` CPUs free, found at C speed.  Each
        is tested again by the caller."""
        mc = self.main_cpus
        if need >= 1:
            request = (need, max(mem, 0), mem == WHOLE_MEM, whole)
            base = self.held.base_ready(self.side, usable, request, build=not self.held.fresh)
            if base is not None and base.candidates is usable and base.free_now is not None:
                # Those of usable[:pos] it lists have no CPU left now: tested, passed over.
                return iter(base.free_now)
        return compress(
            islice(usable, pos, None),
            map(le, repeat(need), map(mc.__getitem__, islice(usable, pos, None))),
        )

    def _select(
        self, job: JobView, candidates: Sequence[int], count: int, proposal: tuple[int, ...], req: list[int]
    ) -> tuple[int, ...] | Blocked:
        chosen = proposal
        selecting = [p for p in self.selecting if p.selects(job)] if self.selecting else ()
        if selecting:
            allowed = set(candidates)
            for p in selecting:
                verdict = p.select_nodes(job, candidates, count, chosen)
                if isinstance(verdict, Blocked):
                    return verdict
                if len(verdict) != count or len(set(verdict)) != count or not allowed.issuperset(verdict):
                    raise ValueError(f"{type(p).__name__}.select_nodes returned a bad node set {verdict!r}")
                if not set(req).issubset(verdict):
                    raise ValueError(f"{type(p).__name__}.select_nodes dropped a required node")
                chosen = tuple(verdict)
        return chosen

    def _start(
        self,
        job: JobView,
        shape: _Shape,
        *,
        prio: int,
        chosen: Sequence[int],
        backfill: bool,
    ) -> Start:
        nodes = tuple(sorted(chosen))
        mem = shape.mem
        mems = tuple([self.cap_mem[i] for i in nodes]) if mem == WHOLE_MEM else (mem,) * len(nodes)
        cpus = shape.charges
        if job.exclusive:  # the whole node: every CPU and all its memory
            cpus = tuple([self.cap_cpus[i] for i in nodes])
            mems = tuple([self.cap_mem[i] for i in nodes])
        fc, fm, mc, mm = self.free_cpus, self.free_mem, self.main_cpus, self.main_mem
        for i, c, m in zip(nodes, cpus, mems, strict=True):
            fc[i] -= c
            fm[i] -= m
            mc[i] -= c
            mm[i] -= m
        start = Start(job.job_id, nodes, cpus, mems, shape.time_limit, prio, backfill)
        self.starts.append(start)
        for p in self.starting:
            p.on_start(job, start)
        return start

    # -- backfill ------------------------------------------------------------------------

    def _backfill(
        self, waiting: list[tuple[JobView, _Part, _Shape, int]], decisions: dict[int, Pending]
    ) -> tuple[int, int]:
        now = self.now
        timeline = Timeline(
            now=now,
            window=self.cfg.bf_window * 60,
            free_cpus=self.free_cpus,
            free_mem=self.free_mem,
            cap_mem=self.cap_mem,
            cap_cpus=self.cap_cpus,
        )
        timeline.borrow_releases(*self._releases())
        # Ready times kept from earlier passes, but on the nodes this pass started jobs on.
        timeline.base_ready = partial(self.held.base_ready, self.side)
        timeline.free_now = partial(self.held.base_ready, self.side, build=not self.held.fresh)
        timeline.dirty = {i for start in self.starts for i in start.node_indices}

        limit = self.cfg.bf_max_job_start
        tested = reserved = started = 0
        for job, part, shape, prio in waiting:
            if tested >= self.cfg.bf_max_job_test or (limit is not None and started >= limit):
                break
            tested += 1
            if self.gating:
                verdict = self._gate(job, part)
                if verdict is not None:
                    decisions[job.job_id] = Pending(job.job_id, verdict.reason, verdict.detail, prio)
                    continue
            assert shape.order is not None
            n = shape.nodes
            duration = shape.duration
            req = self._req(job) if job.req_nodes else []
            plan = timeline.plan(
                shape.order.usable,
                count=n,
                cpus=shape.need,
                mem=max(shape.mem, 0),
                whole_mem=shape.mem == WHOLE_MEM,
                whole_node=job.exclusive,
                duration=duration,
                required=req,
                excluded=self._avoid(job),
                all_now=self._selects(job),
            )
            if plan is None:
                continue
            if plan.immediate:
                proposal = _proposal(plan.nodes, req, n)
                chosen = self._select(job, plan.nodes, n, proposal, req)
                if isinstance(chosen, Blocked):
                    if chosen.reason != Reason.RESOURCES:
                        decisions[job.job_id] = Pending(job.job_id, chosen.reason, chosen.detail, prio)
                    continue
                start = self._start(job, shape, prio=prio, chosen=chosen, backfill=True)
                started += 1
                end = now + duration
                for i, c, m in zip(start.node_indices, start.cpus_per_node, start.mem_per_node, strict=True):
                    timeline.add_release(i, end, c, m)
                continue
            # MinPrioThreshold / bf_min_prio_reserve: low-priority jobs get no reservation.
            if self.reserving and not all(p.may_reserve(job, prio) for p in self.reserving):
                continue
            timeline.reserve(plan.nodes, plan.start, duration)
            reserved += 1
            old = decisions[job.job_id]
            decisions[job.job_id] = Pending(
                job.job_id, old.reason, old.detail, prio, plan.start, tuple(sorted(plan.nodes))
            )
        return tested, reserved

    def _releases(self) -> tuple[Releases, set[int]]:
        """Node index -> (end, CPUs, MB) of what the holding jobs and this pass's starts
        give back, at their expected ends, never-ending ones left out; and the nodes whose
        lists are new (the others are kept for later passes: not to be changed)."""
        table, owned = self.held.release_lists(self.now)
        now = self.now
        for start in self.starts:
            if start.time_limit is None:
                continue
            end = now + start.time_limit * 60
            for i, c, m in zip(start.node_indices, start.cpus_per_node, start.mem_per_node, strict=True):
                events = table.get(i)
                if events is None:
                    events = table[i] = []
                    owned.add(i)
                elif i not in owned:
                    events = table[i] = events.copy()
                    owned.add(i)
                insort(events, (end, c, m))
        return table, owned


# --------------------------------------------------------------------------- kept between passes


class _NodeSide:
    """What a pass reads of the nodes alone: per-node sizes and usability, the partitions'
    node sets, name -> index, and the allocation orders of (partition, constraint), built
    as passes first ask for them.  Kept for the next pass on the same node views
    (:func:`_side_for`); a pass after a few nodes changed gets a copy with those nodes'
    entries replaced and every order they could move dropped, not a rebuild (a 10,000-node
    partition's order is a filter and a sort of all its nodes).  Lists and orders are
    never changed once a pass may read them (another thread's pass may share them)."""

    __slots__ = (
        "alloc",
        "came_from",
        "cap_cpus",
        "cap_mem",
        "names",
        "node_at",
        "node_key",
        "nodes",
        "orders",
        "parts",
        "spans_of",
        "usable",
    )

    def __init__(self, nodes: tuple[NodeView, ...], node_key: NodeKey) -> None:
        self.nodes = nodes
        self.node_key = node_key
        size = max((n.index for n in nodes), default=-1) + 1
        self.node_at: list[NodeView | None] = [None] * size
        self.cap_cpus = cap_cpus = [0] * size
        self.cap_mem = cap_mem = [0] * size
        self.usable = usable = [False] * size
        # What the node views themselves say is allocated, where they say anything.
        self.alloc: dict[int, tuple[int, int]] = {}
        node_at = self.node_at
        base_ok = _BASE_USABLE
        try:
            for n in nodes:
                i = n.index
                node_at[i] = n
                cap_cpus[i] = n.cpus
                cap_mem[i] = n.real_memory
                usable[i] = base_ok[n.base] and not n.flags & UNUSABLE_FLAGS
                if n.alloc_cpus or n.alloc_mem:
                    self.alloc[i] = (n.alloc_cpus, n.alloc_mem)
        except KeyError:
            for n in nodes:
                is_usable(n.base, n.flags)  # ValueError: a base state that does not exist
            raise
        self.names: dict[str, int] | None = None
        # The side this one was updated from and the nodes that changed: what is kept
        # per side (free arrays, backfill's ready times) is patched on those nodes.
        self.came_from: tuple[_NodeSide, frozenset[int]] | None = None
        self.parts: dict[str, tuple[PartitionView, frozenset[int]]] = {}
        self.spans_of: dict[str, tuple[PartitionView, list[tuple[int, int]]]] = {}
        self.orders: dict[tuple[str, str], tuple[PartitionView, _Order | None]] = {}

    def updated(self, nodes: tuple[NodeView, ...]) -> _NodeSide | None:
        """This side for ``nodes``, the same nodes at the same places with some views
        replaced; None when a node moved, came or went (build anew)."""
        old = self.nodes
        if len(old) != len(nodes):
            return None
        changed = list(compress(range(len(nodes)), map(is_not, old, nodes)))
        if len(changed) > len(nodes) // 4:
            return None
        side = object.__new__(_NodeSide)
        side.nodes = nodes
        side.node_key = key = self.node_key
        side.node_at = self.node_at.copy()
        side.cap_cpus = self.cap_cpus.copy()
        side.cap_mem = self.cap_mem.copy()
        side.usable = self.usable.copy()
        side.alloc = self.alloc.copy()
        side.names = self.names
        side.parts = self.parts.copy()
        side.spans_of = self.spans_of  # the members' runs: the same for the same size
        moved: set[int] = set()  # nodes whose place in an order or whose size changed
        base_ok = _BASE_USABLE
        for k in changed:
            was, n = old[k], nodes[k]
            i = n.index
            if was.index != i:
                return None
            if n.base not in base_ok:
                return None  # the full build raises the error
            side.node_at[i] = n
            side.cap_cpus[i] = n.cpus
            side.cap_mem[i] = n.real_memory
            ok = base_ok[n.base] and not n.flags & UNUSABLE_FLAGS
            if (
                ok != side.usable[i]
                or was.cpus != n.cpus
                or was.real_memory != n.real_memory
                or was.features != n.features
                or key(was) != key(n)
            ):
                moved.add(i)
            side.usable[i] = ok
            side.alloc.pop(i, None)
            if n.alloc_cpus or n.alloc_mem:
                side.alloc[i] = (n.alloc_cpus, n.alloc_mem)
            if was.name != n.name:
                side.names = None
        side.orders = {
            key: entry
            for key, entry in self.orders.items()
            if not moved or self._members(entry[0]).isdisjoint(moved)
        }
        side.came_from = (self, frozenset(nodes[k].index for k in changed))
        self.came_from = None  # one step back only: no chain of old sides kept alive
        return side

    def _members(self, view: PartitionView) -> frozenset[int]:
        size = len(self.cap_cpus)
        return frozenset(i for i in view.node_indices if 0 <= i < size)

    def members(self, view: PartitionView) -> frozenset[int]:
        """The partition's node indices that exist."""
        got = self.parts.get(view.name)
        if got is not None and (got[0] is view or got[0].node_indices == view.node_indices):
            return got[1]
        members = self._members(view)
        self.parts[view.name] = (view, members)
        return members

    def spans(self, view: PartitionView) -> list[tuple[int, int]]:
        """The partition's existing node indices as runs ``[a, b)``, in order."""
        got = self.spans_of.get(view.name)
        if got is not None and (got[0] is view or got[0].node_indices == view.node_indices):
            return got[1]
        spans: list[tuple[int, int]] = []
        for i in sorted(self.members(view)):
            if spans and spans[-1][1] == i:
                spans[-1] = (spans[-1][0], i + 1)
            else:
                spans.append((i, i + 1))
        self.spans_of[view.name] = (view, spans)
        return spans

    def index_of(self) -> dict[str, int]:
        names = self.names
        if names is None:
            names = self.names = {n.name: n.index for n in self.nodes}
        return names

    def order(self, view: PartitionView, features: str) -> _Order | None:
        """(partition, constraint)'s allocation order: nodes with the features by the
        node key; None if the syntax is bad."""
        key = (view.name, features)
        got = self.orders.get(key)
        if got is not None and (got[0] is view or got[0].node_indices == view.node_indices):
            return got[1]
        dnf = parse_constraint(features)
        if dnf is None:
            result = None
        else:
            nodes = [self.node_at[i] for i in self.members(view)]
            every = sorted((n for n in nodes if n is not None and _has_features(n, dnf)), key=self.node_key)
            result = _Order(
                [n.index for n in every],
                [n.index for n in every if self.usable[n.index]],
                self.cap_cpus,
                self.cap_mem,
            )
        self.orders[key] = (view, result)
        return result


# The node sides of the last passes, by node key (the live pass's power-saving order, a
# start estimate's default one): replaced whole, so a pass on another thread reads either
# the old or the new side, never half of one.
_sides: dict[NodeKey, _NodeSide] = {}


def _side_for(nodes: tuple[NodeView, ...], node_key: NodeKey) -> _NodeSide:
    kept = _sides.get(node_key)
    if kept is not None:
        if kept.nodes is nodes:
            return kept
        side = kept.updated(nodes)
        if side is not None:
            _sides[node_key] = side
            return side
    if len(_sides) >= 4:
        _sides.clear()  # a key made anew for every pass: keep none
    side = _sides[node_key] = _NodeSide(nodes, node_key)
    return side


def _held(job: JobView, cap_cpus: list[int]) -> tuple[Sequence[int], Sequence[int]]:
    """Per-node CPUs and memory a holding job occupies (its whole nodes if not given)."""
    k = len(job.node_indices)
    size = len(cap_cpus)
    cpus = job.alloc_cpus
    if len(cpus) != k:
        cpus = [cap_cpus[i] if 0 <= i < size else 0 for i in job.node_indices]
    mems = job.alloc_mem
    if len(mems) != k:
        mems = [0] * k
    return cpus, mems


# Node sides whose free arrays a holdings keeps: the live pass's and a start estimate's
# node orders, each with the side it was updated from.
_FREE_KEPT = 4

_ENDING = -INF  # a COMPLETING job's end: whenever the pass runs, it ends now
_RUNNING = JobState.RUNNING.value
_COMPLETING = JobState.COMPLETING.value

Releases = dict[int, list[tuple[float, int, int]]]
Mark = tuple[float, int, tuple[int, ...]]  # (expected end, job id, nodes)


class _Marks:
    """The RUNNING holding jobs' marks, sorted: a root list shared by the holdings derived
    from one another, under an overlay of their own (marks added, root marks gone) merged
    into a new root once it passes a sixteenth of it.  Deriving copies the overlay, not
    62,000 marks, and a job started or ended is a bisection into the overlay, not a shift
    of the whole list.  Never changed once a pass may read it but while being derived."""

    __slots__ = ("added", "gone", "root")

    def __init__(self, root: list[Mark]) -> None:
        self.root = root
        self.added: list[Mark] = []
        self.gone: dict[Mark, int] = {}  # root mark -> how many of its copies are gone

    def derived(self) -> _Marks:
        new = object.__new__(_Marks)
        if len(self.added) + len(self.gone) > 16 + len(self.root) // 16:
            root = self._visible(self.root)
            root += self.added
            root.sort()  # two sorted runs: a merge
            new.root, new.added, new.gone = root, [], {}
        else:
            new.root, new.added, new.gone = self.root, self.added.copy(), self.gone.copy()
        return new

    def add(self, mark: Mark) -> None:
        insort(self.added, mark)

    def remove(self, mark: Mark) -> bool:
        """Take one copy of ``mark`` away; False when there is none."""
        added = self.added
        k = bisect_left(added, mark)
        if k < len(added) and added[k] == mark:
            del added[k]
            return True
        root = self.root
        copies = bisect_right(root, mark) - bisect_left(root, mark)
        gone = self.gone.get(mark, 0)
        if copies <= gone:
            return False
        self.gone[mark] = gone + 1
        return True

    def before(self, bound: tuple) -> list[Mark]:
        """The marks below ``bound``, in no particular order."""
        root = self.root
        out = self._visible(root[: bisect_left(root, bound)])
        added = self.added
        out += added[: bisect_left(added, bound)]
        return out

    def _visible(self, marks: list[Mark]) -> list[Mark]:
        if not self.gone:
            return marks.copy() if marks is self.root else marks
        skip = self.gone.copy()
        out = []
        for mark in marks:
            if skip.get(mark):
                skip[mark] -= 1
                continue
            out.append(mark)
        return out


class _Holdings:
    """What a snapshot's holding jobs hold, apart from what depends on ``now``: the CPUs
    and memory allocated on every node, when each RUNNING job reaches its time limit, and
    the release lists backfill plans with (ends not yet raised to ``now``).  Built in one
    walk over the holding jobs (62,000 of them on 10,000 busy nodes: a large part of a
    pass), kept for the next pass (:func:`_holdings_for`), and for a pass on holding jobs
    that differ from the kept ones by a few views (jobs started, ended or changed) derived
    from them by taking those jobs out and in (:meth:`derived`) rather than built again.

    Expected ends: start + time spent paused + the limit (Slurm does not count suspended
    time); never for paused jobs and those without a start or a limit; now for COMPLETING
    jobs and those past their limit.  The limit is resolved once per (partition, own
    limit).  Nothing here changes once built but what is filled on first need (``lists``,
    ``free``, ``ready``; ``limit_at`` sorted once, into :class:`_Marks`), each entry set
    whole."""

    __slots__ = (
        "cap_cpus",
        "free",
        "fresh",
        "ids",
        "limit_at",
        "limit_sorted",
        "limits",
        "lists",
        "looked",
        "others",
        "partitions",
        "ready",
        "ready_from",
        "resolved",
        "running",
        "signed",
        "used_cpus",
        "used_mem",
    )

    def __init__(
        self, snap: Snapshot, cap_cpus: list[int], limits: tuple, ids: dict | None, *, want_table: bool
    ) -> None:
        self.running = snap.running
        # id(view) -> view; None until asked for (by_id), False when a view is listed twice
        self.ids: dict[int, JobView] | bool | None = ids
        self.cap_cpus = cap_cpus
        self.limits = limits
        self.partitions = snap.partitions
        self.resolved: dict[tuple[str, int | None], int | None] = {}
        # Free arrays per node side (the live pass's and a start estimate's node orders
        # differ, their nodes do not): see free_arrays.
        self.free: dict[_NodeSide, tuple[list[int], ...]] = {}
        # Built, not derived: a pass on these is a cold one, whose start-now searches do
        # not build backfill's kept times for their free nodes alone (see Timeline.free_now).
        self.fresh = True
        # Backfill's ready times against these holdings (BaseReady), by (id(candidates),
        # request), for one node side; and those of the holdings these were derived from,
        # with the nodes changed since, to patch rather than build.
        self.ready: dict[tuple, tuple[_NodeSide, BaseReady]] = {}
        self.ready_from: dict[tuple, tuple[_NodeSide, BaseReady, frozenset[int]]] = {}
        self.signed: bool | None = None  # whether a release gives back negative CPUs or MB
        size = len(cap_cpus)
        self.used_cpus = used_cpus = [0] * size
        self.used_mem = used_mem = [0] * size
        # (end, job id, nodes) of the RUNNING jobs with an end (sorted when first derived
        # from: a pass on these alone filters them), and of the others with one (few:
        # COMPLETING, CONFIGURING), sorted: the timeouts, and the nodes a release of
        # which comes before a pass's now.
        limit_at: list[tuple[float, int, tuple[int, ...]]] = []
        others: list[tuple[float, int, tuple[int, ...]]] = []
        table: Releases | None = {} if want_table else None
        signed = False
        running = _RUNNING
        completing = _COMPLETING
        paused = PAUSED_JOB_STATES
        resolved = self.resolved
        partitions = snap.partitions
        for job in snap.running:
            # As _end, inline: this loop is the whole of a cold pass's floor.
            state = job.state
            start = job.start_time
            at = job.node_indices
            if state == completing:
                end = _ENDING
                others.append((end, job.job_id, at))
            elif state in paused or start is None:
                end = INF
            else:
                key = (job.partition, job.time_limit)
                limit = resolved.get(key, -1)
                if limit == -1:
                    limit = resolved[key] = resolve_time_limit(job, partitions.get(job.partition))
                if limit is None:
                    end = INF
                else:
                    end = start + job.paused + limit * 60
                    (limit_at if state == running else others).append((end, job.job_id, at))
            cpus = job.alloc_cpus
            mems = job.alloc_mem
            k = len(at)
            if len(cpus) != k or len(mems) != k:
                cpus, mems = _held(job, cap_cpus)
            elif k == 1:  # most holding jobs: one node, given per node
                i = at[0]
                if 0 <= i < size:
                    c = cpus[0]
                    m = mems[0]
                    used_cpus[i] += c
                    used_mem[i] += m
                    if table is not None and end != INF:
                        if c < 0 or m < 0:
                            signed = True
                        events = table.get(i)
                        if events is None:
                            table[i] = [(end, c, m)]
                        else:
                            events.append((end, c, m))
                continue
            for i, c, m in zip(at, cpus, mems, strict=True):
                if 0 <= i < size:
                    used_cpus[i] += c
                    used_mem[i] += m
                    if table is not None and end != INF:
                        if c < 0 or m < 0:
                            signed = True
                        table.setdefault(i, []).append((end, c, m))
        self.limit_at = limit_at
        self.limit_sorted = False
        self.looked = False  # whether a pass has asked for the timeouts
        others.sort()
        self.others = others
        self.lists: Releases | None = None
        if table is not None:
            for events in table.values():
                events.sort()
            self.lists = table
            self.signed = signed

    def by_id(self) -> dict[int, JobView] | None:
        """id(view) -> view of the holding jobs; None when a view is listed twice."""
        ids = self.ids
        if ids is None:
            ids = self.ids = _by_id(self.running)
        return ids or None

    def _end(self, job: JobView) -> float:
        state = job.state
        start = job.start_time
        if state == _COMPLETING:
            return _ENDING
        if state in PAUSED_JOB_STATES or start is None:
            return INF
        key = (job.partition, job.time_limit)
        limit = self.resolved.get(key, -1)
        if limit == -1:
            limit = self.resolved[key] = resolve_time_limit(job, self.partitions.get(job.partition))
        if limit is None:
            return INF
        return start + job.paused + limit * 60

    def derived(
        self,
        snap: Snapshot,
        gone: Collection[JobView],
        came: Collection[JobView],
        ids: dict[int, JobView] | None,
    ) -> _Holdings | None:
        """The holdings of ``snap``'s holding jobs, from these by the views that left and
        came (``ids``: id(view) -> view of snap's, when known); None when too many did
        (build anew)."""
        if len(gone) + len(came) > len(snap.running) // 8 + 16:
            return None
        new = object.__new__(_Holdings)
        new.running = snap.running
        new.ids = ids
        new.cap_cpus = self.cap_cpus
        new.limits = self.limits
        new.partitions = self.partitions  # the same limits (limits compared): same ends
        new.resolved = self.resolved
        new.free = {}
        new.fresh = False
        new.used_cpus = self.used_cpus.copy()
        new.used_mem = self.used_mem.copy()
        marks = self.limit_at
        new.limit_at = marks.derived() if isinstance(marks, _Marks) else _Marks(sorted(marks))
        new.limit_sorted = True
        new.looked = True
        new.others = self.others.copy()
        new.lists = dict(self.lists) if self.lists is not None else None
        copied: set[int] = set()  # nodes whose release list is new's own
        touched: set[int] = set()  # nodes whose sums changed
        for job in gone:
            if not new._take(job, -1, copied, touched):
                return None
        for job in came:
            if not new._take(job, 1, copied, touched):
                return None
        changed = frozenset(touched)
        new.ready = {}
        new.ready_from = {key: (*got, changed) for key, got in self.ready.items()}
        for key, (at, base, since) in self.ready_from.items():
            if key not in new.ready_from:
                new.ready_from[key] = (at, base, since | changed)
        new.signed = self.signed
        if new.signed is False and any(
            c < 0 or m < 0 for job in came for c, m in zip(*_held(job, self.cap_cpus), strict=True)
        ):
            new.signed = True
        # The latest sides' arrays only: every pass on changed nodes adds a side, and
        # carrying them all made each derivation copy every side ever passed on.
        for at, kept in list(self.free.items())[-_FREE_KEPT:]:
            arrays = tuple(a.copy() for a in kept)
            for i in touched:
                _free_at(at, new.used_cpus, new.used_mem, arrays, i)
            new.free[at] = arrays
        return new

    def _take(self, job: JobView, sign: int, copied: set[int], touched: set[int]) -> bool:
        """Add (sign 1) or take away (-1) one holding job; False if its releases are not
        where they should be (build anew)."""
        end = self._end(job)
        at = job.node_indices
        if end != INF:
            entry = (end, job.job_id, at)
            if job.state == _RUNNING and end != _ENDING:
                limit_at = self.limit_at
                assert isinstance(limit_at, _Marks)  # derived holdings have them sorted
                if sign > 0:
                    limit_at.add(entry)
                elif not limit_at.remove(entry):
                    return False
            elif sign > 0:
                insort(self.others, entry)
            else:
                marks = self.others
                k = bisect_left(marks, entry)
                if k == len(marks) or marks[k] != entry:
                    return False
                del marks[k]
        cpus = job.alloc_cpus
        mems = job.alloc_mem
        if len(cpus) != len(at) or len(mems) != len(at):
            cpus, mems = _held(job, self.cap_cpus)
        size = len(self.cap_cpus)
        used_cpus = self.used_cpus
        used_mem = self.used_mem
        table = self.lists if end != INF else None
        for i, c, m in zip(at, cpus, mems, strict=True):
            if not 0 <= i < size:
                continue
            used_cpus[i] += sign * c
            used_mem[i] += sign * m
            touched.add(i)
            if table is None:
                continue
            events = table.get(i)
            if i not in copied:
                events = events.copy() if events is not None else []
                copied.add(i)
            elif events is None:
                events = []
            table[i] = events
            release = (end, c, m)
            if sign > 0:
                insort(events, release)
                continue
            k = bisect_left(events, release)
            if k == len(events) or events[k] != release:
                return False
            del events[k]
            if not events:
                del table[i]
        return True

    def free_arrays(self, side: _NodeSide) -> tuple[list[int], ...]:
        """(free CPUs, free MB, and the same with -1 on unusable nodes) of every node:
        shared, the caller copies what it changes."""
        kept = self.free.get(side)
        if kept is not None:
            return kept
        origin = side.came_from
        was = self.free.get(origin[0]) if origin is not None else None
        if origin is not None and was is not None:
            arrays = tuple(a.copy() for a in was)
            for i in origin[1]:
                _free_at(side, self.used_cpus, self.used_mem, arrays, i)
            self._keep_free(side, arrays)
            return arrays
        used_cpus = self.used_cpus.copy()
        used_mem = self.used_mem.copy()
        for i, (ac, am) in side.alloc.items():
            used_cpus[i] = max(used_cpus[i], ac)
            used_mem[i] = max(used_mem[i], am)
        free_cpus = [max(0, c - u) for c, u in zip(side.cap_cpus, used_cpus, strict=True)]
        free_mem = [max(0, m - u) for m, u in zip(side.cap_mem, used_mem, strict=True)]
        main_cpus = [f if ok else -1 for f, ok in zip(free_cpus, side.usable, strict=True)]
        main_mem = [f if ok else -1 for f, ok in zip(free_mem, side.usable, strict=True)]
        arrays = (free_cpus, free_mem, main_cpus, main_mem)
        self._keep_free(side, arrays)
        return arrays

    def _keep_free(self, side: _NodeSide, arrays: tuple[list[int], ...]) -> None:
        # Node sides come and go (one per pass after a node changed): keep the latest.
        free = dict(list(self.free.items())[1 - _FREE_KEPT :])
        free[side] = arrays
        self.free = free  # replaced whole: a pass on another thread reads either

    def base_ready(
        self, side: _NodeSide, candidates: Sequence[int], request: Request, *, build: bool = True
    ) -> BaseReady | None:
        """Backfill's kept ready times of ``candidates`` for ``request`` (None when some
        release is negative, or there are no release lists; without ``build``, None too
        when there is nothing kept to patch them from)."""
        key = (id(candidates), *request)
        got = self.ready.get(key)
        if got is not None and got[0] is side and got[1].candidates is candidates:
            return got[1]
        lists = self.lists
        if lists is None or self.negative():
            return None
        free = self.free_arrays(side)
        state = {"free": (free[0], free[1]), "caps": (side.cap_cpus, side.cap_mem), "releases": lists}
        # Kept for this side or the one it was updated from (the candidates the same list:
        # no node of theirs moved), for these holdings or those they were derived from.
        origin = side.came_from
        was = self.ready_from.get(key)
        if got is not None and got[1].candidates is candidates and origin and got[0] is origin[0]:
            base = got[1].patched(origin[1], **state)
        elif was is not None and was[1].candidates is candidates and was[0] is side:
            base = was[1].patched(was[2], **state)
        elif was is not None and was[1].candidates is candidates and origin and was[0] is origin[0]:
            base = was[1].patched(was[2] | origin[1], **state)
        elif build:
            base = BaseReady.build(candidates, request, **state)
        else:
            return None
        self.ready[key] = (side, base)
        return base

    def negative(self) -> bool:
        """Whether some release gives back negative CPUs or MB (BaseReady's times then
        do not hold)."""
        return self.signed is not False

    def timeouts(self, now: float) -> tuple[Timeout, ...]:
        """The RUNNING jobs past their time limit at ``now``, by job id."""
        if not self.limit_sorted:
            if self.looked:
                # A second pass on these: sorted once, for it and the next ones (the list
                # replaced before the flag: a pass on another thread reads either).
                self.limit_at = _Marks(sorted(self.limit_at))
                self.limit_sorted = True
            self.looked = True
        limit_at = self.limit_at
        if isinstance(limit_at, _Marks):
            due = [j for _, j, _ in limit_at.before((now, INF))]
        else:
            due = [j for end, j, _ in self.limit_at if end <= now]
        return tuple(Timeout(j) for j in sorted(due))

    def release_lists(self, now: float) -> tuple[Releases, set[int]]:
        """Node index -> the holding jobs' (end, CPUs, MB) releases, sorted, ends before
        ``now`` raised to it, and the nodes whose lists are the caller's to change: the
        table is new, the other lists are kept ones (copy before changing them)."""
        table = self.lists
        if table is None:
            table = {}
            size = len(self.cap_cpus)
            for job in self.running:
                end = self._end(job)
                if end == INF:
                    continue
                cpus, mems = _held(job, self.cap_cpus)
                for i, c, m in zip(job.node_indices, cpus, mems, strict=True):
                    if 0 <= i < size:
                        table.setdefault(i, []).append((end, c, m))
                        if c < 0 or m < 0:
                            self.signed = True
            for events in table.values():
                events.sort()
            if self.signed is None:
                self.signed = False
            self.lists = table
        out = dict(table)
        # The nodes with a release before now (COMPLETING jobs, jobs past their limit):
        # raised, and sorted again.
        before = (now,)  # below every (now, job id, nodes)
        past = self.others[: bisect_left(self.others, before)]
        limit_at = self.limit_at
        if isinstance(limit_at, _Marks):
            past += limit_at.before(before)
        else:
            past += [entry for entry in limit_at if entry[0] < now]
        raised = {i for _, _, at in past for i in at if i in table}
        for i in raised:
            out[i] = sorted([(end if end > now else now, c, m) for end, c, m in table[i]])
        return out, raised


def _by_id(running: tuple[JobView, ...]) -> dict[int, JobView] | bool:
    """id(view) -> view, or False when a view is listed twice."""
    ids = dict(zip(map(id, running), running, strict=True))
    return ids if len(ids) == len(running) else False


def _free_at(
    side: _NodeSide, used_cpus: list[int], used_mem: list[int], arrays: tuple[list[int], ...], i: int
) -> None:
    """Node ``i``'s entries of :meth:`_Holdings.free_arrays`, computed again."""
    uc, um = used_cpus[i], used_mem[i]
    alloc = side.alloc.get(i)
    if alloc is not None:
        uc = max(uc, alloc[0])
        um = max(um, alloc[1])
    free_cpus, free_mem, main_cpus, main_mem = arrays
    fc = free_cpus[i] = max(0, side.cap_cpus[i] - uc)
    fm = free_mem[i] = max(0, side.cap_mem[i] - um)
    ok = side.usable[i]
    main_cpus[i] = fc if ok else -1
    main_mem[i] = fm if ok else -1


# The last pass's holdings: the simulator's and the live controllers' passes run on the
# holding jobs kept between passes (cluster.services.pass_snapshot), the same tuple until
# a job starts, ends or changes, then a tuple with those jobs' views replaced and the
# others the same objects.  One entry, replaced whole: a pass on another thread (a start
# estimate) reads either the old or the new one, never half of one.
_last_holdings: _Holdings | None = None


def _holdings_for(snap: Snapshot, side: _NodeSide, *, want_table: bool) -> _Holdings:
    """The snapshot's holdings: the last pass's when it ran on the very same holding jobs
    (the same tuple of immutable views), the same node sizes and partition time limits;
    derived from them when only a few views differ; else built."""
    global _last_holdings  # noqa: PLW0603 - one kept value, replaced whole
    cap_cpus = side.cap_cpus
    limits = tuple((name, p.default_time, p.max_time) for name, p in snap.partitions.items())
    kept = _last_holdings
    same = kept is not None and kept.limits == limits and kept.cap_cpus == cap_cpus
    if same and kept.running is snap.running:
        return kept
    running = snap.running
    since = snap.running_since
    ids: dict[int, JobView] | bool | None = None
    derived = None
    if same and kept is not None:
        if (
            since is not None
            and since.result is running
            and since.base is kept.running
            and len(running) == len(since.base) - len(since.gone) + len(since.came)
        ):
            # The builder said what changed: O(the changed jobs).
            derived = kept.derived(snap, since.gone, since.came, None)
        else:
            # Found by identity: one dict of the views, at C speed.
            ids = _by_id(running)
            old = kept.by_id()
            if ids and old is not None:
                gone = old.keys() - ids.keys()
                came = ids.keys() - old.keys()
                derived = kept.derived(snap, [old[k] for k in gone], [ids[k] for k in came], ids)
    if derived is not None:
        _last_holdings = derived
        return derived
    kept = _last_holdings = _Holdings(snap, cap_cpus, limits, ids, want_table=want_table)
    return kept


def forget_kept() -> None:
    """Drop what passes keep for the next one: the next pass builds everything anew."""
    global _last_holdings  # noqa: PLW0603 - one kept value, replaced whole
    _last_holdings = None
    _sides.clear()


def _proposal(nodes: Sequence[int], req: list[int], count: int) -> tuple[int, ...]:
    if not req:
        return tuple(nodes[:count])
    others = [i for i in nodes if i not in set(req)]
    return tuple(req + others[: count - len(req)])


__all__ = [
    "TOP_PRIORITY",
    "WHOLE_MEM",
    "Blocked",
    "JobView",
    "NodeView",
    "PartitionView",
    "PassResult",
    "PassStats",
    "Pending",
    "RunningChange",
    "SchedulerConfig",
    "SchedulerPlugin",
    "Snapshot",
    "Start",
    "Timeout",
    "cpu_layout",
    "forget_kept",
    "job_priority",
    "mem_request",
    "node_order_key",
    "parse_constraint",
    "resolve_time_limit",
    "schedule",
    "validate_against_partition",
]
