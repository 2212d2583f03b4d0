"""Who sees and acts on what: the one rule every page, API view, websocket fragment and
CLI command (through the API) applies.

- Staff, and users whose accounting AdminLevel is Operator or Administrator, see and do
  everything.
- A user acts on their own jobs; an account coordinator (``sacctmgr add coordinator``) also
  on the jobs of the accounts they coordinate and every account beneath them.
- Every user sees every job unless slurm.conf's ``PrivateData`` has ``jobs``; then only the
  jobs they may act on (the slurm.conf man page: "prevents users from viewing jobs ...
  belonging to other users", coordinators excepted).
- A job's batch script, environment and output paths are the owner's, its coordinators'
  and staff's only, whatever PrivateData says: Slurm shows a batch script to no one else
  (``scontrol write batch_script`` is refused to other users).
- ``usage``, ``accounts``, ``users``, ``nodes`` and ``reservations`` in PrivateData hide
  the same from regular users: see :func:`hides`.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from django.db.models import Q

from cluster import extensions
from cluster.core.private_data import parse_private_data
from cluster.core.reservations import AccessList
from cluster.models import ClusterConfig

_CACHE_ATTR = "_fsched_viewer"


class Viewer:
    """A user as the rule sees them.  The accounting's roles (coordinated accounts,
    AdminLevel) are read only when a decision needs them: a staff user, or a page without
    PrivateData, costs no query for them."""

    def __init__(self, username: str, staff: bool, private: frozenset[str]) -> None:
        self.username = username
        self.staff = staff
        self.private = private  # slurm.conf's PrivateData words in force

    @cached_property
    def _roles(self) -> extensions.AccountRoles:
        return extensions.account_roles(self.username) if self.username else extensions.AccountRoles()

    @property
    def privileged(self) -> bool:
        """Staff, or an accounting Operator or Administrator: sees and does everything."""
        return self.staff or (bool(self.username) and self._roles.operator)

    @property
    def coordinated(self) -> frozenset[str]:
        """Accounts whose jobs they manage (each coordinated account and its subtree)."""
        return self._roles.coordinated

    @property
    def accounts(self) -> frozenset[str]:
        """Accounts they have an association in."""
        return self._roles.accounts

    def hides(self, what: str) -> bool:
        """Whether PrivateData keeps ``what`` (jobs, usage, nodes...) of others from them."""
        return what in self.private and not self.privileged


def private_data(cfg: ClusterConfig | None = None) -> frozenset[str]:
    """PrivateData of the configuration in force (checked when it was loaded)."""
    cfg = cfg or ClusterConfig.current()
    text = next((v for k, v in cfg.options.items() if k.lower() == "privatedata"), "")
    try:
        return parse_private_data(str(text))
    except ValueError:  # a row written before the load-time check: restrict everything
        return parse_private_data("all")


def viewer(user: Any) -> Viewer:
    """The viewer a request's user is, read once per user object (a request's user lives as
    long as the request)."""
    cached = getattr(user, _CACHE_ATTR, None)
    if cached is not None:
        return cached
    authenticated = user is not None and user.is_authenticated
    out = Viewer(
        user.get_username() if authenticated else "", authenticated and bool(user.is_staff), private_data()
    )
    if user is not None:
        setattr(user, _CACHE_ATTR, out)
    return out


def privileged(user: Any) -> bool:
    """Staff, or an accounting Operator or Administrator: Slurm's operator rights (a
    negative nice, an administrator's hold, raising a time limit...)."""
    return viewer(user).privileged


def manageable_jobs(user: Any) -> Q:
    """The jobs the user may act on (cancel, hold...) and see the private fields of."""
    v = viewer(user)
    if v.privileged:
        return Q()
    q = Q(user=v.username) if v.username else Q(pk__in=[])
    if v.coordinated:
        q |= Q(account__in=sorted(v.coordinated))
    return q


def visible_jobs(user: Any) -> Q:
    """The jobs the user may see at all: every job, or with PrivateData=jobs their own
    (and their coordinated accounts')."""
    return manageable_jobs(user) if viewer(user).hides("jobs") else Q()


def may_manage(user: Any, job: Any) -> bool:
    """:func:`manageable_jobs` for one job already read."""
    v = viewer(user)
    if v.staff or (bool(v.username) and job.user == v.username):
        return True
    return v.privileged or job.account in v.coordinated


def may_see(user: Any, job: Any) -> bool:
    return not viewer(user).hides("jobs") or may_manage(user, job)


def hides(user: Any, what: str) -> bool:
    return viewer(user).hides(what)


def may_see_reservation(user: Any, users: str, accounts: str) -> bool:
    """PrivateData=reservations: a regular user sees the reservations they may use only
    (their name in Users=, or an account of theirs in Accounts=)."""
    v = viewer(user)
    if not v.hides("reservations"):
        return True
    try:
        by_user, by_account = AccessList.parse(users), AccessList.parse(accounts, "accounts")
    except ValueError:
        return False
    return (bool(by_user) and by_user.admits(v.username)) or (
        bool(by_account) and any(by_account.admits(a) for a in v.accounts)
    )
