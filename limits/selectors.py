"""Reads for the limits: the :class:`limits.core.policy.Policy` built from the database, the
configuration that governs it (AccountingStorageEnforce, PriorityType and the multifactor
options of slurm.conf), and the usage records.

The Policy is cached per process, keyed by the limits version (bumped in the same
transaction as every limits change by :mod:`limits.services`) and the configuration's revision,
so several server processes and Celery workers see a change at their next read: one small
query per scheduler pass.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from cluster.models import ClusterConfig, Partition
from cluster.services import pass_snapshot
from cluster.services import rows as db_rows
from limits.core.policy import (
    QOS,
    AssocLimits,
    Enforce,
    PartitionLimits,
    Policy,
    PolicyError,
    QOSLimits,
    User,
)
from limits.core.policy import Association as CoreAssociation
from limits.core.priority import PriorityConfig
from limits.core.usage import UsageKey, UsageRecord
from limits.core.wckeys import track_wckey
from limits.gres import tracked_gres
from limits.models import (
    ASSOC_LIMIT_FIELDS,
    QOS_LIMIT_FIELDS,
    TRES_LIMIT_FIELDS,
    Account,
    Association,
    Cluster,
    LimitsState,
    LimitsUser,
    Usage,
    WCKey,
)
from limits.models import QOS as QOSRow
from slurmwords.durations import format_minutes_long
from slurmwords.tres import TresError, parse_billing_weights, parse_tres_limits

log = logging.getLogger(__name__)

MULTIFACTOR = "priority/multifactor"


@dataclass(frozen=True)
class LimitsContext:
    """Everything a pass, a submission or a page needs, built once per change."""

    cluster: str
    policy: Policy
    enforce: Enforce
    priority: PriorityConfig
    multifactor: bool  # PriorityType=priority/multifactor
    version: tuple[object, ...]


def option(options: Mapping[str, object], name: str, default: str = "") -> str:
    lower = name.lower()
    return next((str(v) for k, v in options.items() if k.lower() == lower), default)


def state() -> LimitsState:
    return LimitsState.objects.get_or_create(pk=1)[0]


def key_text(key: UsageKey) -> str:
    return "|".join(key)


def key_of(text: str) -> UsageKey:
    return tuple(text.split("|"))


def usage_records() -> dict[UsageKey, UsageRecord]:
    """Every usage record.  Every pass reads them and only the usage cycle and sacctmgr
    write them: kept in the simulator's run until the table is written (shared: read-only)."""
    return pass_snapshot.kept_value("limits.usage_records", (Usage,), _read_usage_records)


def _read_usage_records() -> dict[UsageKey, UsageRecord]:
    # Read without compiling a query: outside the simulator every pass reads them.
    fields = ("key", "raw_usage", "tres_seconds", "wall_seconds")
    return {
        key_of(key): UsageRecord(raw, dict(tres or {}), wall)
        for key, raw, tres, wall in db_rows.select(Usage, fields)
    }


def _tres(text: str, where: str) -> dict[str, int]:
    try:
        return parse_tres_limits(text or "")
    except TresError as exc:
        raise PolicyError(f"{where}: {exc}") from None


def _limits(row: object, cls: type, names: Iterable[str], where: str) -> object:
    values = {}
    for name in names:
        value = getattr(row, name)
        values[name] = _tres(value, f"{where} {name}") if name in TRES_LIMIT_FIELDS else value
    return cls(**values)


def _csv(text: str | None) -> frozenset[str] | None:
    if not text:
        return None
    return frozenset(w.strip() for w in text.split(",") if w.strip())


def build_policy(*, cluster: str, options: Mapping[str, object]) -> Policy:
    """The Policy as the database holds it now; raises PolicyError when it is inconsistent
    (the services call this inside their transaction to refuse such a change)."""
    enforce = Enforce.parse(option(options, "AccountingStorageEnforce"))
    multifactor = option(options, "PriorityType", MULTIFACTOR) == MULTIFACTOR
    qos_rows = list(QOSRow.objects.all())
    qos = [
        QOS(
            name=q.name,
            priority=q.priority,
            flags=frozenset(f for f in (q.flags or "").split(",") if f),
            usage_factor=q.usage_factor,
            limit_factor=q.limit_factor,
            grace_time=q.grace_time,
            limits=_limits(q, QOSLimits, QOS_LIMIT_FIELDS, f"QOS {q.name}"),
            tres_decay_half_life=_tres(q.tres_decay_half_life, f"QOS {q.name} TresDecayHalfLife"),
        )
        for q in qos_rows
    ]
    names = {q.name for q in qos_rows}
    users = {u.name: u for u in LimitsUser.objects.select_related("default_account", "default_qos")}
    assocs = []
    rows = Association.objects.filter(cluster__name=cluster).select_related(
        "account", "user", "parent", "default_qos"
    )
    for a in rows:
        user = a.user.name if a.user_id else ""
        where = f"association {a}"
        default_qos = a.default_qos.name if a.default_qos_id else None
        if default_qos is None and user and users[user].default_qos_id:
            default_qos = users[user].default_qos.name
        fairshare: int | str = a.fairshare
        if fairshare != "parent":
            try:
                fairshare = int(fairshare)
            except ValueError:
                raise PolicyError(f"{where}: Fairshare must be an integer or 'parent'") from None
        assocs.append(
            CoreAssociation(
                account=a.account.name,
                user=user,
                partition=a.partition,
                parent=a.parent.name if a.parent_id else None,
                fairshare=fairshare,
                limits=_limits(a, AssocLimits, ASSOC_LIMIT_FIELDS, where),
                qos=_csv(a.qos),
                default_qos=default_qos,
                tres_decay_half_life=_tres(a.tres_decay_half_life, f"{where} TresDecayHalfLife"),
            )
        )
    partitions = []
    for p in Partition.objects.all():
        extra = p.extra or {}
        part_qos = option(extra, "QOS")
        if part_qos and part_qos not in names:
            log.warning("partition %s: QOS %s does not exist; ignored", p.name, part_qos)
            part_qos = ""
        try:
            weights = parse_billing_weights(option(extra, "TRESBillingWeights"))
        except TresError as exc:
            log.warning("partition %s: %s; ignored", p.name, exc)
            weights = None
        allow_accounts = option(extra, "AllowAccounts", "ALL")
        allow_qos = option(extra, "AllowQos", "ALL")
        partitions.append(
            PartitionLimits(
                name=p.name,
                max_time=p.max_time,
                max_nodes=p.max_nodes,
                min_nodes=p.min_nodes,
                qos=part_qos,
                billing_weights=weights,
                allow_accounts=None if allow_accounts.upper() == "ALL" else _csv(allow_accounts),
                allow_qos=None
                if allow_qos.upper() == "ALL"
                else frozenset(q for q in (_csv(allow_qos) or ()) if q in names),
                priority_job_factor=p.priority_job_factor,
            )
        )
    wckeys: dict[int, set[str]] = {}
    for user_id, name in WCKey.objects.filter(cluster__name=cluster).values_list("user_id", "name"):
        wckeys.setdefault(user_id, set()).add(name)
    core_users = [
        User(
            name=u.name,
            default_account=u.default_account.name if u.default_account_id else "",
            wckeys=frozenset(wckeys.get(u.pk, ())),
            default_wckey=u.default_wckey,
        )
        for u in users.values()
    ]
    return Policy(
        associations=assocs,
        qos=qos,
        partitions=partitions,
        users=core_users,
        enforce=enforce,
        multifactor=multifactor,
        tracked_gres=tracked_gres(option(options, "AccountingStorageTRES")),
    )


_lock = threading.Lock()
_cached: LimitsContext | None = None
# What context() reads: the configuration, and every table build_policy reads.
_POLICY_TABLES = (ClusterConfig, QOSRow, Association, Account, Cluster, LimitsUser, WCKey, Partition)


def context(cfg: ClusterConfig | None = None) -> LimitsContext:
    """The limits in force for this cluster (cached until the next change).

    ``multifactor``: PriorityType=priority/multifactor, Slurm's default, replaces
    priority/basic's submit order, weights or none (with every weight 0, as slurmctld
    computes it, each job's priority is 1 less its nice, at least 1).
    """
    if cfg is None:
        # Every pass, cycle and submission asks; kept in the simulator's run until the
        # configuration or a table the policy is built from is written.
        return pass_snapshot.kept_value("limits.context", _POLICY_TABLES, _context)
    return _context(cfg)


def _context(cfg: ClusterConfig | None = None) -> LimitsContext:
    global _cached  # noqa: PLW0603 - one cache per process
    cfg = cfg or ClusterConfig.current()
    # A change of the limits gives the configuration a new revision (services._bump_version).
    version = (cfg.revision,)
    cached = _cached
    if cached is not None and cached.version == version and cached.cluster == cfg.cluster_name:
        return cached
    with _lock:
        options = cfg.options or {}
        try:
            enforce = Enforce.parse(option(options, "AccountingStorageEnforce"))
        except PolicyError as exc:
            log.error("%s; limits not enforced", exc)
            enforce = Enforce()
        try:
            priority = PriorityConfig.from_options({k: str(v) for k, v in options.items()})
        except ValueError as exc:
            log.error("%s; multifactor defaults used", exc)
            priority = PriorityConfig()
        try:
            policy = build_policy(cluster=cfg.cluster_name, options=options)
        except PolicyError as exc:
            log.error("accounting policy refused (%s); keeping the previous one", exc)
            policy = cached.policy if cached is not None else Policy(enforce=enforce)
        multifactor = option(options, "PriorityType", MULTIFACTOR) == MULTIFACTOR
        _cached = LimitsContext(
            cluster=cfg.cluster_name,
            policy=policy,
            enforce=enforce,
            priority=priority,
            multifactor=multifactor,
            version=version,
        )
        return _cached


def forget() -> None:
    """Drop the cache (tests that change slurm.conf options without a version bump)."""
    global _cached  # noqa: PLW0603
    _cached = None


# --------------------------------------------------------------------------- listings

_ASSOC_COLUMNS = (
    ("GrpJobs", "grp_jobs"),
    ("GrpJobsAccrue", "grp_jobs_accrue"),
    ("GrpSubmit", "grp_submit_jobs"),
    ("GrpTRES", "grp_tres"),
    ("GrpTRESMins", "grp_tres_mins"),
    ("GrpTRESRunMins", "grp_tres_run_mins"),
    ("GrpWall", "grp_wall"),
    ("MaxJobs", "max_jobs"),
    ("MaxJobsAccrue", "max_jobs_accrue"),
    ("MaxSubmit", "max_submit_jobs"),
    ("MaxTRES", "max_tres_per_job"),
    ("MaxTRESPerNode", "max_tres_per_node"),
    ("MaxTRESMins", "max_tres_mins_per_job"),
    ("MaxWall", "max_wall_duration_per_job"),
    ("MinPrioThres", "min_prio_threshold"),
)
# sacctmgr's QOS limit columns, in sacctmgr show qos's order (also the limits page's QOS table).
QOS_COLUMNS = (
    ("GrpTRES", "grp_tres"),
    ("GrpTRESMins", "grp_tres_mins"),
    ("GrpTRESRunMins", "grp_tres_run_mins"),
    ("GrpJobs", "grp_jobs"),
    ("GrpJobsAccrue", "grp_jobs_accrue"),
    ("GrpSubmit", "grp_submit_jobs"),
    ("GrpWall", "grp_wall"),
    ("MaxTRES", "max_tres_per_job"),
    ("MaxTRESPerNode", "max_tres_per_node"),
    ("MaxTRESMins", "max_tres_mins_per_job"),
    ("MaxWall", "max_wall_duration_per_job"),
    ("MaxTRESPU", "max_tres_per_user"),
    ("MaxJobsPU", "max_jobs_per_user"),
    ("MaxSubmitPU", "max_submit_jobs_per_user"),
    ("MaxTRESPA", "max_tres_per_account"),
    ("MaxJobsPA", "max_jobs_per_account"),
    ("MaxSubmitPA", "max_submit_jobs_per_account"),
    ("MaxJobsAccruePU", "max_jobs_accrue_per_user"),
    ("MaxJobsAccruePA", "max_jobs_accrue_per_account"),
    ("MinTRES", "min_tres_per_job"),
    ("MinPrioThres", "min_prio_threshold"),
)
DEFAULT_COLUMNS = {
    "association": (
        "Cluster", "Account", "User", "Partition", "Share", "Priority", "GrpJobs", "GrpTRES", "GrpSubmit",
        "GrpWall", "GrpTRESMins", "MaxJobs", "MaxTRES", "MaxTRESPerNode", "MaxSubmit", "MaxWall",
        "MaxTRESMins", "QOS", "Def QOS", "GrpTRESRunMins",
    ),
    "account": ("Account", "Descr", "Org"),
    "user": ("User", "Def Acct", "Admin"),
    "wckey": ("Name", "Cluster", "User"),
    "qos": (
        "Name", "Priority", "GraceTime", "Flags", "UsageFactor", "GrpTRES", "GrpTRESMins", "GrpTRESRunMins",
        "GrpJobs", "GrpSubmit", "GrpWall", "MaxTRES", "MaxTRESPerNode", "MaxTRESMins", "MaxWall", "MaxTRESPU",
        "MaxJobsPU", "MaxSubmitPU", "MaxTRESPA", "MaxJobsPA", "MaxSubmitPA", "MinTRES",
    ),
    "cluster": ("Cluster",),
    "tres": ("Type", "Name", "ID"),
}  # fmt: skip


# ``sacctmgr show user|account withassoc``: the association's columns after the entity's
# (user_functions.c's and account_functions.c's default format lists).
WITH_ASSOC_COLUMNS = {
    "user": (
        "Cluster", "Account", "Partition", "Share", "Priority", "MaxJobs", "MaxNodes", "MaxCPUs",
        "MaxSubmit", "MaxWall", "MaxCPUMins", "QOS", "Def QOS",
    ),
    "account": (
        "Cluster", "ParentName", "User", "Share", "Priority", "GrpJobs", "GrpNodes", "GrpCPUs", "GrpMem",
        "GrpSubmit", "GrpWall", "GrpCPUMins", "MaxJobs", "MaxNodes", "MaxCPUs", "MaxSubmit", "MaxWall",
        "MaxCPUMins", "QOS", "Def QOS",
    ),
}  # fmt: skip
# The pre-TRES columns sacctmgr still prints: one TRES of a limit (column, its TRES, name).
_TRES_COUNT_COLUMNS = (
    ("GrpNodes", "grp_tres", "node"),
    ("GrpCPUs", "grp_tres", "cpu"),
    ("GrpMem", "grp_tres", "mem"),
    ("GrpCPUMins", "grp_tres_mins", "cpu"),
    ("MaxNodes", "max_tres_per_job", "node"),
    ("MaxCPUs", "max_tres_per_job", "cpu"),
    ("MaxCPUMins", "max_tres_mins_per_job", "cpu"),
)


def default_columns(entity: str, *, withassoc: bool = False) -> list[str]:
    """The columns ``sacctmgr show <entity>`` prints without format=: a user's default
    WCKey too when WCKeys are tracked, as sacctmgr does; with ``withassoc`` the
    association's after them."""
    columns = list(DEFAULT_COLUMNS[entity])
    if withassoc and entity in WITH_ASSOC_COLUMNS:
        columns += WITH_ASSOC_COLUMNS[entity]
    if entity == "user":
        cfg = ClusterConfig.current()
        tracked = option(cfg.options or {}, "TrackWCKey")
        if track_wckey(tracked, enforce_wckeys=context(cfg).enforce.wckeys):
            columns.insert(columns.index("Admin"), "Def WCKey")
    return columns


def time_str(minutes: int | None) -> str:
    """Minutes as sacctmgr prints a wall limit: ``1-00:00:00``, ``01:30:00``; none is empty."""
    return format_minutes_long(minutes, unlimited="")


def _value(row: object, column: str) -> str:
    value = getattr(row, column)
    if value is None:
        return ""
    if "wall" in column:
        return time_str(value)
    return str(value)


def assoc_row(a: Association) -> dict[str, str]:
    out = {
        "Cluster": a.cluster.name,
        "Account": a.account.name,
        "User": a.user.name if a.user_id else "",
        "Partition": a.partition,
        "ParentName": (a.parent.name if a.parent_id else ("root" if a.account.name != "root" else ""))
        if not a.user_id
        else "",
        "Share": a.fairshare,
        "Priority": "",
        "QOS": a.qos or "",
        "Def QOS": a.default_qos.name if a.default_qos_id else "",
        "TresDecayHalfLife": a.tres_decay_half_life,
    }
    out.update({name: _value(a, column) for name, column in _ASSOC_COLUMNS})
    out.update({name: tres_count(getattr(a, column), tres) for name, column, tres in _TRES_COUNT_COLUMNS})
    return out


def tres_count(spec: str | None, name: str) -> str:
    """One TRES's count out of a limit's ``cpu=4,mem=2000M,node=2`` (memory in MB, as
    sacctmgr prints GrpMem); empty when the limit does not name it."""
    for item in (spec or "").split(","):
        key, _, value = item.partition("=")
        if key.strip().lower() != name or not value:
            continue
        value = value.strip()
        if name == "mem" and value[-1:].upper() in _MB:
            return str(int(float(value[:-1]) * _MB[value[-1:].upper()]))
        return value
    return ""


_MB = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}


def with_assoc_rows(entity: str, rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """``withassoc``: each user's (or account's) row once per association of it, the
    association's columns beside the entity's (a user's or account's without one, alone)."""
    key = "User" if entity == "user" else "Account"
    names = [r[key] for r in rows]
    assocs = Association.objects.select_related("cluster", "account", "user", "parent", "default_qos")
    if entity == "user":
        assocs = assocs.filter(user__name__in=names)
    else:
        assocs = assocs.filter(account__name__in=names)
    by_name: dict[str, list[dict[str, str]]] = {}
    for a in _tree_order(list(assocs)):
        by_name.setdefault(a.user.name if entity == "user" else a.account.name, []).append(assoc_row(a))
    out = []
    for row in rows:
        for assoc in by_name.get(row[key], [{}]):
            out.append({**assoc, **row})
    return out


def list_rows(entity: str, where: Mapping[str, list[str]]) -> list[dict[str, str]]:
    """``sacctmgr show <entity> [where ...]`` rows, columns spelled as sacctmgr's headers."""
    names = where.get("name", [])
    if entity == "qos":
        qs = QOSRow.objects.all()
        if names:
            qs = qs.filter(name__in=names)
        rows = []
        for q in qs:
            row = {
                "Name": q.name,
                "Descr": q.description,
                "Priority": str(q.priority),
                "GraceTime": time_str(q.grace_time // 60) if q.grace_time else "00:00:00",
                "Flags": q.flags,
                "UsageFactor": f"{q.usage_factor:.6f}",
                "LimitFactor": "" if q.limit_factor is None else f"{q.limit_factor:.6f}",
                "TresDecayHalfLife": q.tres_decay_half_life,
            }
            row.update({name: _value(q, column) for name, column in QOS_COLUMNS})
            rows.append(row)
        return rows
    if entity == "account":
        from limits.models import Account  # noqa: PLC0415 - keeps the top import list short

        qs = Account.objects.all()
        if names:
            qs = qs.filter(name__in=names)
        return [{"Account": a.name, "Descr": a.description, "Org": a.organization} for a in qs]
    if entity == "user":
        qs = LimitsUser.objects.select_related("default_account", "default_qos")
        if names:
            qs = qs.filter(name__in=names)
        return [
            {
                "User": u.name,
                "Def Acct": u.default_account.name if u.default_account_id else "",
                "Def QOS": u.default_qos.name if u.default_qos_id else "",
                "Admin": u.admin_level,
                "Def WCKey": u.default_wckey,
            }
            for u in qs
        ]
    if entity == "wckey":
        rows = WCKey.objects.select_related("cluster", "user")
        if names:
            rows = rows.filter(name__in=names)
        if where.get("user"):
            rows = rows.filter(user__name__in=where["user"])
        return [{"Name": w.name, "Cluster": w.cluster.name, "User": w.user.name} for w in rows]
    if entity == "cluster":
        from limits.models import Cluster  # noqa: PLC0415

        qs = Cluster.objects.all()
        if names:
            qs = qs.filter(name__in=names)
        return [{"Cluster": c.name} for c in qs]
    if entity == "tres":
        from limits.models import Tres  # noqa: PLC0415

        return [
            {"Type": t.name.partition("/")[0], "Name": t.name.partition("/")[2], "ID": str(t.pk)}
            for t in Tres.objects.order_by("pk")
        ]
    qs = Association.objects.select_related("cluster", "account", "user", "parent", "default_qos")
    if where.get("cluster"):
        qs = qs.filter(cluster__name__in=where["cluster"])
    if where.get("account") or names:
        qs = qs.filter(account__name__in=where.get("account", []) + names)
    if where.get("user"):
        qs = qs.filter(user__name__in=where["user"])
    if where.get("partition"):
        qs = qs.filter(partition__in=where["partition"])
    return [assoc_row(a) for a in _tree_order(list(qs))]


def _tree_order(assocs: list[Association]) -> list[Association]:
    """Root first, then each account followed by its users and its sub-accounts."""
    kids: dict[str, list[Association]] = {}
    for a in assocs:
        parent = a.account.name if a.user_id else (a.parent.name if a.parent_id else "root")
        if not a.user_id and a.account.name == "root":
            parent = ""
        kids.setdefault(parent, []).append(a)
    out: list[Association] = []
    seen: set[int] = set()

    def walk(name: str) -> None:
        for a in sorted(
            kids.get(name, []),
            key=lambda x: (x.user_id is None, x.account.name, x.user.name if x.user_id else "", x.partition),
        ):
            if a.pk in seen:
                continue
            seen.add(a.pk)
            out.append(a)
            if not a.user_id:
                walk(a.account.name)

    walk("")
    out.extend(a for a in assocs if a.pk not in seen)
    return out
