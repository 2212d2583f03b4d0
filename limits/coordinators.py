"""Account coordinators (``sacctmgr add|remove coordinator``) and the roles the cluster core
asks of the accounting: whom a login user coordinates, whether they are an operator.

A coordinator of an account manages the jobs of that account and of every account beneath
it (sacctmgr's "To Account(s) and all sub-accounts"), and sees what ``PrivateData`` hides
from other users there.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.contrib.auth.base_user import AbstractBaseUser

from cluster.extensions import AccountRoles
from cluster.services.errors import ServiceError
from limits.models import Account, Association, Cluster, Coordinator, LimitsUser
from limits.services import Change, _run, _subtree, accounting_cluster, parse_where, require_admin

_NEED = "You need to specify a user list and account list here."
# AdminLevels that see past PrivateData (the slurm.conf man page: operators and admins).
_OPERATOR_LEVELS = ("Operator", "Administrator")


def _words(values: Sequence[str]) -> list[str]:
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


def coordinator_add(
    *, actor: AbstractBaseUser | None, names: Sequence[str], options: Sequence[str], commit: bool = True
) -> Change:
    """``sacctmgr add coordinator account=A names=U[,V]``."""
    require_admin(actor)
    cond = parse_where(options)
    unknown = sorted(set(cond) - {"account", "name", "user"})
    if unknown:
        raise ServiceError(f"Unknown option: {unknown[0]}")
    users = _words([*names, *cond.get("name", []), *cond.get("user", [])])
    accounts = _words(cond.get("account", []))
    if not users or not accounts:
        raise ServiceError(_NEED)
    found_users = {u.name: u for u in LimitsUser.objects.filter(name__in=users)}
    found_accounts = {a.name: a for a in Account.objects.filter(name__in=accounts)}
    if missing := [u for u in users if u not in found_users]:
        raise ServiceError(f"User(s) {','.join(missing)} do not exist")
    if missing := [a for a in accounts if a not in found_accounts]:
        raise ServiceError(f"Account(s) {','.join(missing)} do not exist")

    def body(change: Change) -> None:
        for user in users:
            for account in accounts:
                _, new = Coordinator.objects.get_or_create(
                    user=found_users[user], account=found_accounts[account]
                )
                change.count += new
        if not change.count:
            raise ServiceError(" Nothing new added.")
        change.lines.append(" Adding Coordinator User(s)")
        change.lines.extend(f"  {u}" for u in users)
        change.lines.append(" To Account(s) and all sub-accounts")
        change.lines.extend(f"  {a}" for a in accounts)

    return _run(commit, body)


def coordinator_delete(
    *, actor: AbstractBaseUser | None, where: Sequence[str], commit: bool = True
) -> Change:
    """``sacctmgr remove coordinator account=A names=U``; without ``account=`` the users stop
    coordinating every account."""
    require_admin(actor)
    cond = parse_where(where)
    users = _words([*cond.get("name", []), *cond.get("user", [])])
    accounts = _words(cond.get("account", []))
    if not users:
        raise ServiceError(_NEED)
    rows = Coordinator.objects.filter(user__name__in=users).select_related("user", "account")
    if accounts:
        rows = rows.filter(account__name__in=accounts)

    def body(change: Change) -> None:
        gone = list(rows)
        if not gone:
            raise ServiceError(" Nothing deleted")
        change.lines.append(" Removed Coordinators (sub accounts not listed)")
        for row in gone:
            change.lines.append(f"  U = {row.user.name:<9} A = {row.account.name}")
            row.delete()
            change.count += 1

    return _run(commit, body)


def coordinator_rows() -> list[dict[str, str]]:
    """``sacctmgr show coordinator``-like rows (fsched's: Slurm lists them with ``show user
    withcoord``)."""
    return [
        {"User": c.user.name, "Account": c.account.name}
        for c in Coordinator.objects.select_related("user", "account")
    ]


def is_administrator(username: str) -> bool:
    """AdminLevel=Administrator (sacctmgr's super user): what ``sacctmgr dump`` asks for."""
    return LimitsUser.objects.filter(name=username, admin_level="Administrator").exists()


def account_roles(username: str) -> AccountRoles:
    """The accounts ``username`` coordinates (with their sub-accounts on this cluster) and
    whether their AdminLevel lets them see past PrivateData."""
    level = LimitsUser.objects.filter(name=username).values_list("admin_level", flat=True).first()
    direct = list(Coordinator.objects.filter(user__name=username).values_list("account__name", flat=True))
    coordinated: set[str] = set(direct)
    cluster = Cluster.objects.filter(name=accounting_cluster()).first()
    if direct and cluster is not None:
        coordinated |= _subtree(cluster, direct)
    member = Association.objects.filter(user__name=username).values_list("account__name", flat=True)
    return AccountRoles(frozenset(coordinated), level in _OPERATOR_LEVELS, frozenset(member))
