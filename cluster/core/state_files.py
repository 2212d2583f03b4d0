"""The state directory kept private: 0700 for directories, 0600 for files, whatever the umask.

The directory holds the database (password hashes, job scripts and environments), the
session signing key and the cluster key: any of them readable by another local user is a
way to root.  Standard library only, so the launchers (``config.demo``) can use it before
Django is set up.  Tightening an installation made by an older version is logged as a
WARNING naming each path, so an administrator learns that it had been exposed.

The settings only read the keys (``read_key``); ``manage.py fsched_bootstrap`` creates the
directory and the keys (``create_keys``).  Keys made as a side effect of loading the
settings would be made wherever they were loaded (a linter's temporary directory, a second
server host), and a host with a key of its own refuses the other hosts' sessions and
agents without saying why; a host without one says so when it starts instead.
"""

from __future__ import annotations

import logging
import os
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path

log = logging.getLogger("fsched.state")

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
# The keys kept in the state directory when the environment does not give them: the file,
# the variable that gives the key instead, and the random bytes fsched_bootstrap draws.
KEYS = {"secret_key": ("FSCHED_SECRET_KEY", 50), "agent_key": ("FSCHED_AGENT_KEY", 32)}
KEY_FILES = tuple(KEYS)


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


def create_private_file(path: Path, text: str, *, owner: tuple[int, int] | None = None) -> bool:
    """Write ``text`` to a new ``path`` created 0600, never visible half-written or with
    looser modes; False if the path already exists (another process won the race).

    The text goes to a temporary file created 0600 (``os.open``: no write-then-chmod
    window), and is linked into place, which fails rather than replaces.  ``owner``
    (uid, gid) is given to the open file, before it has a name anyone could swap.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, PRIVATE_FILE)
    try:
        if owner is not None:
            os.fchown(fd, *owner)
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


def read_key(path: Path) -> str:
    """The key in ``path``, "" when there is none yet.  Reads only: the settings call this
    when they are imported."""
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        return ""
    except PermissionError as exc:
        raise _unusable(path.parent, exc) from exc


def missing_keys(state_dir: Path, keys: Mapping[str, str]) -> str:
    """What a process that needs the keys says when some are empty (``keys``: the file's
    name -> the key the settings hold), or "" when none is."""
    lacking = []
    for name, key in keys.items():
        if not key:
            path = state_dir / name
            state = "is empty" if path.exists() else "does not exist"
            lacking.append(f"{KEYS[name][0]} is not set and {path} {state}")
    if not lacking:
        return ""
    them = "them" if len(lacking) > 1 else "it"
    return f"{'; '.join(lacking)}: run `manage.py fsched_bootstrap` to create {them}"


def create_keys(state_dir: Path, environ: Mapping[str, str] = os.environ) -> list[Path]:
    """Make the state directory private and create in it each key the environment does not
    give (an existing key is kept); the files created."""
    secure_state_dir(state_dir)
    owner = _service_owner(state_dir)
    created = []
    try:
        for name, (variable, nbytes) in KEYS.items():
            if not environ.get(variable) and create_private_file(
                state_dir / name, secrets.token_urlsafe(nbytes), owner=owner
            ):
                created.append(state_dir / name)
    except PermissionError as exc:
        raise _unusable(state_dir, exc) from exc
    return created


def _service_owner(state_dir: Path) -> tuple[int, int] | None:
    """Root bootstrapping the service account's directory makes its keys that account's:
    the server runs as it, and a key it cannot read is one it does not have."""
    if os.geteuid() != 0:
        return None
    st = state_dir.stat()
    return None if st.st_uid == 0 else (st.st_uid, st.st_gid)


def secure_state_dir(path: Path, *, create: bool = True) -> Path:
    """Make the state directory private, and the keys fsched keeps in it.  Without
    ``create`` a missing directory stays missing: every Django start tightens
    (``cluster.apps``), only the bootstrap creates (``create_keys``)."""
    try:
        if not create and not path.exists():
            return path
        private_dir(path)
        for name in KEY_FILES:
            tighten(path / name, PRIVATE_FILE)
    except PermissionError as exc:
        raise _unusable(path, exc) from exc
    return path


def _unusable(path: Path, exc: OSError) -> StateDirUnusable:
    """Typically manage.py run by an administrator's own account on a state directory that
    belongs to the service account (0700 by design)."""
    try:
        owner = path.owner()
    except (OSError, KeyError):
        owner = "its owner"
    who = "root" if owner == "root" else f"{owner} or root"
    return StateDirUnusable(
        f"FSCHED_STATE_DIR {path} is not usable by uid {os.geteuid()} ({exc.strerror}): "
        f"run this as {who}, or set FSCHED_STATE_DIR"
    )
