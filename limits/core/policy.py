"""Accounting policy: associations, QOS, limit resolution and enforcement (pure, no Django).

Implements Slurm's resource_limits.html.  The data model is plain frozen dataclasses
(:class:`Association`, :class:`QOS`, :class:`PartitionLimits`, :class:`User`) gathered and
validated by :class:`Policy`.  On top of it:

* :meth:`Policy.resolve` — every limit that applies to a (user, account, partition, QOS),
  its value and the level it comes from (the console's effective-limit calculator and the
  pending explainer use it);
* :func:`check_submit` / :meth:`LimitState.check_submit` — None, or why a submission is
  refused (submit limits, invalid account/QOS, and with DenyOnLimit every limit the job
  breaches on its own, Grp limits treated as Max);
* :class:`LimitState` — built per scheduler pass from the running (and pending) jobs:
  :meth:`LimitState.check_run` answers None or a :class:`LimitBlock` (Slurm's exact reason
  code plus the limit, level, value and usage), :meth:`LimitState.charge_start` counts a job
  started in the pass, :meth:`LimitState.accrue_plan` applies the accrue limits (they only
  stop age priority from growing) and :meth:`LimitState.kills` lists the running jobs to end
  when TRES-minutes budgets are exhausted without ``AccountingStorageEnforce=safe``.

Hierarchy (resource_limits.html, "Hierarchy"): partition QOS, job QOS (swapped by the job QOS's
``OverPartQOS``), user association, account associations up the tree, root, partition.  The
first level that defines a limit wins, per TRES for TRES limits.  A QOS MaxJobsPerUser and an
association MaxJobs are the same limit (so are MaxSubmitJobsPerUser/MaxSubmitJobs and
MaxJobsAccruePerUser/MaxJobsAccrue): the page's worked example takes MaxJobs=20 from the
partition QOS over MaxJobs=4 of the user association.  Exceptions:

* MaxWall, MaxNodes and MinNodes are bounded by the partition (MaxTime, MaxNodes, MinNodes)
  unless the job's QOS has ``PartitionTimeLimit``, ``PartitionMaxNodes``,
  ``PartitionMinNodes``;
* Grp limits: the first QOS defining one wins (as in Slurm's ``acct_policy``), otherwise it
  is enforced at *every* association level that defines it, each against the usage of that
  association and its children;
* the job QOS's ``LimitFactor`` multiplies the associations' GrpTRES and MaxTRESPerJob.

Counting scope follows the level that defines a limit: an association Max limit counts the
job's own association, a QOS per-user limit the user's jobs in that QOS, a per-account limit
the account's jobs in that QOS, a Grp limit everything under the level.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache, cached_property
from typing import Any

from limits.core import reasons as R
from limits.core.usage import EMPTY, UsageKey, UsageRecord, assoc_key, qos_key
from slurmwords.tres import BillingWeights, billing, canonical_name, format_count


class PolicyError(ValueError):
    """An association tree, QOS or limit that cannot be accepted; the message says what."""


INF = math.inf
ROOT = "root"
FAIRSHARE_PARENT = "parent"

QOS_FLAGS = frozenset(
    {
        "DenyOnLimit",
        "EnforceUsageThreshold",
        "NoDecay",
        "NoReserve",
        "OverPartQOS",
        "PartitionMaxNodes",
        "PartitionMinNodes",
        "PartitionTimeLimit",
        "RequiresReservation",
        "UsageFactorSafe",
        "Relative",
    }
)

# Levels, in the words the console shows.
PARTITION_QOS = "PartitionQOS"
JOB_QOS = "QOS"
USER = "User"
ACCOUNT = "Account"
ROOT_LEVEL = "Root"
PARTITION = "Partition"


# --------------------------------------------------------------------------- enforcement


@dataclass(frozen=True)
class Enforce:
    """``AccountingStorageEnforce``: limits and qos imply associations; safe implies limits."""

    associations: bool = False
    limits: bool = False
    qos: bool = False
    safe: bool = False
    wckeys: bool = False

    @classmethod
    def parse(cls, text: str) -> Enforce:
        words = {w.strip().lower() for w in text.split(",") if w.strip()}
        known = {"associations", "limits", "qos", "safe", "wckeys", "nojobs", "nosteps", "all", "none", "0"}
        bad = sorted(words - known)
        if bad:
            raise PolicyError(f"AccountingStorageEnforce: unknown option {bad[0]!r}")
        if "all" in words:
            words |= {"associations", "limits", "qos", "safe", "wckeys"}
        safe = "safe" in words
        limits = "limits" in words or safe
        qos = "qos" in words
        wckeys = "wckeys" in words
        return cls(
            associations="associations" in words or limits or qos or wckeys,
            limits=limits,
            qos=qos,
            safe=safe,
            wckeys=wckeys,
        )

    def __str__(self) -> str:
        names = [n for n in ("associations", "limits", "qos", "safe", "wckeys") if getattr(self, n)]
        return ",".join(names) or "none"


# --------------------------------------------------------------------------- the data model

TresLimit = Mapping[str, int]


@dataclass(frozen=True)
class AssocLimits:
    """Association limits (sacctmgr names in comments).  None / empty map: not set here.
    Times are minutes (GrpWall, MaxWallDurationPerJob), TRES-minutes for *Mins."""

    grp_jobs: int | None = None  # GrpJobs
    grp_jobs_accrue: int | None = None  # GrpJobsAccrue
    grp_submit_jobs: int | None = None  # GrpSubmitJobs
    grp_tres: TresLimit = field(default_factory=dict)  # GrpTRES
    grp_tres_mins: TresLimit = field(default_factory=dict)  # GrpTRESMins
    grp_tres_run_mins: TresLimit = field(default_factory=dict)  # GrpTRESRunMins
    grp_wall: int | None = None  # GrpWall
    max_jobs: int | None = None  # MaxJobs
    max_jobs_accrue: int | None = None  # MaxJobsAccrue
    max_submit_jobs: int | None = None  # MaxSubmitJobs
    max_tres_mins_per_job: TresLimit = field(default_factory=dict)  # MaxTRESMinsPerJob
    max_tres_per_job: TresLimit = field(default_factory=dict)  # MaxTRESPerJob
    max_tres_per_node: TresLimit = field(default_factory=dict)  # MaxTRESPerNode
    max_wall_duration_per_job: int | None = None  # MaxWallDurationPerJob
    min_prio_threshold: int | None = None  # MinPrioThreshold


@dataclass(frozen=True)
class QOSLimits:
    """QOS limits; same conventions as :class:`AssocLimits`."""

    grp_jobs: int | None = None
    grp_jobs_accrue: int | None = None
    grp_submit_jobs: int | None = None
    grp_tres: TresLimit = field(default_factory=dict)
    grp_tres_mins: TresLimit = field(default_factory=dict)
    grp_tres_run_mins: TresLimit = field(default_factory=dict)
    grp_wall: int | None = None
    max_jobs_accrue_per_account: int | None = None
    max_jobs_accrue_per_user: int | None = None
    max_jobs_per_account: int | None = None
    max_jobs_per_user: int | None = None
    max_submit_jobs_per_account: int | None = None
    max_submit_jobs_per_user: int | None = None
    max_tres_mins_per_job: TresLimit = field(default_factory=dict)
    max_tres_per_account: TresLimit = field(default_factory=dict)
    max_tres_per_job: TresLimit = field(default_factory=dict)
    max_tres_per_node: TresLimit = field(default_factory=dict)
    max_tres_per_user: TresLimit = field(default_factory=dict)
    max_wall_duration_per_job: int | None = None
    min_prio_threshold: int | None = None
    min_tres_per_job: TresLimit = field(default_factory=dict)


@dataclass(frozen=True)
class Association:
    """(cluster, account, user, partition).  ``user=""`` is an account association, a node
    of the account tree whose ``parent`` is its parent account (``None`` only for root; any
    other account without a parent hangs under root).  A user association hangs under its
    account's association.  ``qos``/``default_qos`` None inherit from the parent.
    ``tres_decay_half_life`` is TresDecayHalfLife in seconds per TRES."""

    account: str
    user: str = ""
    partition: str = ""
    parent: str | None = None
    fairshare: int | str = 1
    limits: AssocLimits = field(default_factory=AssocLimits)
    qos: frozenset[str] | None = None
    default_qos: str | None = None
    tres_decay_half_life: Mapping[str, int] = field(default_factory=dict)

    @cached_property
    def key(self) -> UsageKey:
        return assoc_key(self.account, self.user, self.partition)

    @cached_property
    def source(self) -> Source:
        level = USER if self.user else ROOT_LEVEL if self.account == ROOT else ACCOUNT
        return Source(level, self.label, "assoc")

    @cached_property
    def sparse(self) -> tuple[tuple[tuple, str, int], ...]:
        return _sparse(self.limits, assoc=True)

    @property
    def label(self) -> str:
        if not self.user:
            return self.account
        return f"{self.account}/{self.user}" + (f"/{self.partition}" if self.partition else "")


@dataclass(frozen=True)
class QOS:
    name: str
    priority: int = 0
    flags: frozenset[str] = frozenset()
    usage_factor: float = 1.0
    limit_factor: float | None = None
    grace_time: int = 0  # seconds of preemption grace (PreemptMode CANCEL/REQUEUE)
    limits: QOSLimits = field(default_factory=QOSLimits)
    tres_decay_half_life: Mapping[str, int] = field(default_factory=dict)

    def has(self, flag: str) -> bool:
        return flag in self.flags

    @cached_property
    def sparse(self) -> tuple[tuple[tuple, str, int], ...]:
        return _sparse(self.limits, assoc=False)


@dataclass(frozen=True)
class PartitionLimits:
    """A partition's limits as the accounting policy sees them.  ``qos`` is its partition
    QOS; ``allow_accounts``/``allow_qos`` None mean ALL."""

    name: str
    max_time: int | None = None  # minutes, None = INFINITE
    max_nodes: int | None = None
    min_nodes: int = 0
    qos: str = ""
    billing_weights: BillingWeights | None = None
    allow_accounts: frozenset[str] | None = None
    allow_qos: frozenset[str] | None = None
    priority_job_factor: int = 1


@dataclass(frozen=True)
class User:
    name: str
    default_account: str = ""
    wckeys: frozenset[str] = frozenset()
    default_wckey: str = ""


# --------------------------------------------------------------------------- resolution

# canonical limit -> (association attribute, QOS attribute, is Grp, is TRES, QOS field name)
_SLOTS: tuple[tuple[str, str | None, str, bool, bool, str], ...] = (
    ("GrpJobs", "grp_jobs", "grp_jobs", True, False, "GrpJobs"),
    ("GrpJobsAccrue", "grp_jobs_accrue", "grp_jobs_accrue", True, False, "GrpJobsAccrue"),
    ("GrpSubmitJobs", "grp_submit_jobs", "grp_submit_jobs", True, False, "GrpSubmitJobs"),
    ("GrpTRES", "grp_tres", "grp_tres", True, True, "GrpTRES"),
    ("GrpTRESMins", "grp_tres_mins", "grp_tres_mins", True, True, "GrpTRESMins"),
    ("GrpTRESRunMins", "grp_tres_run_mins", "grp_tres_run_mins", True, True, "GrpTRESRunMins"),
    ("GrpWall", "grp_wall", "grp_wall", True, False, "GrpWall"),
    ("MaxJobs", "max_jobs", "max_jobs_per_user", False, False, "MaxJobsPerUser"),
    ("MaxJobsAccrue", "max_jobs_accrue", "max_jobs_accrue_per_user", False, False, "MaxJobsAccruePerUser"),
    ("MaxSubmitJobs", "max_submit_jobs", "max_submit_jobs_per_user", False, False, "MaxSubmitJobsPerUser"),
    ("MaxTRESMinsPerJob", "max_tres_mins_per_job", "max_tres_mins_per_job", False, True, "MaxTRESMinsPerJob"),
    ("MaxTRESPerJob", "max_tres_per_job", "max_tres_per_job", False, True, "MaxTRESPerJob"),
    ("MaxTRESPerNode", "max_tres_per_node", "max_tres_per_node", False, True, "MaxTRESPerNode"),
    (
        "MaxWallDurationPerJob",
        "max_wall_duration_per_job",
        "max_wall_duration_per_job",
        False,
        False,
        "MaxWallDurationPerJob",
    ),
    ("MinPrioThreshold", "min_prio_threshold", "min_prio_threshold", False, False, "MinPrioThreshold"),
    ("MaxJobsPerAccount", None, "max_jobs_per_account", False, False, "MaxJobsPerAccount"),
    ("MaxJobsAccruePerAccount", None, "max_jobs_accrue_per_account", False, False, "MaxJobsAccruePerAccount"),
    ("MaxSubmitJobsPerAccount", None, "max_submit_jobs_per_account", False, False, "MaxSubmitJobsPerAccount"),
    ("MaxTRESPerUser", None, "max_tres_per_user", False, True, "MaxTRESPerUser"),
    ("MaxTRESPerAccount", None, "max_tres_per_account", False, True, "MaxTRESPerAccount"),
    ("MinTRESPerJob", None, "min_tres_per_job", False, True, "MinTRESPerJob"),
)
LIMIT_NAMES = tuple(s[0] for s in _SLOTS)
_PER_ACCOUNT = frozenset(
    {"MaxJobsPerAccount", "MaxJobsAccruePerAccount", "MaxSubmitJobsPerAccount", "MaxTRESPerAccount"}
)
_PER_USER = frozenset({"MaxJobs", "MaxJobsAccrue", "MaxSubmitJobs", "MaxTRESPerUser"})
_LIMIT_FACTOR_SLOTS = frozenset({"GrpTRES", "MaxTRESPerJob"})


@dataclass(frozen=True, slots=True)
class Source:
    """Where a limit comes from: ``level`` (PartitionQOS, QOS, User, Account, Root,
    Partition), ``name`` (QOS, association label, account or partition) and ``scope``
    (``qos``, ``assoc`` or ``partition``: the reason-code family)."""

    level: str
    name: str
    scope: str

    def __str__(self) -> str:
        if self.level in (PARTITION_QOS, JOB_QOS):
            return f"{'partition QOS' if self.level == PARTITION_QOS else 'QOS'} {self.name}"
        if self.level == PARTITION:
            return f"partition {self.name}"
        if self.level == USER:
            return f"association {self.name}"
        return f"{'root' if self.level == ROOT_LEVEL else 'account'} association {self.name}"


@dataclass(frozen=True, slots=True)
class ResolvedLimit:
    """One limit in effect: ``limit`` is the canonical name (association spelling: MaxJobs
    covers QOS MaxJobsPerUser), ``field`` the name as set at its level, ``tres`` the TRES
    for TRES limits (else ""), ``counter`` the usage group it is counted against."""

    limit: str
    tres: str
    value: int
    source: Source
    field: str
    counter: UsageKey = ()

    @property
    def reason(self) -> str:
        """The pending reason this limit gives, as squeue prints it."""
        return _reason(self.source.scope, self.limit, self.tres)

    @property
    def label(self) -> str:
        if self.tres:
            return f"{self.field}={self.tres}={format_count(self.tres, self.value)}"
        return f"{self.field}={self.value}"

    def __str__(self) -> str:
        return f"{self.label} ({self.source})"


@dataclass(frozen=True)
class EffectiveLimits:
    """Everything :meth:`Policy.resolve` found for one (user, account, partition, QOS)."""

    user: str
    account: str
    partition: str
    qos: str
    partition_qos: str
    limits: tuple[ResolvedLimit, ...]

    def get(self, limit: str, tres: str = "") -> tuple[ResolvedLimit, ...]:
        """Every entry for ``limit`` (one for Max/Min limits, one per level for Grp ones)."""
        return tuple(r for r in self.limits if r.limit == limit and r.tres == tres)

    def value(self, limit: str, tres: str = "") -> int | None:
        """The effective value (the tightest for a Grp limit enforced at several levels)."""
        entries = self.get(limit, tres)
        if not entries:
            return None
        return min(r.value for r in entries) if limit != "MinTRESPerJob" else max(r.value for r in entries)


class Policy:
    """The accounting policy, validated when built (raises :class:`PolicyError`).

    Immutable once built: resolution results are cached on it across scheduler passes, so
    build a new Policy when a limit changes.
    """

    def __init__(
        self,
        *,
        associations: Iterable[Association] = (),
        qos: Iterable[QOS] = (),
        partitions: Iterable[PartitionLimits] = (),
        users: Iterable[User] = (),
        enforce: Enforce | None = None,
        multifactor: bool = True,
        default_qos: str = "normal",
        tracked_gres: frozenset[str] | None = None,
    ) -> None:
        self.enforce = enforce or Enforce()
        # The gres/... TRES the cluster tracks (AccountingStorageTRES); a job's other GRES
        # run but are not accounted.  None: every GRES is (a policy built without a cluster).
        self.tracked_gres = tracked_gres
        self.multifactor = multifactor  # GrpTRESMins is only enforced with priority/multifactor
        self.qos: dict[str, QOS] = {}
        for q in qos:
            if q.name in self.qos:
                raise PolicyError(f"QOS {q.name!r} defined twice")
            self.qos[q.name] = q
        self.partitions: dict[str, PartitionLimits] = {p.name: p for p in partitions}
        self.users: dict[str, User] = {u.name: u for u in users}
        self.default_qos = default_qos if default_qos in self.qos else ""
        self.assocs: dict[UsageKey, Association] = {}
        for a in associations:
            if a.key in self.assocs:
                raise PolicyError(f"association {a.label} defined twice")
            self.assocs[a.key] = a
        if self.assocs and assoc_key(ROOT) not in self.assocs:
            self.assocs[assoc_key(ROOT)] = Association(ROOT)
        self.children: dict[str, list[Association]] = {}
        self._chains: dict[UsageKey, list[Association]] = {}
        self._validated = False
        self._validate()
        self._validated = True
        self._plans: dict[tuple[str, str, str, str], _Plan] = {}
        self._content_plans: dict[tuple, _Plan] = {}
        self._tracking: dict[UsageKey, tuple[bool, tuple[str, ...], tuple[str, ...]]] = {}
        self._chain_charges: dict[
            UsageKey, list[tuple[UsageKey, bool, tuple[str, ...], tuple[str, ...]]]
        ] = {}
        self._qos_halves: dict[tuple[str, str], tuple[list[tuple], frozenset[tuple[str, str]]]] = {}
        self._assoc_halves: dict[tuple[UsageKey, float | None], tuple[ResolvedLimit, ...]] = {}

    # -- validation ----------------------------------------------------------------

    def _validate(self) -> None:
        for q in self.qos.values():
            _check_flags(q)
            _check_limits(q.limits, f"QOS {q.name}")
            _check_half_lives(q.tres_decay_half_life, f"QOS {q.name}")
            if q.usage_factor < 0:
                raise PolicyError(f"QOS {q.name}: UsageFactor must be >= 0, not {q.usage_factor}")
            if q.limit_factor is not None and q.limit_factor < 0:
                raise PolicyError(f"QOS {q.name}: LimitFactor must be >= 0, not {q.limit_factor}")
            if q.grace_time < 0:
                raise PolicyError(f"QOS {q.name}: GraceTime must be >= 0")
        for p in self.partitions.values():
            if p.qos and p.qos not in self.qos:
                raise PolicyError(f"partition {p.name}: QOS {p.qos!r} does not exist")
            for name in p.allow_qos or ():
                if name not in self.qos:
                    raise PolicyError(
                        f"partition {p.name}: AllowQos names QOS {name!r}, which does not exist"
                    )
        accounts = {k[1]: a for k, a in self.assocs.items() if not a.user}
        for a in self.assocs.values():
            where = f"association {a.label}"
            _check_limits(a.limits, where)
            _check_half_lives(a.tres_decay_half_life, where)
            if not (a.fairshare == FAIRSHARE_PARENT or (isinstance(a.fairshare, int) and a.fairshare >= 0)):
                raise PolicyError(
                    f"{where}: Fairshare must be an integer >= 0 or 'parent', not {a.fairshare!r}"
                )
            for name in a.qos or ():
                if name not in self.qos:
                    raise PolicyError(f"{where}: QOS {name!r} does not exist")
            if a.default_qos is not None and a.default_qos not in self.qos:
                raise PolicyError(f"{where}: DefaultQOS {a.default_qos!r} does not exist")
            if a.user:
                if a.account not in accounts:
                    raise PolicyError(f"{where}: account {a.account!r} does not exist")
            elif a.account != ROOT:
                parent = a.parent or ROOT
                if parent not in accounts:
                    raise PolicyError(f"{where}: parent account {parent!r} does not exist")
                self.children.setdefault(parent, []).append(a)
        # Cycles: walk up from every account; a walk longer than the tree is a cycle.
        for name in accounts:
            seen = [name]
            cur = name
            while cur != ROOT:
                cur = accounts[cur].parent or ROOT
                if cur in seen:
                    cycle = " -> ".join([*seen[seen.index(cur) :], cur])
                    raise PolicyError(f"cycle in the account tree: {cycle}")
                seen.append(cur)
        for a in self.assocs.values():
            allowed = self.allowed_qos(a)
            dq = self._inherited(a, "default_qos")
            if dq is not None and allowed is not None and dq not in allowed:
                raise PolicyError(f"association {a.label}: DefaultQOS {dq!r} is not in its QOS list")

    # -- lookups ---------------------------------------------------------------------

    def account(self, name: str) -> Association | None:
        return self.assocs.get(assoc_key(name))

    def association(self, user: str, account: str, partition: str = "") -> Association | None:
        """The user's association: the partition-specific one if it exists, else the general."""
        if not account:
            u = self.users.get(user)
            account = u.default_account if u else ""
        if partition:
            a = self.assocs.get(assoc_key(account, user, partition))
            if a is not None:
                return a
        return self.assocs.get(assoc_key(account, user, ""))

    def top_tree(self, account: str) -> set[str]:
        """The accounts under ``account``'s top account (the one below root), the account
        itself if it is unknown: whose active jobs a new job's submit limits can count."""
        top = account
        a = self.account(account)
        if a is not None:
            chain = self.chain(a)
            top = chain[-2].account if len(chain) >= 2 else account
        tree: set[str] = set()
        todo = [top]
        while todo:
            name = todo.pop()
            tree.add(name)
            todo.extend(c.account for c in self.children.get(name, ()))
        return tree

    def chain(self, assoc: Association) -> list[Association]:
        """The association and its ancestors up to root (cached once the tree is checked)."""
        cached = self._chains.get(assoc.key)
        if cached is not None:
            return cached
        out = [assoc]
        cur = self.assocs[assoc_key(assoc.account)] if assoc.user else assoc
        if assoc.user:
            out.append(cur)
        while cur.account != ROOT:
            cur = self.assocs[assoc_key(cur.parent or ROOT)]
            out.append(cur)
        if self._validated:
            self._chains[assoc.key] = out
        return out

    def _inherited(self, assoc: Association, attr: str) -> Any:
        for a in self.chain(assoc):
            value = getattr(a, attr)
            if value is not None:
                return value
        return None

    def allowed_qos(self, assoc: Association) -> frozenset[str] | None:
        """The association's QOS list (inherited); None when no level sets one (any QOS)."""
        return self._inherited(assoc, "qos")

    def job_qos_name(self, assoc: Association | None, qos: str) -> str:
        """The job's QOS: the one asked for, else the association's DefaultQOS, else the
        cluster default (``normal`` when it exists)."""
        if qos:
            return qos
        if assoc is not None:
            dq = self._inherited(assoc, "default_qos")
            if dq:
                return dq
            allowed = self.allowed_qos(assoc)
            if allowed is not None and len(allowed) == 1:
                return next(iter(allowed))
        return self.default_qos

    def tracking(self, key: UsageKey) -> tuple[bool, tuple[str, ...], tuple[str, ...]]:
        """What a group's counter must track, decided by the group's own limits (so every job
        in the group feeds it, whichever QOS or association limit a given job resolves to):
        job counts, TRES in use, TRES-minutes booked by running jobs."""
        memo = key if key[0] in ("assoc", "qos") else key[:2]
        cached = self._tracking.get(memo)
        if cached is not None:
            return cached
        counts = False
        tres: set[str] = set()
        run: set[str] = set()
        if key[0] == "assoc":
            a = self.assocs.get(key)
            if a is not None:
                lim = a.limits
                counts = any(v is not None for v in (lim.grp_jobs, lim.grp_submit_jobs, lim.grp_jobs_accrue))
                if a.user:  # Max job counts, inherited from any ancestor, count here
                    counts = counts or any(
                        v is not None
                        for c in self.chain(a)
                        for v in (c.limits.max_jobs, c.limits.max_submit_jobs, c.limits.max_jobs_accrue)
                    )
                tres = set(lim.grp_tres)
                run = set(lim.grp_tres_run_mins) | set(lim.grp_tres_mins)
        else:
            q = self.qos.get(key[1])
            if q is not None:
                lim = q.limits
                if key[0] == "qos":
                    counts = any(
                        v is not None for v in (lim.grp_jobs, lim.grp_submit_jobs, lim.grp_jobs_accrue)
                    )
                    tres = set(lim.grp_tres)
                    run = set(lim.grp_tres_run_mins) | set(lim.grp_tres_mins)
                elif key[0] == "qos_user":
                    counts = any(
                        v is not None
                        for v in (
                            lim.max_jobs_per_user,
                            lim.max_submit_jobs_per_user,
                            lim.max_jobs_accrue_per_user,
                        )
                    )
                    tres = set(lim.max_tres_per_user)
                else:
                    counts = any(
                        v is not None
                        for v in (
                            lim.max_jobs_per_account,
                            lim.max_submit_jobs_per_account,
                            lim.max_jobs_accrue_per_account,
                        )
                    )
                    tres = set(lim.max_tres_per_account)
        result = (counts, tuple(sorted(tres)), tuple(sorted(run)))
        self._tracking[memo] = result
        return result

    def billing(self, partition: str, tres: Mapping[str, float], nodes: int = 1) -> float:
        p = self.partitions.get(partition)
        return billing(tres, p.billing_weights if p else None, nodes=nodes)

    # -- resolution --------------------------------------------------------------------

    def resolve(self, user: str, account: str, partition: str = "", qos: str = "") -> EffectiveLimits:
        """Every limit that applies to a job of ``user`` in ``account`` on ``partition`` with
        ``qos`` ("" = the default), with its value and level.  Raises PolicyError for an
        unknown association or QOS."""
        plan = self.plan(user, account, partition, qos)
        if plan.error:
            raise PolicyError(plan.error[1])
        eff = plan.effective
        return eff if eff.partition == partition else replace(eff, partition=partition)

    def plan(self, user: str, account: str, partition: str, qos: str) -> _Plan:
        key = (user, account, partition, qos)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = self._make_plan(user, account, partition, qos)
        return plan

    def _make_plan(self, user: str, account: str, partition: str, qos: str) -> _Plan:
        assoc = self.association(user, account, partition)
        part = self.partitions.get(partition)
        if assoc is None and self.enforce.associations:
            acct = account or (self.users[user].default_account if user in self.users else "")
            return _Plan.failed(
                R.INVALID_ACCOUNT,
                f"no association for user {user} in account {acct or '(none)'}"
                + (f" on partition {partition}" if partition else ""),
            )
        qname = self.job_qos_name(assoc, qos)
        job_q = self.qos.get(qname) if qname else None
        if qname and job_q is None:
            return _Plan.failed(R.INVALID_QOS, f"QOS {qname} does not exist")
        if self.enforce.qos and assoc is not None and job_q is not None:
            allowed = self.allowed_qos(assoc)
            if allowed is not None and qname not in allowed:
                return _Plan.failed(
                    R.QOS_NOT_ALLOWED, f"QOS {qname} is not allowed for association {assoc.label}"
                )
        if part is not None:
            if (
                part.allow_accounts is not None
                and assoc is not None
                and assoc.account not in part.allow_accounts
            ):
                return _Plan.failed(
                    R.ACCOUNT_NOT_ALLOWED, f"account {assoc.account} may not use partition {partition}"
                )
            if part.allow_qos is not None and qname and qname not in part.allow_qos:
                return _Plan.failed(R.QOS_NOT_ALLOWED, f"QOS {qname} may not use partition {partition}")
        part_q = self.qos.get(part.qos) if part is not None and part.qos else None
        # Keys that differ only by partitions without limits of their own resolve alike:
        # share one plan (and its counters' bookkeeping) between them.
        bounded = part is not None and (
            part.max_time is not None or part.max_nodes is not None or part.min_nodes or part.qos
        )
        content = (assoc.key if assoc else (user, account), qname, partition if bounded else "")
        shared = self._content_plans.get(content)
        if shared is not None:
            return shared
        chain = self.chain(assoc) if assoc is not None else []
        limits = _resolve(self, user, chain=chain, job_q=job_q, part_q=part_q, part=part)
        eff = EffectiveLimits(
            user,
            assoc.account if assoc else account,
            partition,
            qname,
            part_q.name if part_q else "",
            tuple(limits),
        )
        plan = _Plan(
            effective=eff,
            assoc=assoc,
            chain=tuple(chain),
            job_qos=job_q,
            part_qos=part_q,
            partition=part,
            deny=any(q is not None and q.has("DenyOnLimit") for q in (job_q, part_q)),
            usage_factor=job_q.usage_factor if job_q else 1.0,
            usage_factor_safe=bool(job_q and job_q.has("UsageFactorSafe")),
        )
        plan.charges = self._charges_for(plan)
        self._content_plans[content] = plan
        return plan

    def _charges_for(
        self, plan: _Plan
    ) -> tuple[tuple[UsageKey, bool, tuple[str, ...], tuple[str, ...]], ...]:
        """Every group a job of this key feeds that tracks something (see :meth:`tracking`)."""
        out: list[tuple[UsageKey, bool, tuple[str, ...], tuple[str, ...]]] = []
        if plan.assoc is not None:
            chain_charges = self._chain_charges.get(plan.assoc.key)
            if chain_charges is None:
                chain_charges = self._chain_charges[plan.assoc.key] = [
                    (a.key, *t) for a in plan.chain if (t := self.tracking(a.key))[0] or t[1] or t[2]
                ]
            out.extend(chain_charges)
        user, account = plan.effective.user, plan.effective.account
        seen = set()
        for q in (plan.job_qos, plan.part_qos):
            if q is None or q.name in seen:
                continue
            seen.add(q.name)
            for k in (qos_key(q.name), ("qos_user", q.name, user), ("qos_acct", q.name, account)):
                t = self.tracking(k)
                if t[0] or t[1] or t[2]:
                    out.append((k, *t))
        return tuple(out)


def _check_flags(q: QOS) -> None:
    bad = sorted(set(q.flags) - QOS_FLAGS)
    if bad:
        raise PolicyError(f"QOS {q.name}: unknown flag {bad[0]!r}")


def _check_limits(limits: AssocLimits | QOSLimits, where: str) -> None:
    for name, value in vars(limits).items():
        label = name
        if isinstance(value, Mapping):
            for tres, count in value.items():
                try:
                    canon = canonical_name(tres)
                except ValueError as exc:
                    raise PolicyError(f"{where}: {label}: {exc}") from None
                if canon != tres:
                    raise PolicyError(f"{where}: {label}: TRES {tres!r} must be written {canon!r}")
                if not isinstance(count, int) or count < 0:
                    raise PolicyError(f"{where}: {label}: {tres}={count} is not a count >= 0 (-1 unsets)")
        elif value is not None and (not isinstance(value, int) or value < 0):
            raise PolicyError(f"{where}: {label}={value} is not a number >= 0 (-1 unsets)")


def _check_half_lives(values: Mapping[str, int], where: str) -> None:
    for tres, seconds in values.items():
        try:
            canonical_name(tres)
        except ValueError as exc:
            raise PolicyError(f"{where}: TresDecayHalfLife: {exc}") from None
        if seconds < 0:
            raise PolicyError(f"{where}: TresDecayHalfLife {tres}={seconds} must be >= 0")


def _sparse(limits: AssocLimits | QOSLimits, assoc: bool) -> tuple[tuple[tuple, str, int], ...]:
    """The (slot, tres, value) a level defines, in slot order: levels define few limits, so
    resolution walks these instead of every slot of every level."""
    out = []
    for slot in _SLOTS:
        attr = slot[1] if assoc else slot[2]
        if attr is None:
            continue
        value = getattr(limits, attr)
        if slot[4]:
            out.extend((slot, tres, count) for tres, count in value.items())
        elif value is not None:
            out.append((slot, "", value))
    return tuple(out)


_RANK = {slot[0]: i for i, slot in enumerate(_SLOTS)}


def _qos_half(job_q: QOS | None, part_q: QOS | None) -> tuple[list[tuple], frozenset[tuple[str, str]]]:
    """The QOS levels' first definitions as (slot, tres, value, source), and the
    (limit, tres) pairs they define (which mask the association levels)."""
    pq = (part_q, Source(PARTITION_QOS, part_q.name, "qos")) if part_q is not None else None
    jq = (job_q, Source(JOB_QOS, job_q.name, "qos")) if job_q is not None else None
    if pq and jq and part_q is job_q:
        pq = None  # the same QOS twice is one level
    order = [jq, pq] if job_q is not None and job_q.has("OverPartQOS") else [pq, jq]
    found: dict[tuple[str, str], tuple] = {}
    for level in order:
        if level is None:
            continue
        q, src = level
        for slot, tres, value in q.sparse:
            name = slot[0]
            if (name, tres) in found or (name == "GrpJobsAccrue" and src.level == PARTITION_QOS):
                continue  # GrpJobsAccrue "only applies to the job's QOS"
            found[(name, tres)] = (slot, tres, value, src, q.name)
    return list(found.values()), frozenset(found)


def _assoc_half(chain: Sequence[Association], factor: float | None) -> tuple[ResolvedLimit, ...]:
    """The association levels' limits: the first definition of each Max limit (counted on the
    user association) and every level's Grp limits (counted on that level)."""
    user_assoc = chain[0]
    found: dict[tuple[str, str], ResolvedLimit] = {}
    grp: list[ResolvedLimit] = []
    for a in chain:
        src = a.source
        for slot, tres, raw in a.sparse:
            name = slot[0]
            value = int(raw * factor) if factor is not None and name in _LIMIT_FACTOR_SLOTS else raw
            if slot[3]:
                grp.append(ResolvedLimit(name, tres, value, src, name, a.key))
            elif (name, tres) not in found:
                counter = user_assoc.key if name in _PER_USER else ()
                found[(name, tres)] = ResolvedLimit(name, tres, value, src, name, counter)
    return (*found.values(), *grp)


def _resolve(
    policy: Policy,
    user: str,
    *,
    chain: Sequence[Association],
    job_q: QOS | None,
    part_q: QOS | None,
    part: PartitionLimits | None,
) -> list[ResolvedLimit]:
    """The hierarchy for one key, from the two halves cached on the Policy."""
    qkey = (job_q.name if job_q else "", part_q.name if part_q else "")
    half = policy._qos_halves.get(qkey)
    if half is None:
        half = policy._qos_halves[qkey] = _qos_half(job_q, part_q)
    q_entries, defined = half
    account = chain[0].account if chain else ""
    out: list[ResolvedLimit] = []
    for slot, tres, value, src, qname in q_entries:
        name = slot[0]
        if slot[3]:
            counter: UsageKey = qos_key(qname)
        elif name in _PER_ACCOUNT:
            counter = ("qos_acct", qname, account)
        elif name in _PER_USER:
            counter = ("qos_user", qname, user)
        else:
            counter = ()
        out.append(ResolvedLimit(name, tres, value, src, slot[5], counter))
    if chain:
        factor = job_q.limit_factor if job_q is not None else None
        akey = (chain[0].key, factor)
        assoc = policy._assoc_halves.get(akey)
        if assoc is None:
            assoc = policy._assoc_halves[akey] = _assoc_half(chain, factor)
        if defined:
            out.extend(r for r in assoc if (r.limit, r.tres) not in defined)
        else:
            out.extend(assoc)
    out.sort(key=lambda r: _RANK[r.limit])  # stable: keeps level order within a limit
    if part is not None and (part.max_time is not None or part.max_nodes is not None or part.min_nodes):
        out = _partition_bounds(out, job_q, part_q, part)
    return out


def _partition_bounds(
    limits: list[ResolvedLimit], job_q: QOS | None, part_q: QOS | None, part: PartitionLimits
) -> list[ResolvedLimit]:
    """MaxWall, MaxNodes and MinNodes are bounded by the partition unless the QOS flags
    PartitionTimeLimit / PartitionMaxNodes / PartitionMinNodes lift the bound (Slurm's
    resource_limits.html, "Hierarchy")."""
    flags = (job_q.flags if job_q else frozenset()) | (part_q.flags if part_q else frozenset())
    src = Source(PARTITION, part.name, "partition")
    bounds = (
        ("MaxWallDurationPerJob", "", part.max_time, "PartitionTimeLimit", "MaxTime", min),
        ("MaxTRESPerJob", "node", part.max_nodes, "PartitionMaxNodes", "MaxNodes", min),
        ("MinTRESPerJob", "node", part.min_nodes or None, "PartitionMinNodes", "MinNodes", max),
    )
    for limit, tres, value, flag, field_name, pick in bounds:
        if value is None:
            continue
        idx = next((i for i, r in enumerate(limits) if r.limit == limit and r.tres == tres), None)
        mine = ResolvedLimit(limit, tres, value, src, field_name)
        if idx is None:
            limits.append(mine)
        elif flag not in flags and pick(limits[idx].value, value) != limits[idx].value:
            limits[idx] = mine
    return limits


# --------------------------------------------------------------------------- jobs


@dataclass(frozen=True, slots=True, eq=False)
class JobShape:
    """A job's size as the limits see it: whole-job TRES (with billing), TRES on its
    largest node, node count and time limit (minutes, None = INFINITE).  Shared by every job
    of the same request, so derived values are computed once."""

    tres: Mapping[str, int]
    per_node: Mapping[str, int]
    nodes: int
    time_limit: int | None

    def tres_mins(self, factor: float = 1.0) -> dict[str, float]:
        if self.time_limit is None:
            return {t: (INF if c else 0.0) for t, c in self.tres.items()}
        return {t: c * self.time_limit * factor for t, c in self.tres.items()}


def make_shape(
    policy: Policy,
    partition: str,
    *,
    cpus: int,
    mem: int,
    nodes: int,
    time_limit: int | None,
    cpus_per_node: int | None = None,
    mem_per_node: int | None = None,
    gres_per_node: Mapping[str, int] | None = None,
    licenses: Mapping[str, int] | None = None,
    extra: Mapping[str, int] | None = None,
) -> JobShape:
    """Build a :class:`JobShape`: CPUs, memory (MB) and nodes of the whole job, GRES per
    node, licenses per job; billing from the partition's TRESBillingWeights."""
    nodes = max(nodes, 1)
    tres: dict[str, int] = {"cpu": cpus, "mem": mem, "node": nodes}
    per_node: dict[str, int] = {
        "cpu": cpus_per_node if cpus_per_node is not None else -(-cpus // nodes),
        "mem": mem_per_node if mem_per_node is not None else -(-mem // nodes),
    }
    tracked = policy.tracked_gres
    for name, count in (gres_per_node or {}).items():
        if tracked is not None and name not in tracked:
            continue
        tres[name] = count * nodes
        per_node[name] = count
    for name, count in (licenses or {}).items():
        tres[f"license/{name}"] = count
    for name, count in (extra or {}).items():
        tres[name] = count
    bill = policy.billing(partition, tres, nodes)
    tres["billing"] = int(bill)
    per_node["billing"] = int(bill / nodes)
    return JobShape(tres, per_node, nodes, time_limit)


@dataclass(frozen=True, slots=True)
class JobRequest:
    """One job for the limits: who, where, its shape, and its state.

    ``usage_factor`` on a running job is the UsageFactor booked when it started (the
    UsageFactor NOTE of Slurm's resource_limits.html); None takes the QOS's current one.
    ``accrue_time`` is when it began accruing age priority (None: not accruing)."""

    job_id: int
    user: str
    account: str
    partition: str
    qos: str
    shape: JobShape
    submit_time: float = 0.0
    running: bool = False
    start_time: float | None = None
    accrue_time: float | None = None
    usage_factor: float | None = None
    wckey: str = ""
    eligible: bool = True  # pending: not held, BeginTime passed (accrue needs it)


@dataclass(frozen=True, slots=True)
class LimitBlock:
    """Why a job may not start (or is refused/killed): Slurm's reason code, a detail naming
    the limit, the limit itself (None for InvalidAccount and the like) and the usage."""

    reason: str
    detail: str
    limit: ResolvedLimit | None = None
    usage: float | None = None

    @property
    def level(self) -> str:
        return self.limit.source.level if self.limit else ""

    @property
    def value(self) -> int | None:
        return self.limit.value if self.limit else None


@dataclass(frozen=True, slots=True)
class LimitKill:
    job_id: int
    reason: str
    detail: str


@dataclass
class _Plan:
    """A key's resolution plus what enforcement needs, cached on the Policy."""

    effective: EffectiveLimits = field(default_factory=lambda: EffectiveLimits("", "", "", "", "", ()))
    assoc: Association | None = None
    chain: tuple[Association, ...] = ()
    job_qos: QOS | None = None
    part_qos: QOS | None = None
    partition: PartitionLimits | None = None
    deny: bool = False
    usage_factor: float = 1.0
    usage_factor_safe: bool = False
    error: tuple[str, str] | None = None
    # (group key, counts?, TRES in use, TRES-minutes booked) for every group that tracks any
    charges: tuple[tuple[UsageKey, bool, tuple[str, ...], tuple[str, ...]], ...] = ()

    @classmethod
    def failed(cls, reason: str, detail: str) -> _Plan:
        return cls(error=(reason, detail))

    @cached_property
    def counter_keys(self) -> tuple[UsageKey, ...]:
        """Every group a job of this key is counted in: its association and ancestors, its
        QOS and partition QOS, and its per-user and per-account QOS groups."""
        keys: list[UsageKey] = [a.key for a in self.chain]
        user, account = self.effective.user, self.effective.account
        for q in (self.job_qos, self.part_qos):
            if q is not None:
                for k in (qos_key(q.name), ("qos_user", q.name, user), ("qos_acct", q.name, account)):
                    if k not in keys:
                        keys.append(k)
        return tuple(keys)

    @cached_property
    def usage_keys(self) -> tuple[UsageKey, ...]:
        """The usage records a running job of this key charges (associations and QOS)."""
        return tuple(k for k in self.counter_keys if k[0] in ("assoc", "qos"))

    @cached_property
    def by_kind(self) -> dict[str, list[ResolvedLimit]]:
        out: dict[str, list[ResolvedLimit]] = {}
        for r in self.effective.limits:
            kind = out.get(r.limit)
            if kind is None:
                out[r.limit] = [r]
            else:
                kind.append(r)
        return out

    def kind(self, name: str) -> Sequence[ResolvedLimit]:
        return self.by_kind.get(name, ())

    @cached_property
    def min_prio_threshold(self) -> int | None:
        entries = self.kind("MinPrioThreshold")
        return entries[0].value if entries else None

    @cached_property
    def dyn(self) -> tuple[tuple[int, ResolvedLimit, str], ...]:
        """The limits checked against live usage, as (check code, limit, reason), in the
        order they are reported."""
        out = []
        for code, kinds in enumerate(_DYNAMIC):
            for kind in kinds:
                out.extend((code, r, r.reason) for r in self.kind(kind))
        return tuple(out)

    @cached_property
    def accrue(self) -> tuple[ResolvedLimit, ...]:
        return (
            *self.kind("GrpJobsAccrue"),
            *self.kind("MaxJobsAccrue"),
            *self.kind("MaxJobsAccruePerAccount"),
        )

    @cached_property
    def submit(self) -> tuple[ResolvedLimit, ...]:
        return (
            *self.kind("GrpSubmitJobs"),
            *self.kind("MaxSubmitJobs"),
            *self.kind("MaxSubmitJobsPerAccount"),
        )


# Dynamic check codes: job counts, TRES in use, TRES-minutes booked, GrpTRESMins, GrpWall.
_DYNAMIC = (
    ("GrpJobs", "MaxJobs", "MaxJobsPerAccount"),
    ("GrpTRES", "MaxTRESPerUser", "MaxTRESPerAccount"),
    ("GrpTRESRunMins",),
    ("GrpTRESMins",),
    ("GrpWall",),
)
_COUNT, _TRES, _RUN_MINS, _TRES_MINS, _WALL = range(5)


class _Counter:
    """Live counts of one group for the pass."""

    __slots__ = ("accruing", "run_mins", "running", "submitted", "tres")

    def __init__(self) -> None:
        self.running = 0
        self.submitted = 0
        self.accruing = 0
        self.tres: dict[str, int] = {}
        self.run_mins: dict[str, float] = {}

    def copy(self) -> _Counter:
        c = _Counter()
        c.running, c.submitted, c.accruing = self.running, self.submitted, self.accruing
        c.tres, c.run_mins = dict(self.tres), dict(self.run_mins)
        return c


class RunningCharges:
    """The running jobs' counters of the last :class:`LimitState`, kept for the next one
    (one per process, by the scheduler's adapter).

    What the running jobs charge depends on the policy, their requests and, through the
    TRES-minutes a run-minutes limit books (GrpTRESRunMins), the moment: kept while the
    policy is the same object, the requests are the same objects in the same order (the
    plugin hands them again while nothing they depend on changed) and, when some job
    books run-minutes, ``now`` is the same.  Whether a running job can be killed
    (GrpTRESMins, MaxTRESMinsPerJob) depends on its plan only, so is kept with them.

    When no job books run-minutes, the counters of running jobs that differ from the
    kept ones by a few requests (jobs started or ended: every pass of a busy cluster) are
    the kept ones with those requests taken out and in, not charged again whole.  Whole
    numbers only, and with how many jobs charge each counter and each of its TRES, so that
    a counter or a TRES no job charges any more is gone as from counters built afresh."""

    def __init__(self) -> None:
        # (policy, running requests, now or None, counters, kill-free, books or None):
        # replaced whole, so a thread holding the old tuple never sees a mixture; never
        # mutated.  Books (None while some job books run-minutes): jobs charging each
        # counter, each (counter, TRES), and jobs that a limit can kill.
        self._kept: tuple | None = None

    def restore(self, state: LimitState) -> bool:
        """Give ``state`` the kept counters (copies) if they are its running jobs', or
        derived from them when a few requests differ."""
        kept = self._kept
        if kept is None:
            return False
        policy, running, now, counters, kill_free, books = kept
        if policy is not state.policy:
            return False
        if now is not None and now != state.now:
            return False
        if len(running) == len(state.running) and all(map(operator.is_, running, state.running)):
            state.counters = {key: c.copy() for key, c in counters.items()}
            state.kill_free = kill_free
            return True
        return books is not None and self._derive(state, running, counters, books)

    def _derive(
        self, state: LimitState, running: tuple[JobRequest, ...], counters: dict, books: tuple
    ) -> bool:
        was = {id(r): r for r in running}
        now_ids = set(map(id, state.running))
        if len(was) != len(running) or len(now_ids) != len(state.running):
            return False  # a request listed twice
        gone = [r for key, r in was.items() if key not in now_ids]
        came = [r for r in state.running if id(r) not in was]
        if len(gone) + len(came) > len(state.running) // 4 + 16:
            return False
        state.counters = {key: c.copy() for key, c in counters.items()}
        jobs_at, tres_at, killing = dict(books[0]), dict(books[1]), books[2]
        for sign, jobs in ((-1, gone), (1, came)):
            for job in jobs:
                kills = _book(state, job, sign, jobs_at, tres_at)
                if kills is None:
                    state.counters = {}  # run-minutes, or not whole numbers: charged afresh
                    return False
                killing += sign * kills
        state.kill_free = killing == 0
        self._kept = (
            state.policy,
            tuple(state.running),
            None,
            {key: c.copy() for key, c in state.counters.items()},
            state.kill_free,
            (jobs_at, tres_at, killing),
        )
        return True

    def store(self, state: LimitState, *, timed: bool) -> None:
        """Keep ``state``'s counters as charged by its running jobs alone (call before
        anything else is charged)."""
        plan_of = state.policy.plan
        killing = 0
        jobs_at: dict[UsageKey, int] = {}
        tres_at: dict[tuple[UsageKey, str], int] = {}
        for job in state.running:
            plan = plan_of(job.user, job.account, job.partition, job.qos)
            if plan.error is not None:
                continue
            killing += _kills(plan)
            if timed:
                continue
            for key, _counts, tres, _run in plan.charges:
                jobs_at[key] = jobs_at.get(key, 0) + 1
                for t in tres:
                    tres_at[key, t] = tres_at.get((key, t), 0) + 1
        state.kill_free = killing == 0
        counters = {key: c.copy() for key, c in state.counters.items()}
        books = None if timed else (jobs_at, tres_at, killing)
        self._kept = (
            state.policy,
            tuple(state.running),
            state.now if timed else None,
            counters,
            state.kill_free,
            books,
        )


def _kills(plan: _Plan) -> bool:
    """Whether a limit may end a running job of this plan (a TRES-minutes budget)."""
    return bool(plan.kind("GrpTRESMins") or plan.kind("MaxTRESMinsPerJob"))


def _book(state: LimitState, job: JobRequest, sign: int, jobs_at: dict, tres_at: dict) -> bool | None:
    """Charge (``sign`` 1) or take back (-1) a running job as ``LimitState._charge`` charges
    it, counting the jobs at each counter and TRES; whether a limit may kill it, or None
    when it cannot be done so (run-minutes, a TRES not a whole number, books off)."""
    plan = state.policy.plan(job.user, job.account, job.partition, job.qos)
    if plan.error is not None:
        return False
    tres_of = job.shape.tres
    if any(run for _, _, _, run in plan.charges) or any(type(v) is not int for v in tres_of.values()):
        return None
    counters = state.counters
    for key, counts, tres, _run in plan.charges:
        c = counters.get(key)
        if c is None:
            if sign < 0:
                return None
            c = counters[key] = _Counter()
        if counts:
            c.running += sign
            c.submitted += sign
        held = c.tres
        for t in tres:
            held[t] = held.get(t, 0) + sign * tres_of.get(t, 0)
            left = tres_at.get((key, t), 0) + sign
            if left < 0:
                return None
            if left:
                tres_at[key, t] = left
            elif held.pop(t):
                return None  # taken back more than was charged
            else:
                del tres_at[key, t]
        left = jobs_at.get(key, 0) + sign
        if left < 0:
            return None
        if left:
            jobs_at[key] = left
        else:
            del jobs_at[key]
            gone = counters.pop(key)
            if gone.running or gone.submitted or gone.accruing or gone.tres or gone.run_mins:
                return None
    return _kills(plan)


_SUBMIT_REJECT = "Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)"


@cache
def _reason(scope: str, limit: str, tres: str) -> str:
    return R.tres_reason(scope, limit, tres) if tres else R.count_reason(scope, limit)


class LimitState:
    """Limit enforcement for one scheduler pass.

    Build it from the running jobs (and the pending ones, for submit counts and accrue
    limits), the usage records (:mod:`limits.core.usage`, keyed like :func:`assoc_key` /
    :func:`qos_key`) and ``now``.  Checks are O(number of limits that apply): resolution
    is cached on the Policy, what depends only on the key and the job's shape is computed
    once per pass, and counters only track what some limit reads.
    """

    def __init__(
        self,
        policy: Policy,
        *,
        running: Iterable[JobRequest] = (),
        pending: Iterable[JobRequest] = (),
        usage: Mapping[UsageKey, UsageRecord] | None = None,
        now: float,
        kept: RunningCharges | None = None,
    ) -> None:
        self.policy = policy
        self.now = now
        self.usage = usage or {}
        self.counters: dict[UsageKey, _Counter] = {}
        self._static: dict[tuple, LimitBlock | None] = {}
        self.running: list[JobRequest] = list(running)
        self.pending: list[JobRequest] = list(pending)
        self.kill_free = False  # True: no running job's plan has a limit that kills
        if kept is None or not kept.restore(self):
            timed = False
            for job in self.running:
                started = job.start_time if job.start_time is not None else now
                timed = self._charge(job, started=started, submitted=True) or timed
            if kept is not None:
                kept.store(self, timed=timed)
        counter = self._counter
        plan_of = policy.plan
        for job in self.pending:
            plan = plan_of(job.user, job.account, job.partition, job.qos)
            if plan.error is None:
                accruing = job.accrue_time is not None
                for key, counts, _, _ in plan.charges:
                    if counts:
                        c = counter(key)
                        c.submitted += 1
                        if accruing:
                            c.accruing += 1

    # -- counters --------------------------------------------------------------------

    def _counter(self, key: UsageKey) -> _Counter:
        c = self.counters.get(key)
        if c is None:
            c = self.counters[key] = _Counter()
        return c

    def _charge(self, job: JobRequest, *, started: float, submitted: bool) -> bool:
        """Charge ``job``; True if what it books depends on ``now`` (run-minutes)."""
        plan = self.policy.plan(job.user, job.account, job.partition, job.qos)
        if plan.error is not None:
            return False
        tres_of = job.shape.tres
        mins = None
        for key, counts, tres, run in plan.charges:
            c = self._counter(key)
            if counts:
                c.running += 1
                if submitted:
                    c.submitted += 1
            if tres:
                held = c.tres
                for t in tres:
                    held[t] = held.get(t, 0) + tres_of.get(t, 0)
            if run:
                if mins is None:
                    factor = job.usage_factor if job.usage_factor is not None else plan.usage_factor
                    limit = job.shape.time_limit
                    if limit is None:
                        mins = INF if factor else 0.0
                    else:
                        mins = max(0.0, started + limit * 60 - self.now) / 60.0 * factor
                booked = c.run_mins
                for t in run:
                    n = tres_of.get(t, 0)
                    if n:
                        booked[t] = booked.get(t, 0.0) + n * mins
        return mins is not None

    def charge_start(self, job: JobRequest) -> None:
        """Count ``job`` as started now (it was pending, so already counted as submitted)."""
        plan = self.policy.plan(job.user, job.account, job.partition, job.qos)
        if plan.error is None and job.accrue_time is not None:
            for key, counts, _, _ in plan.charges:
                if counts:
                    self._counter(key).accruing -= 1
        self._charge(job, started=self.now, submitted=False)

    def _used(self, key: UsageKey) -> UsageRecord:
        return self.usage.get(key, EMPTY)

    # -- run checks ------------------------------------------------------------------

    def check_run(self, job: JobRequest) -> LimitBlock | None:
        """None if no limit holds ``job`` back now, else the first limit that does."""
        return self.check(job.user, job.account, job.partition, job.qos, job.shape)

    def check(self, user: str, account: str, partition: str, qos: str, shape: JobShape) -> LimitBlock | None:
        """:meth:`check_run` without building a JobRequest (the scheduler's hot path)."""
        plan = self.policy.plan(user, account, partition, qos)
        if plan.error is None and self.policy.enforce.limits:
            key = (id(plan), shape)
            static = self._static.get(key, False)
            if static is False:
                found = _static_blocks(plan, shape, safe=self.policy.enforce.safe, first=True)
                static = self._static[key] = found[0] if found else None
            if static is not None:
                return static
            if not plan.dyn:
                return None
            blocks = self._dynamic_blocks(plan, shape, first=True)
            return blocks[0] if blocks else None
        blocks = self._blocks(plan, shape, first=True)
        return blocks[0] if blocks else None

    def explain(self, job: JobRequest) -> list[LimitBlock]:
        """Every limit holding ``job`` back (the pending explainer), in check order."""
        plan = self.policy.plan(job.user, job.account, job.partition, job.qos)
        return self._blocks(plan, job.shape, first=False)

    def _blocks(self, plan: _Plan, shape: JobShape, *, first: bool) -> list[LimitBlock]:
        enforce = self.policy.enforce
        if plan.error is not None:
            return [LimitBlock(*plan.error)] if enforce.associations else []
        if not enforce.limits:
            return []
        out = _static_blocks(plan, shape, safe=enforce.safe, first=first)
        if first and out:
            return out
        out.extend(self._dynamic_blocks(plan, shape, first=first))
        return out

    def _dynamic_blocks(self, plan: _Plan, shape: JobShape, *, first: bool) -> list[LimitBlock]:
        out: list[LimitBlock] = []
        counters = self.counters
        empty = _EMPTY_COUNTER
        tres_of = shape.tres
        safe = self.policy.enforce.safe
        multifactor = self.policy.multifactor
        mins: dict[str, float] | None = None
        for code, r, reason in plan.dyn:
            block = None
            if code == _COUNT:
                c = counters.get(r.counter, empty)
                if c.running >= r.value:
                    block = LimitBlock(reason, f"{r}: {c.running} running", r, c.running)
            elif code == _TRES:
                want = tres_of.get(r.tres, 0)
                if want:
                    used = counters.get(r.counter, empty).tres.get(r.tres, 0)
                    if used + want > r.value:
                        fmt = format_count
                        detail = f"{r}: {fmt(r.tres, used)} in use, job asks {fmt(r.tres, want)}"
                        block = LimitBlock(reason, detail, r, used)
            elif code == _RUN_MINS:
                if tres_of.get(r.tres, 0):
                    if mins is None:
                        mins = shape.tres_mins()
                    used = counters.get(r.counter, empty).run_mins.get(r.tres, 0.0)
                    if used + mins[r.tres] > r.value:
                        detail = f"{r}: {_num(used)} booked, job needs {_num(mins[r.tres])}"
                        block = LimitBlock(reason, detail, r, used)
            elif code == _TRES_MINS:
                if multifactor and tres_of.get(r.tres, 0):
                    used = self._used(r.counter).tres_mins(r.tres)
                    if safe:
                        factor = plan.usage_factor if plan.usage_factor_safe else 1.0
                        need = shape.tres_mins(factor)[r.tres]
                        booked = counters.get(r.counter, empty).run_mins.get(r.tres, 0.0)
                        if used + booked + need > r.value:
                            detail = f"{r}: {_num(used)} used, {_num(booked)} booked, "
                            detail += f"job needs {_num(need)} (safe)"
                            block = LimitBlock(reason, detail, r, used)
                    elif used >= r.value:
                        block = LimitBlock(reason, f"{r}: {_num(used)} used", r, used)
            else:
                used = self._used(r.counter).wall_mins
                if used >= r.value:
                    block = LimitBlock(reason, f"{r}: {_num(used)} minutes used", r, used)
            if block is not None:
                out.append(block)
                if first:
                    return out
        return out

    # -- submission ------------------------------------------------------------------

    def count_submitted(self, groups: Mapping[tuple[str, str, str, str], int]) -> None:
        """Count active jobs given as (user, account, partition, QOS) -> how many, as
        ``pending`` counts them: what :meth:`check_submit` reads of the queue, whatever
        its depth (a running job counts as submitted the same way)."""
        plan_of = self.policy.plan
        counter = self._counter
        for (user, account, partition, qos), n in groups.items():
            plan = plan_of(user, account, partition, qos)
            if plan.error is None:
                for key, counts, _, _ in plan.charges:
                    if counts:
                        counter(key).submitted += n

    def check_submit(self, job: JobRequest, *, count: int = 1) -> str | None:
        """None if ``job`` may be submitted, else the message the submitter sees.  ``count``
        is the number of jobs the submission makes (an array's tasks): the submit limits
        count every one, as Slurm's acct_policy_validate does with the array's task count."""
        policy = self.policy
        enforce = policy.enforce
        plan = policy.plan(job.user, job.account, job.partition, job.qos)
        if plan.error is not None:
            reason, detail = plan.error
            if reason == R.INVALID_ACCOUNT and not enforce.associations:
                return None
            if reason == R.INVALID_ACCOUNT:
                return f"Invalid account or account/partition combination specified ({detail})"
            if reason == R.INVALID_QOS or (reason == R.QOS_NOT_ALLOWED and enforce.qos):
                return f"Invalid qos specification ({detail})"
            if reason == R.ACCOUNT_NOT_ALLOWED:
                return f"Job's account not permitted to use this partition ({detail})"
            return None
        if enforce.wckeys and job.wckey:
            u = policy.users.get(job.user)
            if u is None or job.wckey not in u.wckeys:
                return f"Invalid wckey specification ({job.wckey!r} is not one of {job.user}'s wckeys)"
        if not enforce.limits:
            return None
        for r in plan.submit:
            c = self.counters.get(r.counter, _EMPTY_COUNTER)
            if c.submitted + count > r.value:
                if count == 1:
                    return f"{_SUBMIT_REJECT}: {r} reached with {c.submitted} jobs"
                return f"{_SUBMIT_REJECT}: {r} exceeded by {c.submitted} jobs + {count} array tasks"
        wall = next(iter(plan.kind("MaxWallDurationPerJob")), None)
        if wall is not None and wall.source.scope == "assoc":
            # Association MaxWall denies at submission (resource_limits.html, MaxWallDurationPerJob).
            limit = job.shape.time_limit
            if limit is None or limit > wall.value:
                return f"{_SUBMIT_REJECT}: time limit {_minutes(limit)} exceeds {wall}"
        if plan.deny:
            for block in _static_blocks(plan, job.shape, safe=True, first=False, deny=True):
                return f"{_SUBMIT_REJECT}: {block.detail}"
        return None

    # -- accrue, kills, reservations -------------------------------------------------------

    def accrue_plan(self, jobs: Iterable[JobRequest] | None = None) -> frozenset[int]:
        """The pending jobs (default: those given at construction) that *begin* accruing age
        priority now: eligible, not accruing yet, oldest submit first, while GrpJobsAccrue,
        MaxJobsAccrue(/PerUser) and MaxJobsAccruePerAccount leave room.  Jobs refused keep
        their age frozen; the limits never keep a job from running."""
        candidates = sorted(
            (j for j in (self.pending if jobs is None else jobs) if j.eligible and j.accrue_time is None),
            key=lambda j: (j.submit_time, j.job_id),
        )
        started: set[int] = set()
        enforce_limits = self.policy.enforce.limits
        for job in candidates:
            plan = self.policy.plan(job.user, job.account, job.partition, job.qos)
            if plan.error is not None:
                continue
            if enforce_limits and any(
                self.counters.get(r.counter, _EMPTY_COUNTER).accruing >= r.value for r in plan.accrue
            ):
                continue
            for key, counts, _, _ in plan.charges:
                if counts:
                    self._counter(key).accruing += 1
            started.add(job.job_id)
        return frozenset(started)

    def kills(self) -> tuple[LimitKill, ...]:
        """Running jobs to end because a TRES-minutes budget is spent (Slurm's
        resource_limits.html, GrpTRESMins and MaxTRESMinsPerJob).  Never with
        ``AccountingStorageEnforce=safe``."""
        enforce = self.policy.enforce
        if not enforce.limits or enforce.safe or not self.policy.multifactor or self.kill_free:
            return ()
        out = []
        for job in self.running:
            plan = self.policy.plan(job.user, job.account, job.partition, job.qos)
            if plan.error is not None:
                continue
            verdict = None
            for r in plan.kind("GrpTRESMins"):
                if job.shape.tres.get(r.tres, 0):
                    used = self._used(r.counter).tres_mins(r.tres)
                    if used >= r.value:
                        verdict = (r.reason, f"{r}: {_num(used)} used")
                        break
            if verdict is None and job.start_time is not None:
                elapsed = max(0.0, self.now - job.start_time) / 60.0
                factor = job.usage_factor if job.usage_factor is not None else plan.usage_factor
                for r in plan.kind("MaxTRESMinsPerJob"):
                    spent = job.shape.tres.get(r.tres, 0) * elapsed * factor
                    if spent and spent >= r.value:
                        verdict = (r.reason, f"{r}: job has used {_num(spent)}")
                        break
            if verdict is not None:
                out.append(LimitKill(job.job_id, *verdict))
        return tuple(out)

    def min_prio_threshold(self, job: JobRequest) -> int | None:
        """MinPrioThreshold for the job: below it, backfill gives it no reservation."""
        plan = self.policy.plan(job.user, job.account, job.partition, job.qos)
        return plan.min_prio_threshold if plan.error is None else None

    def usage_factor(self, job: JobRequest) -> float:
        """The UsageFactor to book on the job when it starts (store it on the job)."""
        plan = self.policy.plan(job.user, job.account, job.partition, job.qos)
        return plan.usage_factor


_EMPTY_COUNTER = _Counter()


def _num(value: float) -> str:
    if value == INF:
        return "INFINITE"
    return str(round(value)) if abs(value - round(value)) < 1e-9 or value >= 100 else f"{value:.2f}"


def _minutes(value: int | None) -> str:
    return "UNLIMITED" if value is None else f"{value} minutes"


def _static_blocks(
    plan: _Plan, shape: JobShape, *, safe: bool, first: bool, deny: bool = False
) -> list[LimitBlock]:
    """Limits a job breaks by its size and time alone (no counting): MaxWall,
    MaxTRESPerJob, MaxTRESPerNode, MinTRESPerJob, MaxTRESMinsPerJob (with safe).  With
    ``deny`` (DenyOnLimit at submit) Grp limits and per-user/account TRES are treated as
    per-job maxima too."""
    out: list[LimitBlock] = []

    def add(block: LimitBlock) -> bool:
        out.append(block)
        return first

    for r in plan.kind("MaxWallDurationPerJob"):
        too_long = shape.time_limit is None or shape.time_limit > r.value
        if too_long and add(LimitBlock(r.reason, f"time limit {_minutes(shape.time_limit)} exceeds {r}", r)):
            return out
    for r in plan.kind("MaxTRESPerJob"):
        want = shape.tres.get(r.tres, 0)
        if want > r.value and add(
            LimitBlock(r.reason, f"job asks {r.tres}={format_count(r.tres, want)}, over {r}", r, want)
        ):
            return out
    for r in plan.kind("MaxTRESPerNode"):
        want = shape.per_node.get(r.tres, 0)
        if want > r.value and add(
            LimitBlock(
                r.reason, f"job asks {r.tres}={format_count(r.tres, want)} per node, over {r}", r, want
            )
        ):
            return out
    for r in plan.kind("MinTRESPerJob"):
        want = shape.tres.get(r.tres, 0)
        if want < r.value and add(
            LimitBlock(r.reason, f"job asks {r.tres}={format_count(r.tres, want)}, under {r}", r, want)
        ):
            return out
    if safe:
        factor = plan.usage_factor if plan.usage_factor_safe else 1.0
        mins = shape.tres_mins(factor)
        for r in plan.kind("MaxTRESMinsPerJob"):
            need = mins.get(r.tres, 0.0)
            if need > r.value and add(LimitBlock(r.reason, f"job needs {_num(need)}, over {r}", r, need)):
                return out
    if deny:
        mins = shape.tres_mins(plan.usage_factor if plan.usage_factor_safe else 1.0)
        for kind in ("GrpTRES", "MaxTRESPerUser", "MaxTRESPerAccount"):
            for r in plan.kind(kind):
                want = shape.tres.get(r.tres, 0)
                if want > r.value:
                    add(LimitBlock(r.reason, f"job asks {r.tres}={format_count(r.tres, want)}, over {r}", r))
        for kind in ("GrpTRESMins", "GrpTRESRunMins"):
            for r in plan.kind(kind):
                need = mins.get(r.tres, 0.0)
                if need > r.value:
                    add(LimitBlock(r.reason, f"job needs {_num(need)}, over {r}", r))
        for r in plan.kind("GrpWall"):
            if shape.time_limit is None or shape.time_limit > r.value:
                add(LimitBlock(r.reason, f"time limit {_minutes(shape.time_limit)} exceeds {r}", r))
        for kind in ("GrpJobs", "MaxJobs", "MaxJobsPerAccount"):
            for r in plan.kind(kind):
                if r.value == 0:
                    add(LimitBlock(r.reason, f"{r} lets no job run", r))
    return out


def check_submit(
    policy: Policy,
    job: JobRequest,
    *,
    active: Iterable[JobRequest] = (),
    submitted: Mapping[tuple[str, str, str, str], int] | None = None,
    now: float,
    count: int = 1,
) -> str | None:
    """None if ``job`` (``count`` jobs: an array's tasks) may be submitted, else the
    rejection message.  ``active`` are the
    pending and running jobs already in the system (running ones with ``running=True``);
    the service passes those of the job's user and account, which is all the submit limits
    count (or everything, when unsure).  ``submitted``: more of them, only counted, by
    (user, account, partition, QOS) (the service's, from one aggregate query)."""
    jobs = list(active)
    state = LimitState(
        policy,
        running=[j for j in jobs if j.running],
        pending=[j for j in jobs if not j.running],
        now=now,
    )
    if submitted:
        state.count_submitted(submitted)
    return state.check_submit(job, count=count)


def counts_submitted(policy: Policy, job: JobRequest) -> bool:
    """Whether :func:`check_submit` reads how many jobs are active for ``job``: only a
    submit limit (MaxSubmitJobs, GrpSubmitJobs ...) that applies to it, enforced, does."""
    if not policy.enforce.limits:
        return False
    plan = policy.plan(job.user, job.account, job.partition, job.qos)
    return plan.error is None and bool(plan.submit)


def describe_limits(eff: EffectiveLimits) -> list[str]:
    """Human lines for the console: ``MaxJobsPerUser=20  from partition QOS part``."""
    return [f"{r.label}  from {r.source}" for r in eff.limits]


__all__ = [
    "ACCOUNT",
    "FAIRSHARE_PARENT",
    "JOB_QOS",
    "LIMIT_NAMES",
    "PARTITION",
    "PARTITION_QOS",
    "QOS",
    "QOS_FLAGS",
    "ROOT",
    "ROOT_LEVEL",
    "USER",
    "AssocLimits",
    "Association",
    "EffectiveLimits",
    "Enforce",
    "JobRequest",
    "JobShape",
    "LimitBlock",
    "LimitKill",
    "LimitState",
    "PartitionLimits",
    "Policy",
    "PolicyError",
    "QOSLimits",
    "ResolvedLimit",
    "RunningCharges",
    "Source",
    "User",
    "check_submit",
    "counts_submitted",
    "describe_limits",
    "make_shape",
]
