"""slurm.conf's PrivateData for the accounting's views (the limits pages and ``sacctmgr
show``, ``sshare`` through the API), after the slurm.conf man page: ``accounts`` keeps a
regular user to the accounts they belong to or coordinate, ``users`` to their own user
record, ``usage`` to their own usage.  The rule itself is cluster.visibility's."""

from __future__ import annotations

from typing import Any

from cluster import visibility


def show_rows(user: Any, entity: str, rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """``sacctmgr show <entity>`` rows (columns ``Account``, ``User``) the user may see."""
    viewer = visibility.viewer(user)
    if entity in ("account", "association") and viewer.hides("accounts"):
        mine = viewer.accounts | viewer.coordinated
        rows = [r for r in rows if r.get("Account") in mine]
    if entity in ("user", "association") and viewer.hides("users"):
        rows = [r for r in rows if r.get("User") in ("", None, viewer.username)]
    return rows


def tree_rows(user: Any, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The limits page's association rows (keys ``account``, ``user``) the user may see:
    ``accounts`` hides accounts not theirs, ``usage`` and ``users`` other users' rows
    (their usage), except in the accounts they coordinate."""
    viewer = visibility.viewer(user)
    if viewer.hides("accounts"):
        mine = viewer.accounts | viewer.coordinated
        rows = [r for r in rows if r["account"] in mine]
    if viewer.hides("usage") or viewer.hides("users"):
        rows = [
            r
            for r in rows
            if not r["user"] or r["user"] == viewer.username or r["account"] in viewer.coordinated
        ]
    return rows


def assoc_mgr_records(user: Any, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``scontrol show assoc_mgr``'s associations (keys ``account``, ``user``) the user may
    see: as slurmctld's assoc_mgr filter, ``usage`` keeps a regular user to their own user
    associations and those of the accounts they coordinate; ``users`` alone hides nothing
    here (it filters the user records, which fsched does not print)."""
    viewer = visibility.viewer(user)
    if not viewer.hides("usage"):
        return records
    mine = viewer.username
    return [r for r in records if (r["user"] and r["user"] == mine) or r["account"] in viewer.coordinated]
