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
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from django.db.models import F, Q

from cluster.core.states import HOLDING_JOB_STATES, JobState, NodeBase, NodeFlag
from cluster.models import Job, Node
from cluster.services import rows as plain_rows
from power.core.config import Exclusions, PowerConfig
from power.core.policy import POWER_FLAGS

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
    model instances."""
    return plain_rows.select(Job, ("id", "state", "alloc"), {"state": _HOLDING}, order_by=("id",))


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
    flagged = F("flags").bitand(_PENDING | NodeFlag.POWERED_DOWN)
    query = Q(_power=0)
    if auto:
        idle = Q(base_state__in=[NodeBase.IDLE, NodeBase.DOWN], _busy=0)
        # A node's own SuspendTime may be anything; without one, its partitions' or the
        # global one, never shorter than the shortest of those.
        since = Q(suspend_time__isnull=False)
        shortest = _shortest_suspend_time(power)
        if shortest is not None:
            # A second's margin: the core compares float seconds, the store microseconds;
            # a node read in excess is one the core decides nothing about.
            cutoff = now - shortest + 1
            since |= Q(last_busy__lte=datetime.fromtimestamp(cutoff, UTC))
            if loaded <= cutoff:
                since |= Q(last_busy__isnull=True)
        query = ~query | (idle & since)
    else:
        query = ~query
    found = (
        Node.objects.annotate(_power=flagged, _busy=F("flags").bitand(_NOT_SUSPENDABLE))
        .filter(query)
        .values_list("name", "flags")
    )
    names = set(wanted)
    for name, flags in found:
        # A powered-down node with nothing pending matters only to a job holding it.
        if flags & _PENDING or not flags & NodeFlag.POWERED_DOWN or name in held:
            names.add(name)
    return names


def _shortest_suspend_time(power: PowerConfig) -> int | None:
    """The shortest finite SuspendTime a node without its own can have, None if none."""
    values = [power.suspend_time]
    values += [p.suspend_time for p in power.partitions.values() if p.suspend_time is not None]
    finite = [v for v in values if v >= 0]
    return min(finite) if finite else None


def locked_nodes(names: set[str]) -> dict[str, Node]:
    """The named nodes' rows, locked in name order (docs/locking.md), by name."""
    if not names:
        return {}
    query = Node.objects.select_for_update().order_by("name")
    if len(names) <= NAMES_AT_ONCE:
        return {n.name: n for n in query.filter(name__in=sorted(names))}
    return {n.name: n for n in query if n.name in names}


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
