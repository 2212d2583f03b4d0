"""SQLite with one write gate (the embedded mode's database backend).

SQLite lets one writer at a time hold the database.  A writer that finds it locked waits
in SQLite's busy handler, which sleeps in growing steps (1, 2, 5, 10 ... 100 ms) and so
keeps waiting long after the lock is free.  In the embedded controller the writers are
threads of the server process (the scheduler cycle, agent messages, API requests) and
its HTTP helper processes (config.helpers): a gate taken before every write transaction
and every write statement outside one hands the database over at once instead.  The gate
is a lock among the process's threads and, for a database in a file, an ``flock`` of
``<database>.gate`` among processes (the kernel wakes the next waiter when it is
released).  A process that does not use this backend still meets the busy handler,
which is correct, just slower.

The database file is created 0600 before SQLite opens it: SQLite would create it 0644
under the usual umask, and it gives its -wal, -shm and -journal files the database's own
mode, so they come out private too.  A database left readable by an older version is
tightened on connect (``cluster.core.state_files.tighten`` logs it).  A missing directory is
created 0700: on a new installation ``manage.py migrate`` comes before the bootstrap.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import threading
from pathlib import Path
from typing import Any

from django.db.backends.sqlite3 import base

from cluster.core.state_files import PRIVATE_FILE, private_dir, tighten
from config.rollbacks import RollbackListeners

_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")


class _Gate:
    """Reentrant for the thread holding it, like the RLock it wraps; the file lock is
    taken on the outermost acquire only."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._depth = 0
        self._fd: int | None = None
        self._path = ""

    def bind(self, database: str) -> None:
        """Share the gate with other processes using this database file."""
        if self._fd is not None or not in_file(database):
            return
        with self._lock:
            if self._fd is None:
                self._path = f"{database}.gate"
                self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)

    def acquire(self) -> None:
        self._lock.acquire()
        if self._depth == 0 and self._fd is not None:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX)
            except BaseException:
                self._lock.release()
                raise
        self._depth += 1

    def release(self) -> None:
        self._depth -= 1
        if self._depth == 0 and self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        self._lock.release()

    def __enter__(self) -> None:
        self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


_WRITE_GATE = _Gate()
_SIDE_FILES = ("-wal", "-shm", "-journal", ".gate")


def in_file(database: str) -> bool:
    return bool(database) and database != ":memory:" and not database.startswith("file:")


def make_private(database: str) -> None:
    """Create the database file 0600 if it is missing; tighten it and its side files."""
    if not in_file(database):
        return
    if not (parent := Path(database).parent).exists():
        private_dir(parent)
    # Never open an existing database here: closing any descriptor of the file drops every
    # POSIX lock this process holds on it, the SHARED locks of its open WAL connections
    # among them, and another process would then checkpoint and delete the WAL under them
    # (SQLite's "How To Corrupt", section 2.2).
    if not os.path.exists(database):
        # FileExistsError: another thread or process created it first.
        with contextlib.suppress(FileExistsError):
            os.close(os.open(database, os.O_RDONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, PRIVATE_FILE))
    for suffix in ("", *_SIDE_FILES):
        tighten(Path(database + suffix), PRIVATE_FILE)


@functools.lru_cache(maxsize=2048)
def _qmark(query: str) -> str:
    return base.SQLiteCursorWrapper.convert_query(None, query)  # type: ignore[arg-type]


class CursorWrapper(base.SQLiteCursorWrapper):
    in_transaction: Any  # the Django connection's atomic state, set by create_cursor

    def convert_query(self, query: str, *, param_names: Any = None) -> str:
        # Most statements are the same few texts again (a pass, a cycle): Django rewrites
        # each one's %s with a regular expression every time (38,000 times in the
        # simulator's 300-job bench), kept here once per text.
        if param_names is None:
            return _qmark(query)
        return super().convert_query(query, param_names=param_names)

    def _gated(self, sql: str) -> bool:
        return not self.in_transaction() and sql.lstrip()[:7].upper().startswith(_WRITES)

    def execute(self, query: str, params: Any = None) -> Any:
        if self._gated(query):
            with _WRITE_GATE:
                return super().execute(query, params)
        return super().execute(query, params)

    def executemany(self, query: str, param_list: Any) -> Any:
        if self._gated(query):
            with _WRITE_GATE:
                return super().executemany(query, param_list)
        return super().executemany(query, param_list)


class DatabaseWrapper(RollbackListeners, base.DatabaseWrapper):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._holds_gate = False

    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        database = str(self.settings_dict["NAME"])
        make_private(database)
        _WRITE_GATE.bind(database)
        return super().get_new_connection(conn_params)

    def create_cursor(self, name: str | None = None) -> Any:
        cursor = self.connection.cursor(factory=CursorWrapper)
        cursor.in_transaction = lambda: self.in_atomic_block
        return cursor

    def _start_transaction_under_autocommit(self) -> None:
        _WRITE_GATE.acquire()
        self._holds_gate = True
        try:
            super()._start_transaction_under_autocommit()
        except BaseException:
            self._release_gate()
            raise

    def _release_gate(self) -> None:
        if self._holds_gate:
            self._holds_gate = False
            _WRITE_GATE.release()

    def _commit(self) -> None:
        try:
            super()._commit()
        finally:
            self._release_gate()

    def _rollback(self) -> None:
        try:
            super()._rollback()
        finally:
            self._release_gate()

    def _close(self) -> None:
        try:
            super()._close()
        finally:
            self._release_gate()
