"""The check a Lua script passes before it is loaded.

Most plugin functions run as root or as SlurmUser, so a script that another account can
change is a way to run code as them.  A script is refused when anyone but root, the
controller's own account or SlurmUser can write it or any directory above it: its owner
is one of them, and the group or everyone may write only where the group's members are
all of them too.  A directory owned by root with the sticky bit (``/tmp``) is no way in:
others may create files in it but not replace this one.  The refusal names the file and
the offending mode; it is never a silent fallback.
"""

from __future__ import annotations

import contextlib
import grp
import os
import pwd
import stat
from collections.abc import Iterable
from pathlib import Path


class ScriptRefused(Exception):
    """A script (or a directory above it) others may write; ``str()`` says which and why."""


def trusted_uids(slurm_user: str | None = None) -> frozenset[int]:
    """root, the account this process runs as, and SlurmUser's (a name or a number)."""
    uids = {0, os.geteuid()}
    if slurm_user:
        with contextlib.suppress(KeyError):  # an unknown SlurmUser trusts nobody more
            uids.add(int(slurm_user) if slurm_user.isdigit() else pwd.getpwnam(slurm_user).pw_uid)
    return frozenset(uids)


def _group_members(gid: int) -> set[int] | None:
    """Every account in group ``gid`` (listed members and those whose primary group it
    is); None when the group is unknown, which is treated as holding anyone."""
    try:
        group = grp.getgrgid(gid)
    except KeyError:
        return None
    members: set[int] = set()
    for name in group.gr_mem:
        try:
            members.add(pwd.getpwnam(name).pw_uid)
        except KeyError:
            return None
    members.update(p.pw_uid for p in pwd.getpwall() if p.pw_gid == gid)
    return members


def _who_else_writes(st: os.stat_result, trusted: frozenset[int], *, directory: bool) -> str | None:
    """Why others can write this file or directory, or None when only the trusted can."""
    mode = stat.S_IMODE(st.st_mode)
    if directory and st.st_mode & stat.S_ISVTX and st.st_uid == 0:
        # Sticky and root's: only a file's owner may rename or remove it (like /tmp).
        return None
    if st.st_uid not in trusted:
        return f"owned by uid {st.st_uid}"
    if mode & stat.S_IWOTH:
        return "writable by others"
    if mode & stat.S_IWGRP:
        members = _group_members(st.st_gid)
        if members is None or not members <= trusted:
            return f"writable by group {st.st_gid}"
    return None


def _directories(path: Path) -> Iterable[Path]:
    yield from path.parents


def check_script(path: str | os.PathLike[str], trusted: frozenset[int] | None = None) -> Path:
    """The script's path once it and every directory above it (as given and as resolved
    through symbolic links) may be written only by ``trusted`` accounts; else
    :class:`ScriptRefused`.  ``OSError`` (a missing file) passes through."""
    trusted = trusted if trusted is not None else trusted_uids()
    given = Path(os.path.abspath(path))
    real = Path(os.path.realpath(given))
    st = os.stat(real)
    if not stat.S_ISREG(st.st_mode):
        raise ScriptRefused(f"{given}: not a regular file")
    why = _who_else_writes(st, trusted, directory=False)
    if why is not None:
        raise ScriptRefused(f"{given} is {why} (mode {stat.S_IMODE(st.st_mode):04o}): refused")
    seen: set[Path] = set()
    for directory in (*_directories(given), *_directories(real)):
        if directory in seen:
            continue
        seen.add(directory)
        dst = os.stat(directory)
        why = _who_else_writes(dst, trusted, directory=True)
        if why is not None:
            raise ScriptRefused(
                f"{given}: its directory {directory} is {why} (mode {stat.S_IMODE(dst.st_mode):04o}): refused"
            )
    return given
