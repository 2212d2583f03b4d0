"""``sacctmgr dump`` / ``sacctmgr load``: the cluster file (Slurm's format).

    Cluster - 'demo'
    QOS - 'high':Priority=10:Flags=DenyOnLimit
    Parent - 'root'
    Account - 'science':Description='science':Organization='science':GrpTRESMins=cpu=100000
    Parent - 'science'
    User - 'bob':DefaultAccount='science':MaxJobs=4

``QOS -`` lines are fsched's addition (Slurm keeps QOS out of the file); they come before
the accounts so the associations' ``QOS=`` lists can name them.  Loading adds what is
missing and sets the limits written on what exists, all in one transaction: a bad line
refuses the whole file with its line number.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from cluster.services.errors import ServiceError
from limits import services
from limits.core import dump_syntax
from limits.core.policy import ROOT
from limits.models import (
    ASSOC_LIMIT_FIELDS,
    QOS,
    QOS_LIMIT_FIELDS,
    Account,
    Association,
    Cluster,
    LimitsUser,
    WCKey,
)

_WORDS = {"tres": "TRES", "qos": "QOS"}


def option_name(column: str) -> str:
    """``grp_tres_mins`` -> ``GrpTRESMins``."""
    return "".join(_WORDS.get(w, w.capitalize()) for w in column.split("_"))


def _limits(row: object, columns: tuple[str, ...]) -> list[str]:
    out = []
    for column in columns:
        value = getattr(row, column)
        if value not in (None, ""):
            out.append(f"{option_name(column)}={value}")
    return out


def _q(text: str) -> str:
    return "'" + text.replace("'", "") + "'"


def dump_text(*, cluster: str | None = None) -> str:
    name = cluster or services.accounting_cluster()
    c = Cluster.objects.filter(name=name).first()
    if c is None:
        raise ServiceError(f"Cluster {name} does not exist")
    lines = [
        "# fsched cluster file (sacctmgr dump); load it with: sacctmgr load file=<this file>",
        f"Cluster - {_q(name)}",
    ]
    for q in QOS.objects.order_by("name"):
        opts = [f"Priority={q.priority}"]
        if q.flags:
            opts.append(f"Flags={q.flags}")
        if q.usage_factor != 1.0:
            opts.append(f"UsageFactor={q.usage_factor}")
        if q.limit_factor is not None:
            opts.append(f"LimitFactor={q.limit_factor}")
        if q.grace_time:
            opts.append(f"GraceTime={q.grace_time}")
        if q.tres_decay_half_life:
            opts.append(f"TresDecayHalfLife={q.tres_decay_half_life}")
        lines.append(":".join([f"QOS - {_q(q.name)}", *opts, *_limits(q, QOS_LIMIT_FIELDS)]))
    assocs = list(
        Association.objects.filter(cluster=c).select_related("account", "user", "parent", "default_qos")
    )
    accounts = {a.account.name: a for a in assocs if not a.user_id}
    users: dict[str, list[Association]] = {}
    for a in assocs:
        if a.user_id:
            users.setdefault(a.account.name, []).append(a)

    wckeys: dict[int, list[str]] = {}
    for user_id, key in WCKey.objects.filter(cluster=c).values_list("user_id", "name"):
        wckeys.setdefault(user_id, []).append(key)

    def assoc_opts(a: Association) -> list[str]:
        opts = [f"Fairshare={a.fairshare}"]
        if a.qos is not None:
            opts.append(f"QOS={_q(a.qos)}")
        if a.default_qos_id:
            opts.append(f"DefaultQOS={_q(a.default_qos.name)}")
        if a.tres_decay_half_life:
            opts.append(f"TresDecayHalfLife={a.tres_decay_half_life}")
        return opts + _limits(a, ASSOC_LIMIT_FIELDS)

    def walk(parent: str) -> None:
        children = sorted(
            (
                a
                for a in accounts.values()
                if (a.parent.name if a.parent_id else ROOT) == parent and a.account.name != ROOT
            ),
            key=lambda a: a.account.name,
        )
        members = sorted(users.get(parent, []), key=lambda a: (a.user.name, a.partition))
        if not children and not members:
            return
        lines.append(f"Parent - {_q(parent)}")
        for u in members:
            head = [f"User - {_q(u.user.name)}"]
            if u.user.default_account_id:
                head.append(f"DefaultAccount={_q(u.user.default_account.name)}")
            if u.user.default_wckey:
                head.append(f"DefaultWCKey={_q(u.user.default_wckey)}")
            if keys := wckeys.get(u.user_id):
                head.append(f"WCKeys={_q(','.join(sorted(keys)))}")
            if u.partition:
                head.append(f"Partition={_q(u.partition)}")
            lines.append(":".join(head + assoc_opts(u)))
        for a in children:
            head = [f"Account - {_q(a.account.name)}", f"Description={_q(a.account.description)}"]
            head.append(f"Organization={_q(a.account.organization)}")
            lines.append(":".join(head + assoc_opts(a)))
        for a in children:
            walk(a.account.name)

    root = accounts.get(ROOT)
    if root is not None and (opts := _limits(root, ASSOC_LIMIT_FIELDS)):
        lines.append(":".join(["Account - 'root'", *opts]))
    walk(ROOT)
    return "\n".join(lines) + "\n"


def load_text(*, actor: AbstractBaseUser | None, text: str, commit: bool = True) -> services.Change:
    """Apply a cluster file; any bad line refuses the whole file (``line N: why``)."""
    services.require_admin(actor)
    change = services.Change(committed=commit)
    parent = ROOT
    cluster = ""
    try:
        with transaction.atomic():
            for number, raw in enumerate(text.splitlines(), 1):
                if not raw.strip() or raw.lstrip().startswith("#"):
                    continue
                m = dump_syntax.LINE.match(raw)
                if m is None:
                    raise ServiceError(
                        f"line {number}: not a Cluster/QOS/Parent/Account/User line: {raw.strip()}"
                    )
                kind, name, rest = m.group(1).lower(), m.group(2), dump_syntax.split_options(m.group(3))
                try:
                    cluster, parent = _load_line(
                        actor, change, kind, name, rest, cluster=cluster, parent=parent
                    )
                except ServiceError as exc:
                    raise ServiceError(f"line {number}: {exc}") from None
            if not commit:
                raise services.Rollback
    except services.Rollback:
        pass
    return change


def _load_line(  # noqa: PLR0917 - one call site, read alongside
    actor, change, kind: str, name: str, rest: list[str], cluster: str, parent: str
) -> tuple[str, str]:
    if kind == "cluster":
        services.ensure_cluster(name)
        change.lines.append(f" Cluster {name}")
        return name, ROOT
    if not cluster:
        raise ServiceError("the file must start with a Cluster line")
    if kind == "parent":
        if not Account.objects.filter(name=name).exists():
            raise ServiceError(f"parent account {name!r} has not been created")
        return cluster, name
    if kind == "qos":
        if QOS.objects.filter(name=name).exists():
            if rest:
                services.record_modify(actor=actor, entity="qos", where=[f"name={name}"], options=rest)
        else:
            services.record_add(actor=actor, entity="qos", names=[name], options=rest)
        change.lines.append(f"  QOS {name}")
        change.count += 1
        return cluster, parent
    if kind == "account":
        limits = [r for r in rest if r.split("=", 1)[0].lower() not in ("description", "organization")]
        if (
            name == ROOT
            or Association.objects.filter(cluster__name=cluster, account__name=name, user=None).exists()
        ):
            if limits:
                services.record_modify(
                    actor=actor,
                    entity="account",
                    where=[f"name={name}", f"cluster={cluster}"],
                    options=limits,
                )
        else:
            services.record_add(
                actor=actor,
                entity="account",
                names=[name],
                options=[*rest, f"Parent={parent}", f"Cluster={cluster}"],
            )
        change.lines.append(f"  Account {name} (parent {parent})")
        change.count += 1
        return cluster, parent
    # user
    head = [r for r in rest if r.split("=", 1)[0].lower() in ("defaultaccount", "partition", "adminlevel")]
    keys = [r for r in rest if r.split("=", 1)[0].lower() in ("defaultwckey", "wckeys", "wckey")]
    limits = [r for r in rest if r not in head and r not in keys]
    partition = next((r.split("=", 1)[1] for r in head if r.lower().startswith("partition=")), "")
    exists = Association.objects.filter(
        cluster__name=cluster, account__name=parent, user__name=name, partition=partition
    ).exists()
    if exists:
        if limits:
            where = [f"name={name}", f"account={parent}", f"cluster={cluster}", f"partition={partition}"]
            services.record_modify(actor=actor, entity="user", where=where, options=limits)
    else:
        services.record_add(
            actor=actor,
            entity="user",
            names=[name],
            options=[f"Account={parent}", f"Cluster={cluster}", *head, *keys, *limits],
        )
        keys = []
    if keys and _wckeys_missing(name, cluster, keys):
        services.record_add(actor=actor, entity="user", names=[name], options=[f"Cluster={cluster}", *keys])
    default = next((r.split("=", 1)[1] for r in head if r.lower().startswith("defaultaccount=")), "")
    if (
        default
        and LimitsUser.objects.filter(name=name).exists()
        and Account.objects.filter(name=default).exists()
    ):
        user = LimitsUser.objects.get(name=name)
        if Association.objects.filter(user=user, account__name=default).exists():
            user.default_account = Account.objects.get(name=default)
            user.save(update_fields=["default_account"])
    change.lines.append(f"  User {name} (account {parent})")
    change.count += 1
    return cluster, parent


def _wckeys_missing(user: str, cluster: str, options: list[str]) -> bool:
    """Whether a user line's ``WCKeys=``/``DefaultWCKey=`` add anything to an existing
    user (sacctmgr add refuses a change that adds nothing)."""
    wanted = {
        key.strip().lower() for option in options for key in option.split("=", 1)[1].split(",") if key.strip()
    }
    have = set(WCKey.objects.filter(user__name=user, cluster__name=cluster).values_list("name", flat=True))
    default = next(
        (o.split("=", 1)[1].strip().lower() for o in options if o.lower().startswith("defaultwckey=")), ""
    )
    current = LimitsUser.objects.filter(name=user).values_list("default_wckey", flat=True).first()
    return bool(wanted - have) or (bool(default) and default != current)
