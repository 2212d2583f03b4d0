"""Every change to the accounting policy, and the limits' part of submitting and scheduling.

One function per operation (docs/architecture.md); sacctmgr
(through the REST API), the REST API itself, the admin and the tests call these:

* :func:`record_add`, :func:`record_modify`, :func:`record_delete`: ``sacctmgr
  add|modify|delete cluster|account|user|qos|association``.  Each validates, writes in one
  transaction, rebuilds the :class:`limits.core.policy.Policy` from the result (a cycle in the
  account tree, an unknown QOS, a bad TRES refuse the whole change), bumps the limits
  version (every process rebuilds its cached policy) and asks for a scheduler pass, so a
  change takes effect at once.  ``commit=False`` does all of it and rolls back: sacctmgr's
  preview before "Would you like to commit changes?".
* :func:`row_save`, :func:`row_delete`: the admin's forms, same validation.
* :func:`submit_fields`: ``sbatch`` under AccountingStorageEnforce (default account and
  QOS, submit limits, DenyOnLimit, the time limit a MaxWall gives, the WCKey).
* :func:`pass_plugins`, :func:`pass_priority`, :func:`apply_pass`: the scheduler pass.
* :func:`usage_cycle_run`: the usage cycle (charge running jobs, decay, reset).
* :func:`usage_reload`: at start and reconfigure (PriorityUsageResetPeriod=NOW, running
  jobs' UsageFactor booked again).
* :func:`dump_text`, :func:`load_text`: ``sacctmgr dump|load``.

Deleting an association cancels its running and pending jobs (Slurm's resource_limits.html,
"Tools"); lowering a limit never cancels anything.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import connection, models, transaction
from django.db.models import F, Q
from django.utils import timezone

from cluster import clock, publish, triggers
from cluster.core.states import ACTIVE_JOB_STATES, HOLDING_JOB_STATES, JobState
from cluster.models import ClusterConfig, Job, Partition
from cluster.services import inputs, pass_snapshot
from cluster.services import rows as db_rows
from cluster.services.errors import PermissionDenied, ServiceError
from cluster.services.state import end_job, record_transition, terminate_running
from limits import selectors, submit_counts
from limits.core.options import OptionError, apply_option, assoc_option, qos_option, split_option
from limits.core.plugin import JobLimitsInfo, LimitsPlugin, ShapeMemo
from limits.core.policy import PARTITION, ROOT, JobRequest, JobShape, Policy, PolicyError
from limits.core.priority import JobPriorityInfo, MultifactorPriority, fair_tree
from limits.core.shapes import requested_shape, running_shape
from limits.core.usage import (
    EMPTY,
    DecayPolicy,
    RunningCharge,
    UsageKey,
    UsageRecord,
    assoc_key,
    qos_key,
    usage_cycle,
)
from limits.core.wckeys import WCKEY_MAX, WCKeyError, job_wckey, track_wckey
from limits.gres import check_gres
from limits.models import (
    QOS,
    Account,
    Association,
    Cluster,
    JobAccounting,
    LimitsState,
    LimitsUser,
    Usage,
    WCKey,
)

log = logging.getLogger(__name__)

ENTITIES = ("cluster", "account", "user", "qos", "association")
# An option or condition is one sacctmgr word (``GrpTRES=cpu=10,mem=2G``, ``name=a,b``).
WORD_MAX = 1024
# sacctmgr's AdminLevel words -> the level it shows.
ADMIN_LEVELS = {"none": "None", "operator": "Operator", "admin": "Administrator"}
ADMIN_LEVELS["administrator"] = "Administrator"
_SUBMIT_REJECT = "Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)"


@dataclass
class Change:
    """What a change did, in sacctmgr's words (``lines``), and how many records it touched."""

    lines: list[str] = field(default_factory=list)
    count: int = 0
    committed: bool = True
    cancelled: list[int] = field(default_factory=list)


class Rollback(Exception):
    pass


# --------------------------------------------------------------------------- helpers


def require_admin(actor: AbstractBaseUser | None) -> None:
    if actor is not None and not actor.is_staff:
        raise PermissionDenied("Access/permission denied")


def accounting_cluster() -> str:
    """The cluster the accounting rows belong to: slurm.conf's ClusterName."""
    return ClusterConfig.current().cluster_name or "cluster"


def ensure_cluster(name: str | None = None) -> Cluster:
    """The cluster row and its root association (Slurm creates both with the cluster)."""
    cluster, _ = Cluster.objects.get_or_create(name=name or accounting_cluster())
    root, _ = Account.objects.get_or_create(
        name=ROOT, defaults={"description": "default root account", "organization": "root"}
    )
    Association.objects.get_or_create(cluster=cluster, account=root, user=None, partition="")
    return cluster


def _bump_version() -> None:
    """Every process reads the limits again: they are cached by the configuration's
    revision, which each submission and pass reads anyway (one read validates every cache)."""
    LimitsState.objects.get_or_create(pk=1)
    LimitsState.objects.filter(pk=1).update(version=F("version") + 1, token=uuid.uuid4().hex)
    ClusterConfig.touch()


def _validate_and_bump() -> Policy:
    """Rebuild the policy from what the transaction wrote; refuse (roll back) if it does not
    hold together, else bump the version so every process picks it up."""
    cfg = ClusterConfig.current()
    try:
        policy = selectors.build_policy(cluster=cfg.cluster_name or "cluster", options=cfg.options or {})
    except PolicyError as exc:
        raise ServiceError(str(exc)) from None
    _bump_version()
    publish.console_changed("limits", "jobs")
    triggers.schedule_after_commit()
    return policy


def _run(commit: bool, body) -> Change:
    """Run ``body`` in a transaction that is rolled back unless ``commit``."""
    change = Change(committed=commit)
    try:
        with transaction.atomic():
            body(change)
            _validate_and_bump()
            if not commit:
                raise Rollback
    except Rollback:
        pass
    return change


def parse_where(items: Iterable[str]) -> dict[str, list[str]]:
    """``name=a,b account=x`` -> ``{"name": ["a", "b"], "account": ["x"]}`` (plural keys
    folded: ``names=``, ``accounts=``, ``users=``)."""
    out: dict[str, list[str]] = {}
    for item in items:
        key, eq, value = inputs.text(item, "where", max_length=WORD_MAX).partition("=")
        if not eq:
            raise ServiceError(f"Unknown condition: {item}")
        key = key.strip().lower()
        key = {
            "names": "name",
            "accounts": "account",
            "acct": "account",
            "users": "user",
            "partitions": "partition",
            "clusters": "cluster",
            "parents": "parent",
        }.get(key, key)
        out.setdefault(key, []).extend(v.strip() for v in value.split(",") if v.strip())
    return out


def _options(items: Iterable[str]) -> list[tuple[str, str, str]]:
    try:
        return [split_option(inputs.text(item, "options", max_length=WORD_MAX)) for item in items]
    except OptionError as exc:
        raise ServiceError(str(exc)) from None


def _qos(name: str) -> QOS:
    q = QOS.objects.filter(name=name).first()
    if q is None:
        raise ServiceError(f"Invalid qos specification: QOS {name!r} does not exist")
    return q


def _account(name: str) -> Account:
    a = Account.objects.filter(name=name).first()
    if a is None:
        raise ServiceError(f"Account {name!r} does not exist")
    return a


def _set(row: models.Model, name: str, op: str, value: str, kind: str, column: str) -> None:  # noqa: PLR0917
    if kind == "qosname":
        setattr(row, column, None if value.strip() in ("", "-1") else _qos(value.strip()))
        return
    if kind == "account":
        target = _account(value.strip())
        setattr(row, column, None if target.name == ROOT else target)
        return
    if kind == "rawusage":
        try:
            apply_option(name, op, kind, value, None)
        except OptionError as exc:
            raise ServiceError(str(exc), field=name) from None
        row._clear_usage = True
        return
    try:
        new = apply_option(name, op, kind, value, getattr(row, column))
    except OptionError as exc:
        raise ServiceError(str(exc), field=name) from None
    if kind == "qoslist":
        for q in (w for w in str(new).split(",") if w):
            _qos(q)
        new = new or (None if type(row)._meta.get_field(column).null else "")
    setattr(row, column, new)


def _save(row: models.Model) -> None:
    try:
        row.full_clean(validate_unique=False, validate_constraints=False)
    except ValidationError as exc:
        raise ServiceError("; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())) from None
    row.save()


def _assoc_label(a: Association) -> str:
    text = f"  C = {a.cluster.name:<10} A = {a.account.name:<10}"
    if a.user_id:
        text += f" U = {a.user.name:<9}"
    if a.partition:
        text += f" P = {a.partition}"
    return text


def _subtree(cluster: Cluster, accounts: Iterable[str]) -> set[str]:
    """The accounts named and every account beneath them in ``cluster``."""
    parents: dict[str, list[str]] = {}
    for name, parent in Association.objects.filter(cluster=cluster, user__isnull=True).values_list(
        "account__name", "parent__name"
    ):
        parents.setdefault(parent or ROOT, []).append(name)
    out: set[str] = set()
    todo = list(accounts)
    while todo:
        name = todo.pop()
        if name in out:
            continue
        out.add(name)
        todo.extend(c for c in parents.get(name, ()) if c != name)
    return out


def _clear_usage(cluster: Cluster, assoc: Association) -> None:
    """RawUsage=0: the association's record and, for an account, every one beneath it
    (Slurm's resource_limits.html: "there is no per-TRES reset")."""
    if assoc.user_id:
        keys = [assoc_key(assoc.account.name, assoc.user.name, assoc.partition)]
    else:
        accounts = _subtree(cluster, [assoc.account.name])
        keys = [
            assoc_key(a, u or "", p)
            for a, u, p in Association.objects.filter(
                cluster=cluster, account__name__in=accounts
            ).values_list("account__name", "user__name", "partition")
        ]
    Usage.objects.filter(key__in=[selectors.key_text(k) for k in keys]).delete()


def _cancel_jobs(jobs: Q, *, why: str, actor: str) -> list[int]:
    """Cancel the running and pending jobs matching ``jobs`` (an association deleted)."""

    now = clock.now()
    out = []
    for job in Job.objects.select_for_update().filter(jobs, state__in=[s.value for s in ACTIVE_JOB_STATES]):
        if job.state == JobState.PENDING:
            end_job(job, JobState.CANCELLED, now=now, why=why, user=actor)
        elif job.state in HOLDING_JOB_STATES and not job.final_state:
            terminate_running(job, final_state=JobState.CANCELLED, now=now)
            record_transition(job, job.state, now=now, why=why, user=actor)
        out.append(job.id)
    return out


def _assoc_jobs(a: Association) -> Q:
    q = Q(account=a.account.name)
    if a.user_id:
        q &= Q(user=a.user.name)
        if a.partition:
            q &= Q(partition=a.partition)
    return q


# --------------------------------------------------------------------------- add


def record_add(
    *,
    actor: AbstractBaseUser | None,
    entity: str,
    names: Sequence[str],
    options: Sequence[str] = (),
    commit: bool = True,
) -> Change:
    """``sacctmgr add <entity> <names> [options]``."""
    require_admin(actor)
    entity = _entity(entity)
    names = [
        inputs.name(n, "names")
        for name in names
        for n in inputs.text(name, "names", max_length=WORD_MAX).split(",")
        if n
    ]
    opts = _options(options)
    if not names:
        raise ServiceError(f"You need to specify a {entity} name")

    def body(change: Change) -> None:
        if entity == "cluster":
            _add_clusters(change, names)
        elif entity == "qos":
            _add_qos(change, names, opts)
        elif entity == "account":
            _add_accounts(change, names, opts)
        else:
            _add_users(change, names, opts)
        if not change.count:
            raise ServiceError(" Nothing new added.")

    return _run(commit, body)


def _entity(text: str) -> str:
    word = text.strip().lower()
    word = {"accounts": "account", "users": "user", "clusters": "cluster", "assoc": "association"}.get(
        word, word
    )
    word = "association" if word in ("associations",) else word
    if word not in ENTITIES:
        raise ServiceError(f"Unknown entity '{text}'")
    return word


def _add_clusters(change: Change, names: Sequence[str]) -> None:
    change.lines.append(" Adding Cluster(s)")
    for name in names:
        if Cluster.objects.filter(name=name).exists():
            continue
        ensure_cluster(name)
        change.lines.append(f"  Name           = {name}")
        change.count += 1


def _add_qos(change: Change, names: Sequence[str], opts: list[tuple[str, str, str]]) -> None:
    change.lines.append(" Adding QOS(s)")
    for name in names:
        if QOS.objects.filter(name=name).exists():
            raise ServiceError(f"QOS {name} already exists")
        row = QOS(name=name)
        for opt, op, value in opts:
            try:
                column, kind = qos_option(opt)
            except OptionError as exc:
                raise ServiceError(str(exc)) from None
            _set(row, opt, op, value, kind, column)
        _save(row)
        change.lines.append(f"  {name}")
        change.count += 1


_ACCOUNT_FIELDS = {"description": "description", "organization": "organization"}


def _split_assoc_opts(
    opts: list[tuple[str, str, str]], extra: Iterable[str]
) -> tuple[dict[str, str], list[tuple[str, str, str]]]:
    """Options naming the record (Cluster=, Parent=, Account=...) apart from the limits."""
    special: dict[str, str] = {}
    rest = []
    for name, op, value in opts:
        key = name.lower()
        if key in extra:
            special[key] = _record_value(key, value)
        else:
            rest.append((name, op, value))
    return special, rest


def _record_value(key: str, value: str) -> str:
    """A value stored on the account or user record itself, checked against its column."""
    if key in _ACCOUNT_FIELDS:
        return inputs.text(value, _ACCOUNT_FIELDS[key], max_length=256)
    if key == "adminlevel":
        level = ADMIN_LEVELS.get(value.strip().lower())
        if level is None:
            raise ServiceError(f"Invalid AdminLevel: {value[:32]} (None, Operator or Administrator)")
        return level
    if key in ("partition", "partitions"):
        return ",".join(inputs.names(value, key, max_length=WORD_MAX))
    return value


def _apply_assoc(a: Association, opts: list[tuple[str, str, str]]) -> None:
    for opt, op, value in opts:
        try:
            column, kind = assoc_option(opt)
        except OptionError as exc:
            raise ServiceError(str(exc)) from None
        _set(a, opt, op, value, kind, column)


def _add_accounts(change: Change, names: Sequence[str], opts: list[tuple[str, str, str]]) -> None:
    special, rest = _split_assoc_opts(opts, {"cluster", "clusters", "description", "organization", "parent"})
    cluster = ensure_cluster(special.get("cluster") or special.get("clusters"))
    parent = _account(special["parent"]) if special.get("parent") else Account.objects.get(name=ROOT)
    if not Association.objects.filter(cluster=cluster, account=parent, user=None).exists():
        raise ServiceError(f"Parent account {parent.name} has no association on cluster {cluster.name}")
    change.lines.append(" Adding Account(s)")
    added = []
    for name in names:
        account, _ = Account.objects.get_or_create(
            name=name,
            defaults={
                "description": special.get("description", name),
                "organization": special.get("organization", parent.name if parent.name != ROOT else name),
            },
        )
        if Association.objects.filter(cluster=cluster, account=account, user=None).exists():
            continue
        a = Association(cluster=cluster, account=account, parent=None if parent.name == ROOT else parent)
        _apply_assoc(a, rest)
        _save(a)
        added.append(a)
        change.lines.append(f"  {name}")
        change.count += 1
    if added:
        change.lines.append(" Associations")
        change.lines.extend(_assoc_label(a) for a in added)
        change.lines.append(" Settings")
        change.lines.append(f"  Parent        = {parent.name}")


def _add_users(change: Change, names: Sequence[str], opts: list[tuple[str, str, str]]) -> None:
    special, rest = _split_assoc_opts(
        opts,
        {
            "account",
            "accounts",
            "cluster",
            "clusters",
            "partition",
            "partitions",
            "defaultaccount",
            "adminlevel",
            "wckey",
            "wckeys",
            "defaultwckey",
        },
    )
    # DefaultQOS goes on the user record when no account is given with it, like sacctmgr.
    cluster = ensure_cluster(special.get("cluster") or special.get("clusters"))
    accounts = [a for a in (special.get("account") or special.get("accounts") or "").split(",") if a]
    default = special.get("defaultaccount", "")
    if not accounts and default:
        accounts = [default]
    wckeys, default_wckey = _wckey_options(special)
    if not accounts and not wckeys:
        raise ServiceError("Need a default account for these users to add them (Account= or DefaultAccount=)")
    partitions = [
        p for p in (special.get("partition") or special.get("partitions") or "").split(",") if p
    ] or [""]
    change.lines.append(" Adding User(s)")
    added = []
    added_wckeys: list[str] = []
    for name in names:
        user, created = LimitsUser.objects.get_or_create(name=name)
        if special.get("adminlevel"):
            user.admin_level = special["adminlevel"]
        if accounts and (created or default):
            user.default_account = _account(default or accounts[0])
        # As sacctmgr: the DefaultWCKey given, else the first WCKey of a user with none.
        if (default_wckey or (wckeys and not user.default_wckey)) and user.default_wckey != (
            new_default := default_wckey or wckeys[0]
        ):
            user.default_wckey = new_default
            change.count += 0 if created else 1
        user.save()
        if created:
            change.lines.append(f"  {name}")
        for key in wckeys:
            _, new = WCKey.objects.get_or_create(cluster=cluster, user=user, name=key)
            if new:
                added_wckeys.append(f"  W = {key:<9.9} C = {cluster.name:<10.10} U = {name:<9.9}")
                change.count += 1
        for acct_name in accounts:
            account = _account(acct_name)
            if not Association.objects.filter(cluster=cluster, account=account, user=None).exists():
                raise ServiceError(f"Account {acct_name} has no association on cluster {cluster.name}")
            for part in partitions:
                if Association.objects.filter(
                    cluster=cluster, account=account, user=user, partition=part
                ).exists():
                    continue
                a = Association(cluster=cluster, account=account, user=user, partition=part)
                _apply_assoc(a, rest)
                _save(a)
                added.append(a)
                change.count += 1
    if added:
        change.lines.append(" Associations =")
        change.lines.extend(_assoc_label(a) for a in added)
    if added_wckeys:
        change.lines.append(" WCKeys =")
        change.lines.extend(added_wckeys)


def _wckey_options(special: Mapping[str, str]) -> tuple[list[str], str]:
    """``WCKeys=a,b`` and ``DefaultWCKey=a`` of sacctmgr add user, lower case as slurmctld
    keeps them; the default is one of the user's WCKeys too, as sacctmgr adds it."""
    text = special.get("wckeys") or special.get("wckey") or ""
    wckeys = [w.lower() for w in inputs.names(text, "WCKeys", max_length=WORD_MAX, each=WCKEY_MAX)]
    default = special.get("defaultwckey", "").strip().lower()
    if default:
        default = inputs.name(default, "DefaultWCKey", max_length=WCKEY_MAX)
        if default not in wckeys:
            wckeys.append(default)
    if any(w.startswith("*") for w in wckeys):
        raise ServiceError("Invalid wckey specification: a WCKey cannot begin with '*'")
    return wckeys, default


# --------------------------------------------------------------------------- modify


def _match_assocs(entity: str, where: dict[str, list[str]]) -> models.QuerySet[Association]:
    qs = Association.objects.select_related("cluster", "account", "user", "parent")
    qs = qs.filter(cluster__name__in=where.get("cluster") or [accounting_cluster()])
    names = where.get("name", [])
    if entity == "account":
        qs = qs.filter(user__isnull=True)
        if names:
            qs = qs.filter(account__name__in=names)
        if where.get("parent"):
            qs = qs.filter(parent__name__in=where["parent"])
    elif entity == "user":
        qs = qs.filter(user__isnull=False)
        if names:
            qs = qs.filter(user__name__in=names)
        if where.get("account"):
            qs = qs.filter(account__name__in=where["account"])
        if "partition" in where:
            qs = qs.filter(partition__in=where["partition"] or [""])
    else:  # association: by account, user, partition
        if where.get("account") or names:
            qs = qs.filter(account__name__in=where.get("account", []) + names)
        if where.get("user"):
            qs = qs.filter(user__name__in=where["user"])
        elif "user" not in where and not where.get("account") and not names:
            pass
        if "partition" in where:
            qs = qs.filter(partition__in=where["partition"] or [""])
    unknown = set(where) - {"name", "cluster", "account", "user", "partition", "parent"}
    if unknown:
        raise ServiceError(f"Unknown condition: {sorted(unknown)[0]}")
    return qs


def record_modify(
    *,
    actor: AbstractBaseUser | None,
    entity: str,
    where: Sequence[str],
    options: Sequence[str],
    commit: bool = True,
) -> Change:
    """``sacctmgr modify <entity> [where] <conditions> set <options>``."""
    require_admin(actor)
    entity = _entity(entity)
    cond = parse_where(where)
    opts = _options(options)
    if not opts:
        raise ServiceError("You didn't give me anything to set")

    def body(change: Change) -> None:
        if entity == "qos":
            rows = list(
                QOS.objects.filter(name__in=cond.get("name", [])) if cond.get("name") else QOS.objects.all()
            )
            change.lines.append(" Modified qos...")
            for row in rows:
                clear = False
                for opt, op, value in opts:
                    try:
                        column, kind = qos_option(opt)
                    except OptionError as exc:
                        raise ServiceError(str(exc)) from None
                    if kind == "rawusage":
                        _set(row, opt, op, value, kind, column)
                        clear = True
                        continue
                    _set(row, opt, op, value, kind, column)
                _save(row)
                if clear:
                    Usage.objects.filter(key=selectors.key_text(qos_key(row.name))).delete()
                change.lines.append(f"  {row.name}")
                change.count += 1
        elif entity == "cluster":
            raise ServiceError("Nothing to modify on a cluster here; modify its root account instead")
        else:
            _modify_assocs(change, entity, cond, opts)
        if not change.count:
            raise ServiceError(" Nothing modified")

    return _run(commit, body)


def _modify_assocs(
    change: Change, entity: str, cond: dict[str, list[str]], opts: list[tuple[str, str, str]]
) -> None:
    record_level = (
        {"description", "organization"}
        if entity == "account"
        else {"defaultaccount", "defaultqos", "adminlevel", "defaultwckey"}
    )
    if entity == "association":
        record_level = set()
    special, rest = _split_assoc_opts(opts, record_level)
    assocs = list(_match_assocs(entity, cond))
    if entity == "user" and special:
        users = LimitsUser.objects.filter(name__in=cond.get("name", []))
        if not users:
            raise ServiceError(f"User {','.join(cond.get('name', []))} does not exist")
        change.lines.append(" Modified users...")
        for user in users:
            if "defaultaccount" in special:
                acct = _account(special["defaultaccount"])
                if not Association.objects.filter(user=user, account=acct).exists():
                    raise ServiceError(f"User {user.name} has no association with account {acct.name}")
                user.default_account = acct
            if "defaultqos" in special:
                value = special["defaultqos"].strip()
                user.default_qos = None if value in ("", "-1") else _qos(value)
            if "adminlevel" in special:
                user.admin_level = special["adminlevel"]
            if "defaultwckey" in special:
                key = special["defaultwckey"].strip().lower()
                if key not in ("", "-1") and not WCKey.objects.filter(user=user, name=key).exists():
                    raise ServiceError(f"User {user.name} doesn't have wckey {key}: add it first (WCKeys=)")
                user.default_wckey = "" if key == "-1" else key
            user.save()
            change.lines.append(f"  {user.name}")
            change.count += 1
    if entity == "account" and special:
        accounts = Account.objects.filter(name__in=cond.get("name", []))
        change.lines.append(" Modified accounts...")
        for account in accounts:
            for key, value in special.items():
                setattr(account, key, value)
            account.save()
            change.lines.append(f"  {account.name}")
            change.count += 1
    if not rest:
        return
    if not assocs:
        return
    change.lines.append(f" Modified {'account' if entity == 'account' else 'user'} associations...")
    for a in assocs:
        clear = False
        for opt, op, value in rest:
            try:
                column, kind = assoc_option(opt)
            except OptionError as exc:
                raise ServiceError(str(exc)) from None
            if kind == "account" and a.user_id:
                raise ServiceError("Parent can only be set on an account")
            _set(a, opt, op, value, kind, column)
            clear = clear or kind == "rawusage"
        _save(a)
        if clear:
            _clear_usage(a.cluster, a)
        change.lines.append(_assoc_label(a))
        change.count += 1


# --------------------------------------------------------------------------- delete


def record_delete(
    *,
    actor: AbstractBaseUser | None,
    entity: str,
    where: Sequence[str],
    commit: bool = True,
) -> Change:
    """``sacctmgr delete <entity> [where] <conditions>``: the associations go, and with
    them every running and pending job that belongs to them (Slurm's resource_limits.html,
    "Tools")."""
    require_admin(actor)
    entity = _entity(entity)
    cond = parse_where(where)
    who = actor.get_username() if actor is not None else ""
    if not cond:
        raise ServiceError("You need to specify which records to delete (name=...)")

    def body(change: Change) -> None:
        if entity == "qos":
            names = cond.get("name", [])
            if "normal" in names:
                raise ServiceError("The normal QOS cannot be deleted")
            rows = QOS.objects.filter(name__in=names)
            change.lines.append(" Deleting QOS(s)...")
            for row in rows:
                for a in Association.objects.filter(qos__isnull=False):
                    listed = [q for q in a.qos.split(",") if q]
                    if row.name in listed:
                        a.qos = ",".join(q for q in listed if q != row.name) or None
                        a.save(update_fields=["qos"])
                Usage.objects.filter(key=selectors.key_text(qos_key(row.name))).delete()
                change.lines.append(f"  {row.name}")
                row.delete()
                change.count += 1
        elif entity == "cluster":
            rows = Cluster.objects.filter(name__in=cond.get("name", []))
            change.lines.append(" Deleting clusters...")
            for row in rows:
                if row.name == accounting_cluster():
                    for a in row.associations.filter(user__isnull=True, parent__isnull=True).exclude(
                        account__name=ROOT
                    ):
                        change.cancelled += _cancel_jobs(_assoc_jobs(a), why="association deleted", actor=who)
                change.lines.append(f"  {row.name}")
                row.delete()
                change.count += 1
        else:
            _delete_assocs(change, entity, cond, who)
        if not change.count:
            raise ServiceError(" Nothing deleted")

    return _run(commit, body)


def _delete_assocs(change: Change, entity: str, cond: dict[str, list[str]], who: str) -> None:
    assocs = list(_match_assocs(entity, cond))
    if entity == "account" and ROOT in cond.get("name", []):
        raise ServiceError("The root account cannot be deleted")
    victims: list[Association] = []
    for a in assocs:
        if a.user_id:
            victims.append(a)
            continue
        children = Association.objects.filter(cluster=a.cluster, user__isnull=True, parent=a.account).exclude(
            pk__in=[x.pk for x in assocs]
        )
        if children.exists():
            raise ServiceError(
                f"Account {a.account.name} has child accounts "
                f"({', '.join(c.account.name for c in children)}); delete or move them first"
            )
        victims.append(a)
        victims.extend(Association.objects.filter(cluster=a.cluster, account=a.account, user__isnull=False))
    if not victims:
        return
    change.lines.append(" Deleting associations...")
    seen = set()
    for a in victims:
        if a.pk in seen:
            continue
        seen.add(a.pk)
        change.cancelled += _cancel_jobs(_assoc_jobs(a), why="association deleted", actor=who)
        change.lines.append(_assoc_label(a))
        key = assoc_key(a.account.name, a.user.name if a.user_id else "", a.partition)
        Usage.objects.filter(key=selectors.key_text(key)).delete()
        a.delete()
        change.count += 1
    # Users and accounts left without any association go too; a user's default account
    # moves to one it still has.
    for user in LimitsUser.objects.filter(association__isnull=True):
        user.delete()
    for user in LimitsUser.objects.all():
        if (
            user.default_account_id
            and not Association.objects.filter(user=user, account=user.default_account).exists()
        ):
            other = Association.objects.filter(user=user).select_related("account").first()
            user.default_account = other.account if other else None
            user.save(update_fields=["default_account"])
    Account.objects.filter(associations__isnull=True).exclude(name=ROOT).delete()
    if change.cancelled:
        change.lines.append(f" Cancelled jobs: {', '.join(str(j) for j in sorted(change.cancelled))}")


# --------------------------------------------------------------------------- the admin


def row_save(*, actor: AbstractBaseUser | None, row: models.Model, commit: bool = True) -> None:
    """The admin's save: the same validation as sacctmgr (field checks, then the whole
    policy rebuilt), or a ServiceError and nothing saved.  ``commit=False`` checks only
    (the admin form's validation)."""
    require_admin(actor)
    new = row.pk is None
    try:
        with transaction.atomic():
            if isinstance(row, Association):
                ensure_cluster(row.cluster.name)
            _save(row)
            _validate_and_bump()
            if not commit:
                raise Rollback
    except Rollback:
        if new:
            row.pk = None
            row._state.adding = True


def row_delete(*, actor: AbstractBaseUser | None, row: models.Model) -> None:
    """The admin's delete; an association's jobs are cancelled as with sacctmgr."""
    require_admin(actor)
    who = actor.get_username() if actor is not None else ""
    with transaction.atomic():
        if isinstance(row, Association):
            if row.account.name == ROOT and not row.user_id:
                raise ServiceError("The root association cannot be deleted")
            _cancel_jobs(_assoc_jobs(row), why="association deleted", actor=who)
        elif isinstance(row, Account):
            for a in row.associations.all():
                _cancel_jobs(_assoc_jobs(a), why="association deleted", actor=who)
        try:
            row.delete()
        except models.ProtectedError:
            raise ServiceError(f"{row} still has child accounts") from None
        _validate_and_bump()


# --------------------------------------------------------------------------- submission


def submit_fields(
    common: Mapping[str, Any],
    *,
    count: int = 1,
    now: datetime | None = None,
    cfg: ClusterConfig | None = None,
) -> dict[str, Any]:
    """The account and QOS to store on a new job, after the submit checks.

    Without AccountingStorageEnforce nothing changes but the QOS default (``normal``).  With
    ``associations``, a job without ``-A`` goes to the user's default account and must have
    an association; with ``qos`` its QOS must be allowed; with ``limits`` the submit limits
    and (DenyOnLimit) the job's own size against the QOS limits are checked.  Refusals use
    Slurm's words on the first line, the limit and level on the next.  ``replaces``: the
    (user, account, partition, QOS) an updated job is counted under, left out of the counts.
    """
    cfg = cfg or ClusterConfig.current()
    ctx = selectors.context(cfg)
    policy = ctx.policy
    user = common["user"]
    account = common.get("account") or ""
    qos = common.get("qos") or ""
    gres = check_gres(common.get("gres") or "")
    track = track_wckey(selectors.option(cfg.options or {}, "TrackWCKey"), enforce_wckeys=ctx.enforce.wckeys)
    try:
        wckey = job_wckey(
            policy.users, user, common.get("wckey") or "", track=track, enforce=ctx.enforce.wckeys
        )
    except WCKeyError as exc:
        raise ServiceError(str(exc), field="wckey") from None
    common = {**common, "gres": gres}
    if not ctx.enforce.associations:
        return {"account": account, "qos": qos or "normal", "gres": gres, "wckey": wckey}
    if not account:
        u = policy.users.get(user)
        account = u.default_account if u else ""
    assoc = policy.association(user, account, common["partition"])
    if assoc is None:
        raise ServiceError(
            "Invalid account or account/partition combination specified\n"
            f"no association for user {user} in account {account or '(none)'}",
            field="account",
        )
    qos = policy.job_qos_name(assoc, qos)
    out: dict[str, Any] = {"account": account, "qos": qos, "gres": gres, "wckey": wckey}
    if ctx.enforce.limits and not common.get("time_asked", True):
        limit = _default_time_limit(policy.plan(user, account, common["partition"], qos), common["partition"])
        if limit is not None:
            out["time_limit"] = limit
            common = {**common, "time_limit": limit}
    now = now or clock.now()
    shape = requested_shape(policy, common["partition"], common)
    job = JobRequest(
        job_id=0,
        user=user,
        account=account,
        partition=common["partition"],
        qos=qos,
        shape=shape,
        submit_time=now.timestamp(),
    )
    from limits.core.policy import check_submit, counts_submitted  # noqa: PLC0415 - the name is taken here

    # The queue is read only when a submit limit counts it, and then counted in SQL.
    submitted = _submitted_groups(policy, account, qos, user) if counts_submitted(policy, job) else {}
    if (replaces := common.get("replaces")) and submitted.get(tuple(replaces), 0) > 0:
        # An update of a job already counted (scontrol update Account=/QOS=): not twice.
        submitted = {**submitted, tuple(replaces): submitted[tuple(replaces)] - 1}
    verdict = check_submit(policy, job, submitted=submitted, now=now.timestamp(), count=max(count, 1))
    if verdict is not None:
        raise ServiceError(_slurm_words(verdict), field="account")
    return out


def _default_time_limit(plan: Any, partition: str) -> int | None:
    """The time limit of a job submitted without ``-t`` when a QOS or association MaxWall
    applies to it, else None (the partition's DefaultTime or MaxTime stands).

    Slurm's order (its job_mgr/acct_policy, ``_set_time_limit``): the partition's
    DefaultTime if it has one; else the first MaxWall of the hierarchy (partition QOS and
    job QOS in their OverPartQOS order, then the association and its parents), bounded
    by the partition's MaxTime unless the QOS has PartitionTimeLimit; else MaxTime.  One
    departure: a DefaultTime longer than that MaxWall is cut to the MaxWall, where Slurm
    would hold the job forever (or refuse it with DenyOnLimit) for a limit it never chose.
    """
    if plan.error is not None:
        return None
    wall = next(iter(plan.kind("MaxWallDurationPerJob")), None)
    if wall is None or wall.source.level == PARTITION:
        return None  # no QOS or association sets one: the partition's own limit stands
    default = Partition.objects.filter(name=partition).values_list("default_time", flat=True).first()
    return wall.value if default is None else min(default, wall.value)


def _slurm_words(verdict: str) -> str:
    """The core's message as sbatch prints it: Slurm's exact words, then the detail."""
    for head in (
        _SUBMIT_REJECT,
        "Invalid account or account/partition combination specified",
        "Invalid qos specification",
        "Job's account not permitted to use this partition",
        "Invalid wckey specification",
    ):
        if verdict.startswith(head):
            detail = verdict[len(head) :].lstrip(": ").strip()
            if detail.startswith("(") and detail.endswith(")"):
                detail = detail[1:-1]
            return head + (f"\n{detail}" if detail else "")
    return verdict


def _submitted_groups(
    policy: Policy, account: str, qos: str, user: str
) -> dict[tuple[str, str, str, str], int]:
    """How many active jobs the submit limits of a new job can count, by (user, account,
    partition, QOS): the user's, those of the accounts of its tree (below its top
    account), and those of its QOS.  From the counts the database keeps
    (limits/submit_counts.py), as Slurm keeps them in memory: no job is read or counted,
    whatever the queue's depth (#18)."""
    return submit_counts.groups(user, policy.top_tree(account), qos)


# --------------------------------------------------------------------------- scheduler pass


def _job_infos() -> dict[int, JobLimitsInfo]:
    """The limits' fields of every active job, with its accounting (accrue time, booked
    UsageFactor).  Every pass reads them: kept between passes and read again for the jobs
    whose row or accounting was written since (a submission reads its job alone, not every
    active job), none for writes of other columns (shared: read-only)."""
    return pass_snapshot.kept_by_key("limits.job_infos", _JOB_INFO_TABLES, _read_job_infos)


_JOB_INFO_TABLES = (
    (Job, ("account", "qos", "gres", "state")),
    (JobAccounting, ("accrue_time", "usage_factor")),
)

# Jobs read by id in statements of at most this many parameters (SQLite's old limit 999).
_IDS_PER_READ = 500


def _read_job_infos(ids: Sequence[int] | None = None) -> Iterator[tuple[int, JobLimitsInfo]]:
    """(job id, its limits' fields) of the active jobs, or of those of ``ids`` that are."""
    states = [s.value for s in ACTIVE_JOB_STATES]
    if ids is None:
        chunks: list[Sequence[int] | None] = [None]
    else:
        chunks = [ids[k : k + _IDS_PER_READ] for k in range(0, len(ids), _IDS_PER_READ)]
    for chunk in chunks:
        # One statement, assembled once from the models (the ORM compiled it again every
        # pass: half the cost of reading it).
        with connection.cursor() as cursor:
            if chunk is None:
                cursor.execute(_job_infos_sql(connection.vendor, 0), states)
            else:
                cursor.execute(_job_infos_sql(connection.vendor, len(chunk)), [*states, *chunk])
            found = cursor.fetchall()
        for job_id, acct, qos, gres, accrue, factor in found:
            yield (
                job_id,
                JobLimitsInfo(account=acct, qos=qos, gres=gres, accrue_time=accrue, usage_factor=factor),
            )


@lru_cache(maxsize=64)
def _job_infos_sql(vendor: str, ids: int) -> str:
    """The statement reading the active jobs' limits fields, of ``ids`` jobs named by
    parameter (0: every active job)."""
    quote = connection.ops.quote_name
    job, acct = Job._meta, JobAccounting._meta
    columns = [f"j.{quote(job.get_field(f).column)}" for f in ("id", "account", "qos", "gres")]
    columns += [f"a.{quote(acct.get_field(f).column)}" for f in ("accrue_time", "usage_factor")]
    states = ", ".join(["%s"] * len(ACTIVE_JOB_STATES))
    sql = (
        f"SELECT {', '.join(columns)} FROM {quote(job.db_table)} j"  # noqa: S608 - names from the models
        f" LEFT OUTER JOIN {quote(acct.db_table)} a ON a.{quote(acct.pk.column)} = j.{quote(job.pk.column)}"
        f" WHERE j.{quote(job.get_field('state').column)} IN ({states})"
    )
    if ids:
        sql += f" AND j.{quote(job.pk.column)} IN ({', '.join(['%s'] * ids)})"
    return sql


# The pass's job shapes kept between passes while the policy, the partitions' time limits
# and DefMemPerNode stay (limits.core.plugin.ShapeMemo).
_shape_memo = ShapeMemo()


def pass_plugins() -> list[LimitsPlugin]:
    """The limits plugin for a scheduler pass, when AccountingStorageEnforce asks for one
    (nothing, and no query, otherwise)."""
    ctx = selectors.context()
    if not ctx.enforce.associations:
        return []
    return [
        LimitsPlugin(
            ctx.policy,
            jobs=_job_infos(),
            usage=selectors.usage_records(),
            bf_min_prio_reserve=ctx.priority.bf_min_prio_reserve,
            memo=_shape_memo,
        )
    ]


# The last fair-share factors and what they were computed from: the policy and the usage
# records are kept values (the same objects while their tables are not written), so the
# factors are computed again only when one of them is another object.
_fair_memo: tuple[object, object, dict] | None = None


def _fair_tree(policy, usage) -> dict:
    global _fair_memo  # noqa: PLW0603 - one per process, replaced whole
    memo = _fair_memo
    if memo is not None and memo[0] is policy and memo[1] is usage:
        return memo[2]
    factors = fair_tree(policy, usage)
    _fair_memo = (policy, usage, factors)
    return factors


# The last jobs' priority fields and what they were made from: the job infos are a kept
# value (the same dict while the job and accounting tables are not written), the nice
# values compared: made again only when either changed.
_priority_memo: tuple[object, dict[int, int], dict[int, JobPriorityInfo]] | None = None


def _priority_info(infos: Mapping[int, JobLimitsInfo], nice: dict[int, int]) -> dict[int, JobPriorityInfo]:
    global _priority_memo  # noqa: PLW0603 - one per process, replaced whole
    memo = _priority_memo
    if memo is not None and memo[0] is infos and memo[1] == nice:
        return memo[2]
    info = {
        job_id: JobPriorityInfo(
            account=i.account, qos=i.qos, accrue_time=i.accrue_time, nice=nice.get(job_id, 0)
        )
        for job_id, i in infos.items()
    }
    _priority_memo = (infos, nice, info)
    return info


def pass_priority(snapshot, active: Sequence[object]) -> dict[str, Any]:
    """``{"priority": MultifactorPriority}`` for :func:`cluster.core.scheduler.schedule` when
    PriorityType=priority/multifactor is in force, else ``{}`` (priority/basic)."""
    ctx = selectors.context()
    if not ctx.multifactor:
        return {}
    if ctx.priority.weightless:
        # Every term weighs 0: a job's priority is its nice alone (the sum sprio shows too).
        # The accounts, QOS, accrue times and fair shares a weighted sum reads are not
        # gathered: half again a pass's time with 1,000 jobs pending.
        niced = {j.job_id: JobPriorityInfo(nice=j.nice) for j in snapshot.pending if j.nice}
        return {"priority": MultifactorPriority(ctx.priority, ctx.policy, info=niced)}
    plugin = next((p for p in active if isinstance(p, LimitsPlugin)), None)
    infos = plugin.jobs if plugin is not None else _job_infos()
    usage = plugin.usage if plugin is not None else selectors.usage_records()
    # The job's own nice (sbatch --nice), which multifactor takes off the sum.
    nice = {j.job_id: j.nice for j in snapshot.pending}
    info = _priority_info(infos, nice)
    if not ctx.enforce.associations:
        # Without the accrue limits every eligible pending job accrues from submission.
        info = {
            j.job_id: JobPriorityInfo(
                account=info.get(j.job_id, JobPriorityInfo()).account,
                qos=info.get(j.job_id, JobPriorityInfo()).qos,
                accrue_time=j.submit_time,
                nice=j.nice,
            )
            for j in snapshot.pending
        }
    return {
        "priority": MultifactorPriority(
            ctx.priority,
            ctx.policy,
            info=info,
            fairshare=_fair_tree(ctx.policy, usage),
            total_nodes=len(snapshot.nodes),
            total_cpus=sum(n.cpus for n in snapshot.nodes),
        )
    }


_FACTOR_FIELDS = ("id", "user", "partition", "account", "qos")


def apply_pass(result, active: Sequence[object], now: datetime) -> None:
    """The limits' decisions of a pass, in the pass's transaction: the UsageFactor booked
    by each started job, accrue times, and the jobs killed because a TRES-minutes budget
    is spent (without ``safe``; GrpTRESMins in Slurm's resource_limits.html)."""

    plugin = next((p for p in active if isinstance(p, LimitsPlugin)), None)
    if plugin is None:
        return
    started = [s.job_id for s in result.starts]
    if started:
        factors = []
        running = {"pk": started, "state": JobState.RUNNING}
        for job_id, user, part, acct, qos in db_rows.select(Job, _FACTOR_FIELDS, running):
            plan = plugin.policy.plan(user, acct, part, qos)
            factors.append((job_id, plan.usage_factor if plan.error is None else 1.0))
        # Each row as update_or_create(job_id=..., defaults={field: value}) leaves it, in one
        # statement for all (the ORM's get and save per job were most of a pass's writes).
        db_rows.upsert_values(JobAccounting, ("usage_factor",), factors)
    stamp = now.timestamp()
    accruing = [(job_id, stamp) for job_id in result.accrue_start]
    db_rows.upsert_values(JobAccounting, ("accrue_time",), accruing)
    for kill in result.kills:
        job = Job.objects.select_for_update().filter(pk=kill.job_id).first()
        if job is None or job.state not in HOLDING_JOB_STATES or job.final_state:
            continue
        terminate_running(job, final_state=JobState.TIMEOUT, now=now)
        job.reason = kill.reason
        job.reason_detail = kill.detail[:512]
        job.save(update_fields=["reason", "reason_detail"])
        record_transition(job, job.state, now=now, why=f"{kill.reason}: {kill.detail}"[:256], user="slurm")
    if result.kills:
        publish.console_changed("jobs")


# --------------------------------------------------------------------------- start, reconfigure


def usage_reload(*, now: datetime | None = None, cfg: ClusterConfig | None = None) -> str:
    """What slurmctld does with the accounting when it starts or is reconfigured, in the
    transaction that applies slurm.conf:

    * ``PriorityUsageResetPeriod=NOW`` clears every usage record, once: the usage cycles
      never reset for NOW (Slurm's priority/multifactor resets at its first decay cycle
      after reading NOW, then treats the period as NONE until the next reconfigure);
    * every running job is booked again with its QOS's current UsageFactor (the
      UsageFactor NOTE of Slurm's resource_limits.html: "when slurmctld is restarted or
      reconfigured, the usage of all running jobs is booked again").
    """
    now = now or clock.now()
    stamp = now.timestamp()
    ctx = selectors.context(cfg)
    done = []
    if ctx.priority.usage_reset_period == "NOW":
        Usage.objects.update(raw_usage=0.0, tres_seconds={}, wall_seconds=0.0)
        st, _ = LimitsState.objects.select_for_update().get_or_create(pk=1)
        # The time before the reset is not charged afterwards.
        st.last_reset = st.last_cycle = stamp
        st.save(update_fields=["last_cycle", "last_reset"])
        done.append("usage reset")
    rebooked = 0
    for job_id, user, part, acct, qos in Job.objects.filter(state=JobState.RUNNING).values_list(
        "id", "user", "partition", "account", "qos"
    ):
        plan = ctx.policy.plan(user, acct, part, qos)
        factor = plan.usage_factor if plan.error is None else 1.0
        JobAccounting.objects.update_or_create(job_id=job_id, defaults={"usage_factor": factor})
        rebooked += 1
    done.append(f"rebooked={rebooked}")
    return " ".join(done)


# --------------------------------------------------------------------------- usage cycle


def usage_cycle_run(*, now: datetime | None = None) -> str:
    """One usage cycle (Slurm's resource_limits.html, "Controlling how GrpTRESMins usage decays"):
    reset on a PriorityUsageResetPeriod boundary, else decay every record (PriorityDecayHalfLife,
    TresDecayHalfLife per TRES, NoDecay QOS untouched), then charge each RUNNING job's
    TRES-seconds since the last cycle, at its QOS's current UsageFactor, to its
    association, every ancestor, its QOS and partition QOS.

    Only the records the cycle changed are written: with no time elapsed, no job running
    and nothing left to decay, it writes none."""
    now = now or clock.now()
    stamp = now.timestamp()
    ctx = selectors.context()
    policy = ctx.policy
    with transaction.atomic():
        st = _cycle_state()
        last = st.last_cycle if st.last_cycle is not None else stamp
        last_reset = st.last_reset if st.last_reset is not None else stamp
        records = selectors.usage_records()
        charges = []
        for job in _running_rows():
            plan = policy.plan(job["user"], job["account"], job["partition"], job["qos"])
            if plan.error is not None or not plan.usage_keys or job["start_time"] is None:
                continue
            shape = _running_shape(policy, job)
            charges.append(
                RunningCharge(
                    keys=plan.usage_keys,
                    tres=shape.tres,
                    billing=float(shape.tres.get("billing", 0)),
                    start_time=job["start_time"].timestamp(),
                    usage_factor=plan.job_qos.usage_factor if plan.job_qos else 1.0,
                )
            )
        new, reset = usage_cycle(
            records, charges, last=last, now=stamp, policy=_decay_policy(ctx), last_reset=last_reset
        )
        _store_usage(records, new)
        st.last_cycle = stamp
        st.last_reset = stamp if reset or st.last_reset is None else st.last_reset
        db_rows.update_rows([st], ("last_cycle", "last_reset"))
    # The submit limits' counts gain a row at every job's start and end, read or not.
    submit_counts.compact(at_least=submit_counts.COMPACT_AT)
    if charges:
        publish.console_changed("limits")
        triggers.schedule_after_commit()
    return f"charged={len(charges)} records={len(new)}{' reset' if reset else ''}"


def _cycle_state() -> LimitsState:
    """The usage cycle's clock, locked, read without compiling a query (the simulator runs
    a cycle every PriorityCalcPeriod); created when missing."""
    found = db_rows.load(LimitsState, ("last_cycle", "last_reset"), {"pk": 1}, for_update=True)
    return found[0] if found else LimitsState.objects.select_for_update().get_or_create(pk=1)[0]


_RUNNING_FIELDS = (
    "id",
    "user",
    "account",
    "partition",
    "qos",
    "alloc",
    "num_tasks",
    "cpus_per_task",
    "time_limit",
    "licenses",
    "licenses_alloc",
    "gres",
    "start_time",
)


def _running_rows() -> list[dict[str, Any]]:
    """The RUNNING jobs' fields the cycle charges from, as ``values()`` gives them (same
    statement, same order) without compiling it every cycle."""
    found = db_rows.select(Job, _RUNNING_FIELDS, {"state": JobState.RUNNING})
    return [dict(zip(_RUNNING_FIELDS, row, strict=True)) for row in found]


# A running job's shape, kept from cycle to cycle while the policy and its fields stay:
# job id -> (policy, fields, shape).  Only the usage cycle's thread uses it.
_running_shapes: dict[int, tuple[Policy, tuple[Any, ...], JobShape]] = {}


def _running_shape(policy: Policy, job: Mapping[str, Any]) -> JobShape:
    alloc = job["alloc"] or {}
    fields = (
        job["partition"],
        tuple((name, tuple(v)) for name, v in alloc.items()),
        job["num_tasks"],
        job["cpus_per_task"],
        job["time_limit"],
        job["gres"],
        job["licenses"],
        job["licenses_alloc"],
    )
    kept = _running_shapes.get(job["id"])
    if kept is not None and kept[0] is policy and kept[1] == fields:
        return kept[2]
    shape = running_shape(policy, job)
    if len(_running_shapes) > _RUNNING_SHAPES_KEPT:
        _running_shapes.clear()
    _running_shapes[job["id"]] = (policy, fields, shape)
    return shape


_RUNNING_SHAPES_KEPT = 65536


def _decay_policy(ctx: selectors.LimitsContext) -> DecayPolicy:
    policy = ctx.policy
    halves: dict[UsageKey, Mapping[str, float]] = {}
    for a in policy.assocs.values():
        if a.tres_decay_half_life:
            halves[a.key] = a.tres_decay_half_life
    for q in policy.qos.values():
        if q.tres_decay_half_life:
            halves[qos_key(q.name)] = q.tres_decay_half_life
    return DecayPolicy(
        half_life=ctx.priority.decay_half_life,
        tres_half_life=halves,
        no_decay=frozenset(qos_key(q.name) for q in policy.qos.values() if q.has("NoDecay")),
        reset_period=ctx.priority.usage_reset_period,
        # The controller's local time (Django runs the process in TIME_ZONE), as
        # slurmctld computes PriorityUsageResetPeriod boundaries with localtime().
        tz=timezone.get_default_timezone(),
    )


def _store_usage(old: Mapping[UsageKey, UsageRecord], new: Mapping[UsageKey, UsageRecord]) -> None:
    """Write the records that changed (a record equal to what is stored is left alone: a
    cycle with nothing to charge or decay writes nothing); new ones are created."""
    creates = []
    updates = []
    for key, rec in new.items():
        before = old.get(key)
        if rec is EMPTY and before is None:
            continue
        tres = {k: v for k, v in rec.tres_seconds.items() if v > 1e-9}
        if before is None:
            creates.append(
                Usage(
                    key=selectors.key_text(key),
                    raw_usage=rec.raw_usage,
                    tres_seconds=tres,
                    wall_seconds=rec.wall_seconds,
                )
            )
        elif (
            rec.raw_usage != before.raw_usage
            or rec.wall_seconds != before.wall_seconds
            or tres != before.tres_seconds
        ):
            updates.append((selectors.key_text(key), rec.raw_usage, tres, rec.wall_seconds))
    if updates:
        _update_usage(updates)
    if creates:
        Usage.objects.bulk_create(creates, ignore_conflicts=True)


def _update_usage(updates: list[tuple[str, float, dict[str, float], float]]) -> None:
    """One UPDATE by key run for every changed record (the ORM compiled one per record)."""
    fields = [Usage._meta.get_field(f) for f in ("raw_usage", "tres_seconds", "wall_seconds")]
    key = Usage._meta.get_field("key")
    quote = connection.ops.quote_name
    sets = ", ".join(f"{quote(f.column)} = %s" for f in fields)
    sql = f"UPDATE {quote(Usage._meta.db_table)} SET {sets} WHERE {quote(key.column)} = %s"  # noqa: S608
    params = [
        [f.get_db_prep_save(v, connection) for f, v in zip(fields, (raw, tres, wall), strict=True)]
        + [key.get_db_prep_save(text, connection)]
        for text, raw, tres, wall in updates
    ]
    with connection.cursor() as cursor:
        cursor.executemany(sql, params)


def usage_set(
    *,
    actor: AbstractBaseUser | None,
    key: UsageKey,
    tres_seconds: Mapping[str, float],
    raw_usage: float = 0.0,
) -> None:
    """Set a usage record directly (tests, and ``sacctmgr load`` of saved usage)."""
    require_admin(actor)
    with transaction.atomic():
        Usage.objects.update_or_create(
            key=selectors.key_text(key), defaults={"tres_seconds": dict(tres_seconds), "raw_usage": raw_usage}
        )
        _bump_version()
        triggers.schedule_after_commit()


__all__ = [
    "Change",
    "apply_pass",
    "ensure_cluster",
    "pass_plugins",
    "pass_priority",
    "record_add",
    "record_delete",
    "record_modify",
    "row_delete",
    "row_save",
    "submit_fields",
    "usage_cycle_run",
    "usage_reload",
    "usage_set",
]
