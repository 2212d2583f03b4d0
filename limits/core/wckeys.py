"""The WCKey a job is charged to (Slurm's TrackWCKey and AccountingStorageEnforce=wckeys,
as slurmctld applies them when it creates a job): pure, no Django.

* Without TrackWCKey the job keeps what it asked for (``--wckey``), checked by nothing.
* With it, a job that names none gets its user's default WCKey, marked with a leading
  ``*`` as Slurm marks a default it applied (``*w1``); a user without a default gets ``*``
  alone, unless wckeys are enforced, which refuses the job.
* With ``AccountingStorageEnforce=wckeys`` (which sets TrackWCKey) a job naming a WCKey
  its user does not have is refused with Slurm's "Invalid wckey specification".

WCKeys are stored lower case, as slurmctld lowers them, and a ``*`` of the user's own is
refused (Slurm keeps that mark for the defaults it applies).
"""

from __future__ import annotations

from collections.abc import Mapping

from limits.core.policy import User

INVALID_WCKEY = "Invalid wckey specification"
WCKEY_MAX = 256


class WCKeyError(ValueError):
    """Why a job's WCKey is refused: Slurm's words on the first line, the detail after."""


def job_wckey(
    users: Mapping[str, User], user: str, asked: str, *, track: bool, enforce: bool
) -> str:
    """The WCKey to store on ``user``'s job that asked for ``asked`` ('' for none)."""
    asked = asked.strip().lower()
    if asked.startswith("*") or len(asked) > WCKEY_MAX:
        raise WCKeyError(f"{INVALID_WCKEY}\n{asked[:64]!r} is not a wckey name")
    if not track:
        return asked
    record = users.get(user)
    if not asked:
        if record is not None and record.default_wckey:
            return f"*{record.default_wckey}"
        if not enforce:
            return "*"
        raise WCKeyError(f"{INVALID_WCKEY}\nno --wckey given and user {user} has no default wckey")
    if enforce and (record is None or asked not in record.wckeys):
        raise WCKeyError(f"{INVALID_WCKEY}\n{asked!r} is not one of user {user}'s wckeys")
    return asked


def track_wckey(track_option: object, *, enforce_wckeys: bool) -> bool:
    """slurm.conf's TrackWCKey (a boolean), which AccountingStorageEnforce=wckeys also sets."""
    return enforce_wckeys or str(track_option or "").strip().lower() in ("1", "yes", "true", "on")


__all__ = ["INVALID_WCKEY", "WCKeyError", "job_wckey", "track_wckey"]
