"""What the power-save cycle reads: the nodes that can take part in one of its decisions,
and the jobs holding them, instead of every node and every holding job.

The cycle (power.core.policy.power_cycle) decides about a node only when it is powering up
or down (timeouts), asked to power up or down, powered down and held by a job (a resume),
or idle past its SuspendTime (automatic power saving); it also looks at every node of a
CONFIGURING job (the launch once they are all up) and of a SuspendExcNodes ``:count`` set
(how many usable nodes the set keeps). Any other node changes nothing in its result: the
cycle on these nodes, in the same name order, decides what it decides on all of them
(tests/power/test_power_cycle_input.py compares the two on random clusters).

Read so, a cycle on a quiet cluster of 10,000 nodes reads a handful of rows instead of
building and locking 10,000 (profiled in the simulator: 1.25 s a cycle before).

Most cycles (one every power_save_interval) decide nothing. :class:`Watch` is what that
depends on, read without the cycle's time: :func:`quiet` says, at a given time, that the
cycle can decide nothing, so it can stop before reading or locking anything: when
:func:`cycle_node_names` would find no node, and also when the only nodes it would find are
powering up or down with nothing else asked of them, before their ResumeTimeout or
SuspendTimeout, and the nodes of CONFIGURING jobs that wait for one of those (the cycle
waits for the timeout or the node's registration; in the simulator's bench, 300 of the 519
cycles that read nodes decided nothing, all of them so).
A watch depends on the nodes', the holding jobs' and the partitions' rows only (a node's
partitions give its timeouts): the simulator keeps it between cycles until one of those
tables is written (``pass_snapshot.kept_value``), and a quiet cycle there reads no node
(tests/power/test_power_cycle_quiet.py checks on random clusters that :func:`quiet` holds
whenever :func:`cycle_node_names` finds nothing, and that the cycle on every node decides
nothing whenever it holds).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache

from django.db import connection

from cluster.core.states import HOLDING_JOB_STATES, JobState, NodeBase, NodeFlag
from cluster.models import Job, Node
from cluster.services import pass_snapshot
from cluster.services import rows as plain_rows
from power.core.config import Exclusions, PowerConfig
from power.core.policy import POWER_FLAGS
from power.membership import partition_membership

# A node with one of these flags has something pending: a timeout to watch, a request
# to carry out.
_PENDING = NodeFlag.POWERING_UP | NodeFlag.POWERING_DOWN | NodeFlag.POWER_DOWN | NodeFlag.POWER_UP
# What keeps a node from being powered down automatically (the core's _auto_candidates).
_NOT_SUSPENDABLE = POWER_FLAGS | NodeFlag.COMPLETING | NodeFlag.REBOOT_REQUESTED | NodeFlag.REBOOT_ISSUED
# Past this many names, one read of every node filtered here costs less than a long IN.
NAMES_AT_ONCE = 500

_HOLDING = [s.value for s in HOLDING_JOB_STATES]


def holding_allocs() -> list[tuple[int, str, list[str]]]:
    """(id, state, allocated nodes) of every job holding nodes, by id: three columns, no
    model instances; kept between cycles, only the jobs written since read again (the
    watch and the cycle read them after most writes: thousands of JSON lists decoded
    each time at 10,000 nodes). Shared: read-only."""
    return pass_snapshot.kept_rows("power.holding_allocs", Job, ("id", "state", "alloc"), {"state": _HOLDING})


def cycle_node_names(
    power: PowerConfig,
    *,
    now: float,
    loaded: float,
    auto: bool,
    exclusions: Exclusions,
    holding: Iterable[tuple[int, str, list[str]]],
) -> set[str]:
    """The names of the nodes the cycle at ``now`` can decide about or look at (see the
    module's docstring); ``holding`` as :func:`holding_allocs` returns it, ``loaded`` the
    time a node never busy counts as last busy from."""
    held: set[str] = set()
    wanted: set[str] = set()  # looked at whatever their state
    for _id, state, alloc in holding:
        held.update(alloc)
        if state == JobState.CONFIGURING:
            wanted.update(alloc)
    if auto:
        for counted in exclusions.counted:
            wanted.update(counted.nodes)
    # Written out, not compiled by the ORM at every cycle that reads nodes.
    col = _node_columns(connection.vendor)
    where = f"({col['flags']} & %s) <> 0"
    params: list[object] = [int(_PENDING | NodeFlag.POWERED_DOWN)]
    if auto:
        # A node's own SuspendTime may be anything; without one, its partitions' or the
        # global one, never shorter than the shortest of those.
        since = [f"{col['suspend_time']} IS NOT NULL"]
        shortest = _shortest_suspend_time(power)
        if shortest is not None:
            # A second's margin: the core compares float seconds, the store microseconds;
            # a node read in excess is one the core decides nothing about.
            cutoff = now - shortest + 1
            since.append(f"{col['last_busy']} <= %s")
            params.append(_LAST_BUSY.get_db_prep_value(datetime.fromtimestamp(cutoff, UTC), connection))
            if loaded <= cutoff:
                since.append(f"{col['last_busy']} IS NULL")
        where += (
            f" OR ({col['base_state']} IN (%s, %s) AND ({col['flags']} & %s) = 0 AND ({' OR '.join(since)}))"
        )
        params[1:1] = [NodeBase.IDLE.value, NodeBase.DOWN.value, int(_NOT_SUSPENDABLE)]
    found = plain_rows.select_sql(Node, ("name", "flags"), where, params)
    names = set(wanted)
    for name, flags in found:
        # A powered-down node with nothing pending matters only to a job holding it.
        if flags & _PENDING or not flags & NodeFlag.POWERED_DOWN or name in held:
            names.add(name)
    return names


@dataclass(frozen=True)
class Watch:
    """What :func:`cycle_node_names` finds, apart from the cycle's time (see :func:`quiet`)."""

    # A node read whatever the time: a power request pending, powered down and held by a
    # job, or allocated to a CONFIGURING job that no powering node holds back.
    always: bool
    # The idle nodes automatic power saving may suspend (IDLE or DOWN, no power flag, not
    # COMPLETING, no reboot asked for): one with its own SuspendTime (read at any time),
    # the earliest last-busy time of the others, and whether one was never busy.
    own_suspend_time: bool = False
    idle_since: datetime | None = None
    never_busy: bool = False
    # The nodes powering up or down with nothing else pending, whose only possible decision
    # is their timeout: (powering up, power_entered as the cycle reads it, their partitions).
    timers: tuple[tuple[bool, float | None, tuple[str, ...]], ...] = ()


def watch() -> Watch:
    """The nodes', holding jobs' and partitions' rows as :func:`quiet` needs them (two
    statements on the node table, written out once: the simulator computes a watch after
    most writes)."""
    held: set[str] = set()
    configuring = []
    for _id, state, alloc in holding_allocs():
        if state == JobState.CONFIGURING and alloc:
            configuring.append(alloc)
        held.update(alloc)
    powered_sql, idle_sql, converters = _watch_sql(connection.vendor)
    timers = []
    with connection.cursor() as cursor:
        cursor.execute(powered_sql, [int(_PENDING | NodeFlag.POWERED_DOWN)])
        for name, flags, entered in cursor.fetchall():
            pending = flags & _PENDING
            if not pending:
                if name in held:
                    return Watch(always=True)  # powered down and held: a resume
                continue
            if pending not in _TIMED or (flags & NodeFlag.POWERED_DOWN and name in held):
                return Watch(always=True)
            timers.append((pending == NodeFlag.POWERING_UP, name, entered))
        # A CONFIGURING job is launched once none of its nodes is powering (the core's
        # ready_jobs): one of them waiting for its timeout holds it back until then.
        timed = {name for _up, name, _entered in timers}
        if any(timed.isdisjoint(alloc) for alloc in configuring):
            return Watch(always=True)
        cursor.execute(idle_sql, [NodeBase.IDLE.value, NodeBase.DOWN.value, int(_NOT_SUSPENDABLE)])
        own, since, never = cursor.fetchone()
    since = _stored_time(since, converters)
    parts = partition_membership() if timers else {}
    # As power.services.power_node reads power_entered for the cycle: an epoch.
    found = []
    for up, name, entered in timers:
        at = _stored_time(entered, converters)
        found.append((up, None if at is None else at.timestamp(), parts.get(name, ())))
    return Watch(False, bool(own), since, bool(never), tuple(found))


# The pending power flags whose only decision is a timeout: one of them alone.
_TIMED = (NodeFlag.POWERING_UP, NodeFlag.POWERING_DOWN)


def _stored_time(value: object, converters: list) -> datetime | None:
    """A datetime column's value read by the cursor, as the ORM would give it."""
    if value is not None:
        for convert in converters:
            value = convert(value, _LAST_BUSY.cached_col, connection)
    return value


_LAST_BUSY = Node._meta.get_field("last_busy")


@cache
def _node_columns(vendor: str) -> dict[str, str]:
    quote = connection.ops.quote_name
    return {
        f: quote(Node._meta.get_field(f).column) for f in ("flags", "suspend_time", "last_busy", "base_state")
    }


@cache
def _watch_sql(vendor: str) -> tuple[str, str, list]:
    """The watch's statements, and the converters of a last_busy value (SQLite's text)."""
    quote = connection.ops.quote_name
    table = quote(Node._meta.db_table)
    name, flags, base, suspend, busy = (
        quote(Node._meta.get_field(f).column)
        for f in ("name", "flags", "base_state", "suspend_time", "last_busy")
    )
    entered = quote(Node._meta.get_field("power_entered").column)
    powered = f"SELECT {name}, {flags}, {entered} FROM {table} WHERE ({flags} & %s) <> 0"  # noqa: S608
    idle = (
        f"SELECT COUNT({suspend}), MIN({busy}), COUNT(*) - COUNT({busy}) FROM {table} "  # noqa: S608
        f"WHERE {base} IN (%s, %s) AND ({flags} & %s) = 0"
    )
    converters = connection.ops.get_db_converters(_LAST_BUSY.cached_col) + _LAST_BUSY.get_db_converters(
        connection
    )
    return powered, idle, converters


def quiet(
    found: Watch, power: PowerConfig, *, now: float, loaded: float, auto: bool, exclusions: Exclusions
) -> bool:
    """Whether the cycle at ``now`` can decide nothing, given the :class:`Watch` of the
    rows it would read: :func:`cycle_node_names` (same arguments) finds no node, or only
    nodes powering up or down before their timeout."""
    if found.always:
        return False
    for up, entered, partitions in found.timers:
        # The cycle's own test (power.core.policy, the timeouts): a node without an entry
        # time entered now.
        since = now - (entered if entered is not None else now)
        if up:
            timeout = power.effective_resume_timeout(partitions)
        else:
            timeout = power.effective_suspend_timeout(partitions)
        if not since < timeout:
            return False
    if not auto:
        return True
    if any(counted.nodes for counted in exclusions.counted) or found.own_suspend_time:
        return False
    shortest = _shortest_suspend_time(power)
    if shortest is None:
        return True
    cutoff = now - shortest + 1
    # Compared as the store compares in cycle_node_names: as datetimes.
    if found.idle_since is not None and found.idle_since <= datetime.fromtimestamp(cutoff, UTC):
        return False
    return not (found.never_busy and loaded <= cutoff)


def _shortest_suspend_time(power: PowerConfig) -> int | None:
    """The shortest finite SuspendTime a node without its own can have, None if none."""
    values = [power.suspend_time]
    values += [p.suspend_time for p in power.partitions.values() if p.suspend_time is not None]
    finite = [v for v in values if v >= 0]
    return min(finite) if finite else None


# What the cycle reads of a node (power.services.power_node_of), the id first: its
# decision needs no more, and a whole row (twenty-odd columns, model instances) is loaded
# only for the nodes a decision changes (locked_nodes). At 10,000 nodes the idle ones past
# SuspendTime are thousands every cycle, of which SuspendRate lets a few dozen power down.
POWER_FIELDS = (
    "id", "name", "base_state", "flags", "weight", "last_busy", "suspend_time",
    "power_entered", "boot_time", "power_action", "reason",
)  # fmt: skip


def power_row(node: Node) -> tuple:
    """A node's POWER_FIELDS, as :func:`locked_rows` reads them."""
    return tuple(getattr(node, f) for f in POWER_FIELDS)


def locked_rows(names: set[str]) -> dict[str, tuple]:
    """The named nodes' POWER_FIELDS, their rows locked in name order (docs/locking.md), by
    name in name order."""
    if not names:
        return {}
    if len(names) <= NAMES_AT_ONCE:
        found = plain_rows.select(
            Node, POWER_FIELDS, {"name": sorted(names)}, order_by=("name",), for_update=True
        )
        return {row[1]: row for row in found}
    order = None
    if connection.features.has_select_for_update:
        # Every node locked by name, as whole rows were (the lock order of every writer).
        order = [name for (name,) in plain_rows.select(Node, ("name",), order_by=("name",), for_update=True)]
    # Read after the locks: kept between cycles, only the rows written since read again
    # (the passes change a few hundred nodes between two cycles).
    every = pass_snapshot.kept_rows("power.cycle_nodes", Node, POWER_FIELDS, {})
    found = {row[1]: row for row in every if row[1] in names}
    if order is None:
        order = sorted(found)  # SQLite locks no rows, and orders names as Python does
    return {name: found[name] for name in order if name in found}


def locked_nodes(names: set[str]) -> dict[str, Node]:
    """The named nodes' whole rows, locked in name order (docs/locking.md), by name."""
    if not names:
        return {}
    # Read without compiling a query (every cycle that decides something reads them).
    if len(names) <= NAMES_AT_ONCE:
        found = plain_rows.load(Node, None, {"name": sorted(names)}, order_by=("name",), for_update=True)
        return {n.name: n for n in found}
    return {
        n.name: n for n in plain_rows.load(Node, None, order_by=("name",), for_update=True) if n.name in names
    }


def jobs_holding(
    names: set[str], holding: Iterable[tuple[int, str, list[str]]], fields: Iterable[str]
) -> list[Job]:
    """The holding jobs with a node in ``names``, with ``fields`` read, by id."""
    ids = {job_id for job_id, _state, alloc in holding if names.intersection(alloc)}
    if not ids:
        return []
    query = Job.objects.only(*fields).order_by("id")
    if len(ids) <= NAMES_AT_ONCE:
        return list(query.filter(pk__in=sorted(ids)))
    return [j for j in query.filter(state__in=_HOLDING) if j.id in ids]
