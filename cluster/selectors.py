"""Reads for the console pages: node tiles, job rows, detail tables, counts, events.

Selectors only read.  Each returns plain frozen dataclasses with display strings already
in Slurm's spelling (``sinfo``'s ``mix``/``idle~``, ``squeue``'s ``NODELIST(REASON)``,
``scontrol show``'s ``Key=Value`` names), so templates stay dumb and never need to mark
anything safe.  Whole-cluster reads are a fixed number of queries whatever the cluster's
size (the grid for thousands of nodes is one query).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import lru_cache
from typing import NamedTuple

from ClusterShell.NodeSet import NodeSet, NodeSetParseError
from django.db.models import Count, Q
from django.utils import timezone

from cluster import extensions
from cluster.core import states
from cluster.core.job_times import expected_end
from cluster.core.outputs import expand_output_path
from cluster.core.states import (
    FINISHED_JOB_STATES,
    HOLDING_JOB_STATES,
    JOB_STATE_COMPACT,
    PAUSED_JOB_STATES,
    JobState,
    NodeFlag,
)
from cluster.extensions import PendingCause
from cluster.models import ClusterConfig, Event, Job, Node, Partition
from slurmwords import durations, memory

# --- nodes -----------------------------------------------------------------------------

# The colour classes of the grid: sinfo's short base word, suffix removed.  Order is the
# legend's order.
NODE_COLOURS: tuple[tuple[str, str], ...] = (
    ("idle", "idle: no job, can take work"),
    ("mix", "mixed: some CPUs allocated"),
    ("alloc", "allocated: all CPUs in use"),
    ("comp", "completing: jobs being cleaned up"),
    ("drng", "draining: drain requested, jobs still running"),
    ("drain", "drained: takes no new work"),
    ("down", "down: unavailable"),
    ("futr", "future: defined, not yet in service"),
    ("unk", "unknown: not yet registered"),
    ("boot", "reboot: requested, or issued and waiting for the node"),
    ("maint", "maintenance: in a MAINT reservation"),
    ("plnd", "planned: held by backfill for a pending job"),
    ("resv", "reserved: in an advanced reservation"),
    ("inval", "invalid registration"),
)

# sinfo's state suffixes (cluster.core.states), with their meaning, in Slurm's precedence.
NODE_SUFFIXES: tuple[tuple[str, str], ...] = (
    ("$", "in a maintenance reservation"),
    ("^", "reboot issued"),
    ("@", "reboot pending"),
    ("#", "powering up"),
    ("%", "powering down"),
    ("~", "powered down"),
    ("!", "power down pending"),
    ("*", "not responding"),
    ("-", "planned by backfill for a higher priority job"),
    ("+", "allocated while other jobs complete"),
)
# A state each suffix is seen on (``idle@`` never is: an idle node's reboot reads ``boot``).
NODE_SUFFIX_EXAMPLES = {"$": "down$", "^": "boot^", "@": "mix@", "-": "mix-", "+": "alloc+"}


def suffix_legend() -> list[tuple[str, str, str]]:
    """(suffix, meaning, a state showing it) for the legend."""
    return [(c, meaning, NODE_SUFFIX_EXAMPLES.get(c, "idle" + c)) for c, meaning in NODE_SUFFIXES]


_POWER_CLASSES = (
    (NodeFlag.POWERING_UP, "p-up"),
    (NodeFlag.POWERING_DOWN, "p-down"),
    (NodeFlag.POWERED_DOWN, "p-off"),
    (NodeFlag.POWER_DOWN, "p-pending"),
)


def power_class(flags: int) -> str:
    """CSS modifier for the power state, so the grid shows it as a pattern, not a colour."""
    for flag, name in _POWER_CLASSES:
        if flags & flag:
            return name
    return ""


@dataclass(frozen=True, eq=False)
class NodeLook:
    """How a node in one (base state, flags) pair reads and looks.

    Compared and hashed by identity (``eq=False``): ``node_look`` makes one per pair, and
    the grid keys its per-look markup on it, 10,000 times a render."""

    state: str  # sinfo %t: idle, mix, alloc, drain, down*, idle~
    state_long: str  # sinfo %T: mixed, allocated, drained, idle~
    state_full: str  # scontrol: IDLE+DRAIN
    colour: str  # one of NODE_COLOURS
    power: str  # "", p-off, p-up, p-down, p-pending
    not_responding: bool


_SUFFIX_CHARS = "".join(c for c, _ in NODE_SUFFIXES)


@lru_cache(maxsize=4096)
def node_look(base: str, flags: int) -> NodeLook:
    """The look of a (base state, flags) pair, worked out once per pair: a cluster of
    thousands of nodes has a handful of pairs, and the flag arithmetic on enum members
    cost more than half of the grid's time when it ran once per node."""
    short = states.sinfo_short(base, flags)
    return NodeLook(
        state=short,
        state_long=states.sinfo_long(base, flags),
        state_full=states.long_state(base, flags),
        colour=short.rstrip(_SUFFIX_CHARS),
        power=power_class(flags),
        not_responding=bool(flags & NodeFlag.NOT_RESPONDING),
    )


class NodeTile(NamedTuple):
    """One node on the grid.  A named tuple, not a dataclass: the grid makes 10,000 of them
    a render, and a tuple is made in a third of the time."""

    name: str
    look: NodeLook
    cpus: int
    alloc_cpus: int
    reason: str

    @property
    def state(self) -> str:
        return self.look.state

    @property
    def state_long(self) -> str:
        return self.look.state_long

    @property
    def state_full(self) -> str:
        return self.look.state_full

    @property
    def colour(self) -> str:
        return self.look.colour

    @property
    def power(self) -> str:
        return self.look.power

    @property
    def not_responding(self) -> bool:
        return self.look.not_responding

    @property
    def cpu_pct(self) -> int:
        return min(100, round(100 * self.alloc_cpus / self.cpus)) if self.cpus else 0

    @property
    def title(self) -> str:
        text = f"{self.name}: {self.state_full}, CPUs {self.alloc_cpus}/{self.cpus}"
        return f"{text}, Reason={self.reason}" if self.reason else text


def _tile(row: tuple[str, str, int, int, int, str]) -> NodeTile:
    """A tile from (name, base_state, flags, cpus, alloc_cpus, reason): a values_list row."""
    name, base, flags, cpus, alloc_cpus, reason = row
    return NodeTile(name, node_look(base, flags), cpus, alloc_cpus, reason)


def hostlist_limit(cfg: ClusterConfig | None = None) -> int:
    """The most nodes a hostlist given to the API may name (``cluster.core.hostlists.parse``),
    and a job may ask for.

    The cluster's node count, or ``MaxNodeCount`` when that is larger (dynamic nodes may
    still be created up to it): no valid request names more nodes than can exist.
    """
    cfg = cfg or ClusterConfig.current()
    return max(Node.objects.count(), cfg.option_int("MaxNodeCount", 0), 1)


def partition_names() -> list[str]:
    return list(Partition.objects.values_list("name", flat=True))


def node_tiles(*, partition: str = "") -> list[NodeTile]:
    """Every node (or a partition's), in name order: one query for the nodes."""
    rows = Node.objects.order_by("name").values_list(
        "name", "base_state", "flags", "cpus", "alloc_cpus", "reason"
    )
    tiles = [_tile(row) for row in rows]
    if partition:
        members = partition_members().get(partition, frozenset())
        tiles = [t for t in tiles if t.name in members]
    return tiles


def partition_members() -> dict[str, frozenset[str]]:
    """Partition name -> its node names, in the partitions' order (one query)."""
    return {name: _expand(nodes or "") for name, nodes in Partition.objects.values_list("name", "nodes")}


@lru_cache(maxsize=64)
def _expand(nodes: str) -> frozenset[str]:
    """A partition's node names, expanded once per hostlist: expanding ``n[00001-10000]``
    cost the partition filter and the grouped grid 25 ms a render.  Keyed by the hostlist
    itself, so an edited partition is expanded again; 10,000 names hold about 1 MB."""
    try:
        return frozenset(NodeSet(nodes))
    except NodeSetParseError:  # a broken row must not take the page down
        return frozenset()


@dataclass(frozen=True)
class TileGroup:
    name: str  # partition name, "" for nodes in no partition
    tiles: list[NodeTile]


def group_by_partition(tiles: list[NodeTile]) -> list[TileGroup]:
    """Tiles per partition, as ``sinfo`` lists them; a node in two partitions shows twice."""
    groups = []
    seen: set[str] = set()
    for name, members in partition_members().items():
        group = [t for t in tiles if t.name in members]
        seen.update(t.name for t in group)
        if group:
            groups.append(TileGroup(name, group))
    rest = [t for t in tiles if t.name not in seen]
    if rest:
        groups.append(TileGroup("", rest))
    return groups


@dataclass(frozen=True)
class StateCount:
    state: str
    colour: str
    count: int


def node_state_counts(tiles: list[NodeTile]) -> list[StateCount]:
    """Nodes per sinfo state, in legend order, like ``sinfo -s`` but by state."""
    counts: Counter[tuple[str, str]] = Counter()
    for look, count in Counter(t.look for t in tiles).items():
        counts[look.colour, look.state] += count
    order = {name: i for i, (name, _) in enumerate(NODE_COLOURS)}
    keys = sorted(counts, key=lambda k: (order.get(k[0], len(order)), k[1]))
    return [StateCount(state=state, colour=colour, count=counts[colour, state]) for colour, state in keys]


# --- jobs ------------------------------------------------------------------------------

_ALL = Q()  # no restriction: what a staff viewer, or a caller outside a request, sees

ACTIVE_STATES = tuple(
    s.value
    for s in (
        JobState.PENDING,
        JobState.CONFIGURING,
        JobState.RUNNING,
        JobState.SUSPENDED,
        JobState.STOPPED,
        JobState.COMPLETING,
    )
)
# Plain words for the reasons a job waits (after squeue(1)'s JOB REASON CODES), shown
# where the raw code alone leaves a user guessing.
REASON_TEXT = {
    "Priority": "Jobs of higher priority are queued ahead of it for the same resources.",
    "Resources": "Waiting for the nodes, CPUs or memory it asks for to become free.",
    "PartitionNodeLimit": "It asks for more (or fewer) nodes than its partition allows.",
    "PartitionTimeLimit": "Its time limit is longer than the partition's MaxTime.",
    "PartitionDown": "Its partition is DOWN: no job of it starts until it is UP again.",
    "PartitionInactive": "Its partition is INACTIVE.",
    "ReqNodeNotAvail": "A node it requires is unavailable (down, drained or reserved).",
    "JobHeldUser": "Held by its user; 'scontrol release' lets it run.",
    "JobHeldAdmin": "Held by an administrator.",
    "BeginTime": "Its earliest start time (--begin) has not come yet.",
    "Licenses": "Waiting for licenses it asked for (-L).",
    "Reservation": "Waiting for its advanced reservation to become usable.",
    "NodeDown": "A node it needs is down.",
    "BadConstraints": "No node has the features (--constraint) it asks for.",
    "InvalidAccount": "Its account is invalid.",
    "InvalidQOS": "Its QOS is invalid.",
    "JobLaunchFailure": "The job could not be started on its node.",
    "Dependency": "Waiting for the jobs it depends on (--dependency).",
    "DependencyNeverSatisfied": "A job it depends on ended so that it can never run.",
}


@dataclass(frozen=True)
class JobRow:
    job_id: int
    display_id: str
    name: str
    user: str
    partition: str
    state: str
    state_compact: str
    time: str
    nodes: int
    nodelist: str  # squeue's NODELIST(REASON): the nodes, or "(Reason)" while not running
    reason: str
    reason_detail: str
    pending: bool

    @property
    def reason_help(self) -> str:
        """What the reason means in plain words; empty when it needs no saying."""
        return REASON_TEXT.get(self.reason, "")

    @property
    def paused_detail(self) -> str:
        """Why a suspended or stopped job is paused, as whoever paused it wrote it (the
        load check: ``Load: mem=1100<LoadStopMem=1200``); empty for any other job."""
        return self.reason_detail if self.state in PAUSED_JOB_STATES else ""


def _run_seconds(job: Job, now: datetime) -> int:
    if not job.start_time:
        return 0
    end = job.end_time or now
    return max(0, int((end - job.start_time).total_seconds()))


def job_row(job: Job, now: datetime) -> JobRow:
    pending = job.state == JobState.PENDING
    # squeue prints the reason in parentheses until the job has nodes.
    nodelist = f"({job.reason})" if pending or not job.node_list else job.node_list
    return JobRow(
        job_id=job.id,
        display_id=job.display_id,
        name=job.name,
        user=job.user,
        partition=job.partition,
        state=job.state,
        state_compact=JOB_STATE_COMPACT.get(JobState(job.state), job.state),
        time=durations.format_duration(_run_seconds(job, now)),
        nodes=len(job.alloc) or job.min_nodes,
        nodelist=nodelist,
        reason=job.reason,
        reason_detail=job.reason_detail,
        pending=pending,
    )


# The job fields a JobRow reads (job_row): a list reads only these.
JOB_ROW_FIELDS = (
    "id",
    "array_job_id",
    "array_task_id",
    "name",
    "user",
    "partition",
    "state",
    "reason",
    "reason_detail",
    "priority",
    "start_time",
    "end_time",
    "node_list",
    "alloc",
    "min_nodes",
)


@dataclass(frozen=True)
class JobCount:
    state: str
    compact: str
    count: int


def job_state_counts(
    *, now: datetime, finished_window: timedelta = timedelta(hours=24), visible: Q = _ALL
) -> list[JobCount]:
    """Active jobs per state, and jobs that ended in the last day per final state (one query)."""
    since = now - finished_window
    rows = (
        Job.objects.filter(visible)
        .filter(Q(state__in=ACTIVE_STATES) | Q(end_time__gte=since))
        .values("state")
        .annotate(n=Count("id"))
    )
    counts = {r["state"]: r["n"] for r in rows}
    # Always show the two states an admin looks at first, even at zero.
    for state in ("RUNNING", "PENDING"):
        counts.setdefault(state, 0)
    order = [s.value for s in JobState]
    return [
        JobCount(state=s, compact=JOB_STATE_COMPACT[JobState(s)], count=counts[s])
        for s in sorted(counts, key=order.index)
    ]


@dataclass(frozen=True)
class ReasonCount:
    reason: str
    count: int
    help: str


def pending_reasons(*, visible: Q = _ALL) -> list[ReasonCount]:
    """Pending jobs per reason, most common first (one query): what holds the queue back."""
    rows = (
        Job.objects.filter(visible, state=JobState.PENDING)
        .values("reason")
        .annotate(n=Count("id"))
        .order_by("-n", "reason")
    )
    return [ReasonCount(r["reason"], r["n"], REASON_TEXT.get(r["reason"], "")) for r in rows]


# --- events ----------------------------------------------------------------------------


def recent_events(
    *, limit: int = 20, node: str = "", job_id: int | None = None, visible: Q = _ALL
) -> list[Event]:
    qs = Event.objects.all()
    if visible != _ALL:  # PrivateData=jobs: the events of jobs the viewer may not see go
        qs = qs.filter(Q(job_id__isnull=True) | Q(job_id__in=Job.objects.filter(visible).values("id")))
    if node:
        qs = qs.filter(node=node)
    if job_id is not None:
        qs = qs.filter(job_id=job_id)
    return list(qs.order_by("-time", "-id")[:limit])


# --- detail tables ---------------------------------------------------------------------


def _ts(dt: datetime | None) -> str:
    return durations.format_timestamp(timezone.localtime(dt) if dt else None)


def _mb(value: int | None) -> str:
    return "N/A" if value is None else str(value)


@dataclass(frozen=True)
class NodeDetail:
    tile: NodeTile
    fields: list[tuple[str, str]]
    partitions: list[str]
    jobs: list[JobRow] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)


def node_detail(name: str, *, now: datetime, visible: Q = _ALL) -> NodeDetail | None:
    """``scontrol show node`` as a key/value table, the jobs on the node and its events."""
    node = Node.objects.filter(name=name).first()
    if node is None:
        return None
    partitions = [p for p, members in partition_members().items() if name in members]
    reason = node.reason
    if reason:
        who = node.reason_user or "root"
        reason = f"{reason} [{who}@{_ts(node.reason_time)}]"
    fields = [
        ("NodeName", node.name),
        ("CoresPerSocket", str(node.cores_per_socket)),
        ("CPUAlloc", str(node.alloc_cpus)),
        ("CPUEfctv", str(node.cpus)),
        ("CPUTot", str(node.cpus)),
        ("CPULoad", "N/A" if node.cpu_load is None else f"{node.cpu_load:.2f}"),
        ("AvailableFeatures", node.features or "(null)"),
        ("ActiveFeatures", node.active_features or node.features or "(null)"),
        ("Gres", node.gres or "(null)"),
        ("RealMemory", str(node.real_memory)),
        ("AllocMem", str(node.alloc_mem)),
        ("FreeMem", _mb(node.free_mem)),
        ("Sockets", str(node.sockets)),
        ("State", node.state),
        ("ThreadsPerCore", str(node.threads_per_core)),
        ("Weight", str(node.weight)),
        ("BootTime", _ts(node.boot_time) if node.boot_time else "None"),
        ("SlurmdStartTime", _ts(node.slurmd_start_time) if node.slurmd_start_time else "None"),
        ("LastBusyTime", _ts(node.last_busy) if node.last_busy else "None"),
        ("LastContact", _ts(node.last_contact) if node.last_contact else "None"),
        ("Partitions", ",".join(partitions) or "(null)"),
        (
            "CfgTRES",
            f"cpu={node.cpus},mem={memory.format_memory_mb(node.real_memory)},billing={node.cpus}",
        ),
        (
            "AllocTRES",
            f"cpu={node.alloc_cpus},mem={memory.format_memory_mb(node.alloc_mem)}" if node.alloc_cpus else "",
        ),
        ("SuspendTime", _suspend_time(node.suspend_time)),
        ("Agent", node.agent_id or "(none)"),
    ]
    if reason:
        fields.append(("Reason", reason))
    jobs = Job.objects.filter(
        visible, state__in=[s.value for s in HOLDING_JOB_STATES], alloc__has_key=name
    ).order_by("id")
    tile = _tile((node.name, node.base_state, node.flags, node.cpus, node.alloc_cpus, node.reason))
    return NodeDetail(
        tile=tile,
        fields=fields,
        partitions=partitions,
        jobs=[job_row(j, now) for j in jobs.only(*JOB_ROW_FIELDS)],
        events=recent_events(node=name, limit=50, visible=visible),
    )


def _suspend_time(value: int | None) -> str:
    if value is None:
        return "NONE"
    if value < 0:
        return "INFINITE"
    return f"{value}s"


# What only the job's owner, its account's coordinators and staff see (cluster.visibility).
PRIVATE_JOB_FIELDS = frozenset(("Command", "WorkDir", "StdErr", "StdIn", "StdOut"))


@dataclass(frozen=True)
class JobDetail:
    row: JobRow
    fields: list[tuple[str, str]]
    events: list[Event]
    private: bool = False  # the viewer sees the script, environment and output paths
    script: str = ""
    environment: list[tuple[str, str]] = field(default_factory=list)
    job_user: str = ""
    cancellable: bool = False


def job_detail(job_id: int, *, now: datetime, visible: Q = _ALL, private: Q = _ALL) -> JobDetail | None:
    """``scontrol show job`` as a key/value table plus the job's event timeline (oldest first).
    ``visible``: the jobs the viewer may see; ``private``: those whose script, environment
    and output paths they may see (cluster.visibility)."""
    job = Job.objects.filter(visible, id=job_id).first()
    if job is None:
        return None
    owner_view = Job.objects.filter(private, id=job_id).exists() if private != _ALL else True
    nodes = len(job.alloc) or job.min_nodes
    mem = sum(v[1] for v in job.alloc.values()) if job.alloc else (job.mem_per_node or 0) * nodes
    out = job.std_out or ("slurm-%A_%a.out" if job.array_job_id is not None else "slurm-%j.out")

    def path(pattern: str) -> str:
        return expand_output_path(
            pattern,
            job_id=job.id,
            name=job.name,
            user=job.user,
            node=job.batch_host or "",
            array_job_id=job.array_job_id,
            array_task_id=job.array_task_id,
            work_dir=job.work_dir,
        )

    fields = [
        ("JobId", str(job.id)),
        ("JobName", job.name),
    ]
    if job.array_job_id is not None:
        fields += [("ArrayJobId", str(job.array_job_id)), ("ArrayTaskId", str(job.array_task_id))]
    fields += [
        ("UserId", job.user),
        ("Account", job.account or "(null)"),
        ("QOS", job.qos or "(null)"),
        *([("WCKey", job.wckey)] if job.wckey else []),
        ("Priority", str(job.priority)),
        ("JobState", job.state),
        ("Reason", job.reason),
    ]
    if job.reason_detail:
        fields.append(("ReasonDetail", job.reason_detail))
    fields += [
        ("Requeue", "1" if job.requeue else "0"),
        ("Restarts", str(job.restart_count)),
        ("ExitCode", f"{job.exit_code}:{job.exit_signal}"),
        ("RunTime", durations.format_duration_long(_run_seconds(job, now))),
        ("TimeLimit", durations.format_minutes_long(job.time_limit)),
        ("SubmitTime", _ts(job.submit_time)),
        ("EligibleTime", _ts(job.eligible_time)),
        ("StartTime", _ts(job.start_time)),
        ("EndTime", _ts(expected_end(job.start_time, job.end_time, job.time_limit))),
        ("Partition", job.partition),
        ("ReqNodeList", job.req_nodes or "(null)"),
        ("ExcNodeList", job.exc_nodes or "(null)"),
        ("NodeList", job.node_list or "(null)"),
        ("BatchHost", job.batch_host or "(null)"),
        ("NumNodes", str(nodes)),
        ("NumCPUs", str(job.num_cpus)),
        ("NumTasks", str(job.num_tasks)),
        ("CPUs/Task", str(job.cpus_per_task)),
        ("TRES", f"cpu={job.num_cpus},mem={mem}M,node={nodes},billing={job.num_cpus}"),
        ("MinMemoryNode", f"{job.mem_per_node}M" if job.mem_per_node else "0"),
        ("Features", job.features or "(null)"),
        ("Reservation", job.reservation or "(null)"),
        ("Licenses", job.licenses or "(null)"),
        ("Command", job.command or "(null)"),
        ("WorkDir", job.work_dir),
        ("StdErr", path(job.std_err or out)),
        ("StdIn", job.std_in or "/dev/null"),
        ("StdOut", path(out)),
    ]
    if not owner_view:
        fields = [(k, v) for k, v in fields if k not in PRIVATE_JOB_FIELDS]
    events = list(Event.objects.filter(job_id=job.id).order_by("time", "id"))
    return JobDetail(
        row=job_row(job, now),
        fields=fields,
        events=events,
        private=owner_view,
        script=job.script if owner_view else "",
        environment=sorted(job.environment.items())
        if owner_view and isinstance(job.environment, dict)
        else [],
        job_user=job.user,
        cancellable=owner_view and job.state not in FINISHED_JOB_STATES,
    )


def pending_causes(job: Job) -> list[PendingCause]:
    """ "Why is this job pending?": the limit and level, HRES layer, node state or reservation
    holding it and what would release it, from every extension that explains some.  A job
    STOPPED (by the load thresholds) is asked too: why it is stopped, what continues it.
    Empty for any other job that is not pending."""
    if job.state not in (JobState.PENDING, JobState.STOPPED):
        return []
    return [cause for ext in extensions.active() for cause in ext.pending_causes(job)]
