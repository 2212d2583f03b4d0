"""The state directory kept private: 0700 for directories, 0600 for files, whatever the umask.

The directory holds the database (password hashes, job scripts and environments), the
session signing key and the cluster key: any of them readable by another local user is a
way to root.  Standard library only, so the launchers (``config.demo``) can use it before
Django is set up.  Tightening an installation made by an older version is logged as a
WARNING naming each path, so an administrator learns that it had been exposed.
"""

from __future__ import annotations

import logging
import os
import secrets
import stat
from pathlib import Path

log = logging.getLogger("fsched.state")

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
# The files settings and the SQLite backend keep in the state directory.
KEY_FILES = ("secret_key", "agent_key")


class StateDirUnusable(ValueError):
    """The state directory cannot be used by this process: said in one line, not a traceback."""


def tighten(path: Path, mode: int) -> bool:
    """Clear the group and other bits of ``path`` beyond ``mode``; True if it changed.

    A missing path is no change: there is nothing to expose.  Only bits are taken away,
    so a file an administrator made stricter stays so.
    """
    try:
        current = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return False
    if current & ~mode == 0:
        return False
    try:
        path.chmod(current & mode)
    except PermissionError:
        # Not this process's file: it may still only need to read it, so it goes on, but
        # the administrator must hear that the exposure stays.
        log.error(
            "%s is mode %04o, readable by other users, and uid %d may not change it: "
            "run chmod %04o %s as its owner",
            path,
            current,
            os.geteuid(),
            current & mode,
            path,
        )
        return False
    log.warning("%s was mode %04o, readable by other users: changed to %04o", path, current, current & mode)
    return True


def private_dir(path: Path) -> Path:
    """Create ``path`` (and missing parents) with the leaf 0700, or tighten it if it exists.

    A sticky directory (``/tmp``) is shared by design: refused rather than closed to
    everyone else.
    """
    path.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    if path.stat().st_mode & stat.S_ISVTX:
        raise StateDirUnusable(
            f"{path} is a shared directory (sticky bit set): give fsched a directory of its own"
        )
    tighten(path, PRIVATE_DIR)
    return path


def create_private_file(path: Path, text: str) -> bool:
    """Write ``text`` to a new ``path`` created 0600, never visible half-written or with
    looser modes; False if the path already exists (another process won the race).

    The text goes to a temporary file created 0600 (``os.open``: no write-then-chmod
    window), and is linked into place, which fails rather than replaces.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, PRIVATE_FILE)
    try:
        with os.fdopen(fd, "w") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        return True
    finally:
        tmp.unlink(missing_ok=True)


def read_or_create_key(path: Path, nbytes: int = 32) -> str:
    """The key in ``path``, generated (url-safe, ``nbytes`` random bytes) on first use."""
    if not path.exists():
        create_private_file(path, secrets.token_urlsafe(nbytes))
    tighten(path, PRIVATE_FILE)
    return path.read_text().strip()


def secure_state_dir(path: Path) -> Path:
    """Make the state directory private, and the files fsched keeps in it: the start of
    every process that uses it (settings import) runs this."""
    try:
        private_dir(path)
        for name in KEY_FILES:
            tighten(path / name, PRIVATE_FILE)
    except PermissionError as exc:
        # Typically manage.py run by an administrator's own account on a state directory
        # that belongs to the service account (0700 by design).
        try:
            owner = path.owner()
        except (OSError, KeyError):
            owner = "its owner"
        who = "root" if owner == "root" else f"{owner} or root"
        raise StateDirUnusable(
            f"FSCHED_STATE_DIR {path} is not usable by uid {os.geteuid()} ({exc.strerror}): "
            f"run this as {who}, or set FSCHED_STATE_DIR"
        ) from exc
    return path
