"""``PriorityType=priority/multifactor`` (pure, no Django, clock passed in).

    priority = PriorityWeightAge       * age
             + PriorityWeightFairshare * fair-share
             + PriorityWeightJobSize   * job size
             + PriorityWeightPartition * partition
             + PriorityWeightQOS       * QOS
             + sum(PriorityWeightTRES[t] * job's t / cluster's t)
             - nice

each factor in [0, 1].  Fair-share uses **Fair Tree** (Slurm's default since 19.05, and the
one implemented here): siblings are ranked by Level Fairshare ``LF = S / U`` (their share of
the siblings' shares over their share of the siblings' usage; no usage ranks first), the tree
is walked depth first in that order, and users get a rank from the walk: the first of N users
gets N/N = 1.0, the last 1/N.  Users with equal LF under the same parent share a rank.
``Fairshare=parent`` on an account re-parents its children to the first ancestor that is not
``parent``; on a user, the user takes its account's Level Fairshare among the account's
siblings (the "parent association is used").

Age counts from the job's ``accrue_time`` (set by the adapter when
:meth:`limits.core.policy.LimitState.accrue_plan` lets it begin), so the accrue limits stop age
from growing and nothing else.  :func:`may_reserve` applies MinPrioThreshold (or
``bf_min_prio_reserve``) to backfill reservations.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cluster.core.scheduler import JobView, PartitionView, node_count
from limits.core.policy import FAIRSHARE_PARENT, ROOT, Association, Policy
from limits.core.usage import UsageKey, UsageRecord, parse_reset_period
from slurmwords.durations import parse_time_limit
from slurmwords.tres import canonical_name

_DEFAULT_MAX_AGE = 7 * 86400.0
_DEFAULT_HALF_LIFE = 7 * 86400.0


@dataclass(frozen=True)
class PriorityConfig:
    """The multifactor options of slurm.conf.  Times in seconds."""

    weight_age: int = 0
    weight_fairshare: int = 0
    weight_job_size: int = 0
    weight_partition: int = 0
    weight_qos: int = 0
    weight_tres: Mapping[str, float] = field(default_factory=dict)
    max_age: float = _DEFAULT_MAX_AGE
    favor_small: bool = False
    decay_half_life: float = _DEFAULT_HALF_LIFE
    usage_reset_period: str = "NONE"
    flags: frozenset[str] = frozenset()
    bf_min_prio_reserve: int | None = None

    @property
    def weightless(self) -> bool:
        """No weight set (Slurm's default configuration): every term is 0, only the nice
        counts, so nothing about the jobs but their nice needs gathering."""
        return not (
            self.weight_age
            or self.weight_fairshare
            or self.weight_job_size
            or self.weight_partition
            or self.weight_qos
            or any(self.weight_tres.values())
        )

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> PriorityConfig:
        """From slurm.conf options (``SlurmConfig.options``), names case-insensitive.
        PriorityDecayHalfLife and PriorityMaxAge use Slurm's time format (``7-0``, minutes);
        ``bf_min_prio_reserve`` comes from SchedulerParameters.  Bad values raise
        ValueError naming the option."""
        opts = {k.lower(): v for k, v in options.items()}

        def integer(name: str) -> int:
            text = opts.get(name.lower(), "0")
            try:
                value = int(text)
            except ValueError:
                raise ValueError(f"{name}={text}: not an integer") from None
            if value < 0:
                raise ValueError(f"{name}={text}: must be >= 0")
            return value

        def minutes(name: str, default: float) -> float:
            text = opts.get(name.lower())
            if text is None:
                return default
            try:
                value = parse_time_limit(text)
            except ValueError as exc:
                raise ValueError(f"{name}={text}: {exc}") from None
            return 0.0 if value is None else value * 60.0

        weights: dict[str, float] = {}
        for item in filter(None, (s.strip() for s in opts.get("priorityweighttres", "").split(","))):
            name, eq, value = item.partition("=")
            try:
                weights[canonical_name(name)] = float(value)
            except ValueError:
                raise ValueError(f"PriorityWeightTRES: bad item {item!r}") from None
            if not eq:
                raise ValueError(f"PriorityWeightTRES: bad item {item!r}")
        flags = frozenset(f.strip().upper() for f in opts.get("priorityflags", "").split(",") if f.strip())
        bf_min = None
        for param in opts.get("schedulerparameters", "").split(","):
            key, _, value = param.strip().partition("=")
            if key == "bf_min_prio_reserve" and value.isdigit():
                bf_min = int(value)
        return cls(
            weight_age=integer("PriorityWeightAge"),
            weight_fairshare=integer("PriorityWeightFairshare"),
            weight_job_size=integer("PriorityWeightJobSize"),
            weight_partition=integer("PriorityWeightPartition"),
            weight_qos=integer("PriorityWeightQOS"),
            weight_tres=weights,
            max_age=minutes("PriorityMaxAge", _DEFAULT_MAX_AGE),
            favor_small=opts.get("priorityfavorsmall", "no").strip().lower() in ("yes", "true", "1"),
            decay_half_life=minutes("PriorityDecayHalfLife", _DEFAULT_HALF_LIFE),
            usage_reset_period=parse_reset_period(opts.get("priorityusageresetperiod", "NONE")),
            flags=flags,
            bf_min_prio_reserve=bf_min,
        )


# --------------------------------------------------------------------------- fair tree


def _raw_usage(policy: Policy, usage: Mapping[UsageKey, UsageRecord]) -> dict[UsageKey, float]:
    """Usage of every association including its subtree, summed from the user associations
    (so it does not matter whether the adapter also charged the ancestors)."""
    out: dict[UsageKey, float] = {}
    for a in policy.assocs.values():
        if a.user:
            u = usage.get(a.key)
            value = u.raw_usage if u else 0.0
            for anc in policy.chain(a):
                out[anc.key] = out.get(anc.key, 0.0) + value
    return out


def _shares(a: Association) -> int:
    return 0 if a.fairshare == FAIRSHARE_PARENT else int(a.fairshare)


def fair_tree(policy: Policy, usage: Mapping[UsageKey, UsageRecord]) -> dict[UsageKey, float]:
    """The fair-share factor (0..1] of every user association, by Fair Tree."""
    totals = _raw_usage(policy, usage)
    # Children per account for fairshare purposes (Fairshare=parent accounts dissolved).
    kids: dict[str, list[Association]] = {}
    for a in policy.assocs.values():
        if a.account == ROOT and not a.user:
            continue
        parent = a.account if a.user else (a.parent or ROOT)
        while parent != ROOT:
            pa = policy.account(parent)
            if pa is None or pa.fairshare != FAIRSHARE_PARENT:
                break
            parent = pa.parent or ROOT
        if not a.user and a.fairshare == FAIRSHARE_PARENT:
            continue
        kids.setdefault(parent, []).append(a)

    groups: list[list[UsageKey]] = []

    def level_fs(siblings: list[Association], own_lf: float) -> list[tuple[float, Association]]:
        shares = sum(_shares(s) for s in siblings if s.fairshare != FAIRSHARE_PARENT)
        used = sum(totals.get(s.key, 0.0) for s in siblings)
        out = []
        for s in siblings:
            if s.user and s.fairshare == FAIRSHARE_PARENT:
                lf = own_lf
            else:
                share = _shares(s) / shares if shares else 0.0
                u = totals.get(s.key, 0.0) / used if used else 0.0
                lf = 0.0 if share == 0 else (math.inf if u == 0 else share / u)
            out.append((lf, s))
        out.sort(key=lambda p: (-p[0], p[1].user != "", p[1].account, p[1].user, p[1].partition))
        return out

    def walk(account: str, own_lf: float) -> None:
        ranked = level_fs(kids.get(account, []), own_lf)
        i = 0
        while i < len(ranked):
            lf, node = ranked[i]
            if node.user:
                tie = [node.key]
                while i + 1 < len(ranked) and ranked[i + 1][1].user and ranked[i + 1][0] == lf:
                    i += 1
                    tie.append(ranked[i][1].key)
                groups.append(tie)
            else:
                walk(node.account, lf)
            i += 1

    walk(ROOT, math.inf)
    n = sum(len(g) for g in groups)
    out: dict[UsageKey, float] = {}
    rank = n
    for g in groups:
        for key in g:
            out[key] = rank / n
        rank -= len(g)
    return out


# --------------------------------------------------------------------------- the priority


@dataclass(frozen=True, slots=True)
class JobPriorityInfo:
    """What multifactor needs beyond the JobView (the adapter fills it)."""

    account: str = ""
    qos: str = ""
    accrue_time: float | None = None  # None: not accruing age
    nice: int = 0
    tres: Mapping[str, float] = field(default_factory=dict)  # for PriorityWeightTRES


_NO_INFO = JobPriorityInfo()


class MultifactorPriority:
    """Callable with :func:`cluster.core.scheduler.job_priority`'s signature, so it can replace it.

    Build one per pass: ``fairshare`` from :func:`fair_tree`, ``info`` per job id, the
    cluster totals for the job-size and TRES factors.
    """

    def __init__(
        self,
        config: PriorityConfig,
        policy: Policy,
        *,
        info: Mapping[int, JobPriorityInfo],
        fairshare: Mapping[UsageKey, float] | None = None,
        total_nodes: int = 1,
        total_cpus: int = 1,
        tres_totals: Mapping[str, float] | None = None,
        max_job_factor: int | None = None,
    ) -> None:
        self.config = config
        self.policy = policy
        self.info = info
        self.fairshare = fairshare or {}
        self.total_nodes = max(total_nodes, 1)
        self.total_cpus = max(total_cpus, 1)
        self.tres_totals = tres_totals or {}
        factors = [p.priority_job_factor for p in policy.partitions.values()]
        self.max_job_factor = max_job_factor or max(factors, default=1) or 1
        self.max_qos = max((q.priority for q in policy.qos.values()), default=0)
        self.weightless = config.weightless

    def factors(self, job: JobView, partition: PartitionView | None, now: float) -> dict[str, float]:
        """Each factor in [0, 1] (what ``sprio`` shows, before weights)."""
        cfg = self.config
        info = self.info.get(job.job_id, JobPriorityInfo())
        age = 0.0
        if info.accrue_time is not None and cfg.max_age > 0:
            age = min(max(now - info.accrue_time, 0.0), cfg.max_age) / cfg.max_age
        assoc = self.policy.association(job.user, info.account, job.partition)
        fs = self.fairshare.get(assoc.key, 0.0) if assoc is not None else 0.0
        nodes = node_count(job)
        cpus = max(job.num_tasks, nodes) * max(job.cpus_per_task, 1)
        size = min(1.0, max(nodes / self.total_nodes, cpus / self.total_cpus))
        if cfg.favor_small:
            size = 1.0 - size
        part = (partition.priority_job_factor if partition else 0) / self.max_job_factor
        qname = self.policy.job_qos_name(assoc, info.qos)
        q = self.policy.qos.get(qname)
        qos = q.priority / self.max_qos if q is not None and self.max_qos > 0 else 0.0
        return {"age": age, "fairshare": fs, "jobsize": size, "partition": part, "qos": qos}

    def weighted(self, job: JobView, partition: PartitionView | None, now: float) -> dict[str, Any]:
        """Each factor times its weight, the TRES ones by name, and the nice: the terms
        of the priority, as sprio prints them."""
        cfg = self.config
        f = self.factors(job, partition, now)
        info = self.info.get(job.job_id, JobPriorityInfo())
        tres = {}
        for name, weight in cfg.weight_tres.items():
            whole = self.tres_totals.get(name, 0)
            if whole:
                tres[name] = weight * min(1.0, info.tres.get(name, 0) / whole)
        return {
            "age": cfg.weight_age * f["age"],
            "fairshare": cfg.weight_fairshare * f["fairshare"],
            "jobsize": cfg.weight_job_size * f["jobsize"],
            "partition": cfg.weight_partition * f["partition"],
            "qos": cfg.weight_qos * f["qos"],
            "tres": tres,
            "nice": info.nice,
        }

    def __call__(self, job: JobView, partition: PartitionView | None, now: float) -> int:
        if job.priority:
            return job.priority  # set by an administrator (scontrol update Priority=)
        if self.weightless:
            return max(1, -self.info.get(job.job_id, _NO_INFO).nice)
        w = self.weighted(job, partition, now)
        total = w["age"] + w["fairshare"] + w["jobsize"] + w["partition"] + w["qos"]
        total += sum(w["tres"].values())
        total -= w["nice"]
        # 0 means held in Slurm, so a computed priority is at least 1.
        return max(1, int(total))


def may_reserve(
    priority: int, min_prio_threshold: int | None, bf_min_prio_reserve: int | None = None
) -> bool:
    """Whether backfill may plan a reservation for a job of ``priority``: MinPrioThreshold
    (QOS or association) overrides ``bf_min_prio_reserve``; neither set means yes."""
    threshold = min_prio_threshold if min_prio_threshold is not None else bf_min_prio_reserve
    return threshold is None or priority >= threshold


__all__ = [
    "JobPriorityInfo",
    "MultifactorPriority",
    "PriorityConfig",
    "fair_tree",
    "may_reserve",
]
