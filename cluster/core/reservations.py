"""Advanced reservations in the scheduler: the pure rules (no Django, no clock).

A reservation sets nodes (and hierarchical resource amounts, which ``hres`` handles) aside
for some users or accounts during a time window.  The adapter
(``cluster.services.reservations``) turns the stored rows into :class:`ReservationView`
and the pass runs a :class:`ReservationPlugin`, which, as Slurm does:

* holds a job that asks for a reservation with reason ``Reservation`` until the
  reservation exists, is active and lets the job's user and account in;
* confines such a job to the reservation's nodes;
* keeps every other job off the nodes of the reservations its run would overlap (from
  now to now + its time limit), so a job never runs into a reservation's start.  A job
  that needs a reserved node by name pends with ``ReqNodeNotAvail``: ``Reserved for
  maintenance`` for a MAINT reservation, else the unavailable nodes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from cluster.core.scheduler import (
    Blocked,
    JobView,
    NodeView,
    PartitionView,
    SchedulerPlugin,
    Snapshot,
    node_count,
    resolve_time_limit,
)
from cluster.core.states import Reason
from slurmwords.reasons import MAY_BE_RESERVED, RESERVED_FOR_MAINTENANCE

INFINITE = math.inf

# Slurm's reservation flags (scontrol create reservation Flags=).  MAINT and IGNORE_JOBS
# change what fsched does; the others are accepted and shown.
KNOWN_FLAGS = frozenset(
    {
        "ANY_NODES",
        "DAILY",
        "FLEX",
        "HOURLY",
        "IGNORE_JOBS",
        "LICENSE_ONLY",
        "MAGNETIC",
        "MAINT",
        "NO_HOLD_JOBS_AFTER",
        "OVERLAP",
        "PART_NODES",
        "PURGE_COMP",
        "REPLACE",
        "REPLACE_DOWN",
        "SPEC_NODES",
        "STATIC_ALLOC",
        "TIME_FLOAT",
        "USER_DELETE",
        "WEEKDAY",
        "WEEKEND",
        "WEEKLY",
    }
)
MAINT_DETAIL = RESERVED_FOR_MAINTENANCE
# Slurm's state description for required nodes that another reservation holds (squeue
# prints "ReqNodeNotAvail, May be reserved for other job"); down ones are UnavailableNodes.
RESERVED_DETAIL = MAY_BE_RESERVED


def parse_flags(text: str) -> tuple[str, ...]:
    """``maint,ignore_jobs`` -> ``("IGNORE_JOBS", "MAINT")``; ValueError on an unknown flag."""
    out = set()
    for word in (w.strip() for w in (text or "").split(",")):
        if not word:
            continue
        flag = word.upper().replace("-", "_")
        if flag not in KNOWN_FLAGS:
            raise ValueError(f"Error parsing reservation request: invalid flag {word}")
        out.add(flag)
    return tuple(sorted(out))


@dataclass(frozen=True)
class AccessList:
    """A ``Users=`` or ``Accounts=`` value: names let in, or (all ``-name``) names kept out."""

    names: frozenset[str] = frozenset()
    negated: bool = False

    @classmethod
    def parse(cls, text: str, what: str = "users") -> AccessList:
        words = [w.strip() for w in (text or "").split(",") if w.strip()]
        if not words:
            return cls()
        minus = [w.startswith("-") for w in words]
        if any(minus) and not all(minus):
            # Slurm refuses a list that both grants and denies.
            raise ValueError(f"You can not have a mix of allowed and denied {what} (- prefix)")
        return cls(frozenset(w.lstrip("-") for w in words), all(minus))

    def __bool__(self) -> bool:
        return bool(self.names)

    def admits(self, name: str) -> bool:
        return (name not in self.names) if self.negated else (name in self.names)

    def __str__(self) -> str:
        return ",".join(("-" if self.negated else "") + n for n in sorted(self.names))


@dataclass(frozen=True)
class ReservationView:
    name: str
    start: float  # epoch seconds
    end: float  # epoch seconds; INFINITE for none
    nodes: frozenset[str] = frozenset()
    users: AccessList = field(default_factory=AccessList)
    accounts: AccessList = field(default_factory=AccessList)
    flags: frozenset[str] = frozenset()
    partition: str = ""

    @property
    def maint(self) -> bool:
        return "MAINT" in self.flags

    def active(self, now: float) -> bool:
        return self.start <= now < self.end

    def overlaps(self, begin: float, end: float) -> bool:
        return self.start < end and begin < self.end

    def admits(self, user: str, account: str) -> bool:
        """Slurm: a job must match every list given (users and accounts both, if both)."""
        if not self.users and not self.accounts:
            return False
        if self.users and not self.users.admits(user):
            return False
        return not (self.accounts and not self.accounts.admits(account))


def maintenance_nodes(reservations: Iterable[ReservationView], now: float) -> frozenset[str]:
    """The nodes of the active MAINT reservations: Slurm flags them MAINTENANCE (sinfo's
    ``$``, ``maint``) while the reservation lasts."""
    return frozenset(n for r in reservations if r.maint and r.active(now) for n in r.nodes)


class ReservationPlugin(SchedulerPlugin):
    """Gates jobs by reservation and withholds reserved nodes (see the module docstring).

    ``accounts`` maps pending job ids to their account, for reservations that name
    accounts (the snapshot's job views may leave ``account`` empty).
    """

    def __init__(self, reservations: Iterable[ReservationView], accounts: Mapping[int, str] | None = None):
        self.reservations = {r.name: r for r in reservations}
        self.accounts = dict(accounts or {})
        self.now = 0.0
        self._nodes: Sequence[NodeView] = ()
        self._index: dict[str, int] = {}
        self._masks: dict[str, frozenset[int]] = {}
        self._partitions: Mapping[str, PartitionView] = {}
        self._every: frozenset[int] | None = frozenset()
        self._withheld: dict[tuple, tuple[frozenset[int], bool]] = {}

    def begin_pass(self, snapshot: Snapshot) -> None:
        self.now = snapshot.now
        self._nodes = snapshot.nodes
        # Built when first needed: most passes have no reservation and no job asking for one.
        self._index = {}
        self._every = None
        index = self._node_index() if self.reservations else {}
        self._masks = {
            r.name: frozenset(index[n] for n in r.nodes if n in index) for r in self.reservations.values()
        }
        self._partitions = snapshot.partitions
        self._withheld = {}

    def _node_index(self) -> dict[str, int]:
        if not self._index and self._nodes:
            self._index = {n.name: n.index for n in self._nodes}
        return self._index

    def _every_node(self) -> frozenset[int]:
        if self._every is None:
            self._every = frozenset(n.index for n in self._nodes)
        return self._every

    # -- helpers

    def _window_end(self, job: JobView) -> float:
        limit = resolve_time_limit(job, self._partitions.get(job.partition))
        return INFINITE if limit is None else self.now + limit * 60

    def withheld(self, job: JobView) -> tuple[frozenset[int], bool]:
        """The nodes the job may not use now, and whether a MAINT reservation is among
        the reasons.  Cached by what decides it: queues repeat shapes."""
        key = (job.reservation, job.partition, job.time_limit)
        found = self._withheld.get(key)
        if found is not None:
            return found
        if job.reservation:
            mine = self._masks.get(job.reservation, frozenset())
            found = (self._every_node() - mine, False)
        else:
            end = self._window_end(job)
            out: set[int] = set()
            maint = False
            for r in self.reservations.values():
                if r.overlaps(self.now, end) and self._masks[r.name]:
                    out |= self._masks[r.name]
                    maint = maint or r.maint
            found = (frozenset(out), maint)
        self._withheld[key] = found
        return found

    # -- hooks

    def job_gate(self, job: JobView, partition: PartitionView) -> Blocked | None:
        if job.reservation:
            r = self.reservations.get(job.reservation)
            account = job.account or self.accounts.get(job.job_id, "")
            if r is None or not r.active(self.now) or not r.admits(job.user, account):
                return Blocked(Reason.RESERVATION)
            if r.partition and r.partition != job.partition:
                return Blocked(Reason.RESERVATION, f"reservation {r.name} is for partition {r.partition}")
            return None
        if not self.reservations:
            return None
        withheld, maint = self.withheld(job)
        if not withheld:
            return None
        detail = MAINT_DETAIL if maint else ""
        if job.req_nodes:
            index = self._node_index()
            reserved = sorted(n for n in job.req_nodes if index.get(n) in withheld)
            if reserved:
                return Blocked(Reason.REQ_NODE_NOT_AVAIL, detail or RESERVED_DETAIL)
        if maint and len(set(partition.node_indices) - withheld) < node_count(job):
            # Not enough nodes outside the maintenance: say why, as Slurm does.
            return Blocked(Reason.REQ_NODE_NOT_AVAIL, MAINT_DETAIL)
        return None

    def excluded_nodes(self, job: JobView) -> frozenset[int]:
        if not self.reservations and not job.reservation:
            return frozenset()
        return self.withheld(job)[0]


__all__ = [
    "INFINITE",
    "KNOWN_FLAGS",
    "MAINT_DETAIL",
    "RESERVED_DETAIL",
    "AccessList",
    "ReservationPlugin",
    "ReservationView",
    "maintenance_nodes",
    "parse_flags",
]
