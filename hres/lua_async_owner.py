"""Which process runs an asynchronous pre-run (hres/lua), as other processes can tell.

The marker of a running asynchronous pre-run (``hres.JobPluginRun.prep``) names the
process that runs it by a token of its own.  On PostgreSQL that process holds an advisory
lock keyed by its token for as long as it lives, on a connection of its own taken before
it writes its first marker; its end (exit, crash, kill) closes the connection and frees the
lock.  So the lost-job recovery of another process (:func:`hres.lua_async.recover_lost`)
leaves alone a job whose pre-run is alive elsewhere, with no window between the pass that
wrote the marker and the thread that runs the call.  With SQLite there is one controller
process: a marker it did not write was left by one that stopped.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import uuid

from django.db import DEFAULT_DB_ALIAS, DatabaseError, connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper

log = logging.getLogger("fsched.hres.lua")

_guard = threading.Lock()
_held: BaseDatabaseWrapper | None = None
_pid = 0
_token = ""


def token() -> str:
    """This process's token.  A forked child (a prefork pool's process) gets its own and
    drops its parent's connection without closing it: closing would end the parent's
    session, and its lock with it."""
    global _held, _pid, _token
    with _guard:
        if _pid != os.getpid():
            _pid, _token, _held = os.getpid(), uuid.uuid4().hex, None
        return _token


def lock_key(token: str) -> int:
    """A positive 64-bit advisory lock key from a token (60 bits of its hex)."""
    return int(token[:15], 16)


def _fine(conn: BaseDatabaseWrapper) -> bool:
    try:
        with conn.cursor() as cursor:
            cursor.execute("SELECT 1")
        return True
    except DatabaseError:
        return False


def hold() -> str:
    """This process's token, its lock held (taken now if it is not, or was lost with its
    connection, e.g. a restart of PostgreSQL)."""
    global _held  # noqa: PLW0603 - one per process
    mine = token()
    if connection.vendor != "postgresql":
        return mine
    with _guard:
        if _held is not None and _fine(_held):
            return mine
        if _held is not None:
            with contextlib.suppress(DatabaseError):
                _held.close()
        held = connections.create_connection(DEFAULT_DB_ALIAS)
        held.inc_thread_sharing()  # taken by whichever thread starts a pre-run first
        with held.cursor() as cursor:
            # Never waits: the key is this process's alone (a random token).
            cursor.execute("SELECT pg_try_advisory_lock(%s)", [lock_key(mine)])
            if not cursor.fetchone()[0]:
                held.close()
                raise DatabaseError(f"the lock of this process's token {mine} is held by another")
        _held = held
    return mine


def alive_elsewhere(owner: str) -> bool:
    """Whether another process, alive, holds the lock of the token ``owner``."""
    if not owner or owner == token() or connection.vendor != "postgresql":
        return False
    key = lock_key(owner)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted"
            " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            " AND classid::bigint = %s AND objid::bigint = %s AND objsubid = 1)",
            [key >> 32, key & 0xFFFFFFFF],
        )
        return bool(cursor.fetchone()[0])


def release() -> None:
    """The lock let go, its connection closed (tests; a process's end does it anyway)."""
    global _held
    with _guard:
        held, _held = _held, None
    if held is not None:
        with contextlib.suppress(DatabaseError):
            held.close()
