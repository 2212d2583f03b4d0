"""SQLite with one in-process write gate (the embedded mode's database backend).

SQLite lets one writer at a time hold the database.  A writer that finds it locked waits
in SQLite's busy handler, which sleeps in growing steps (1, 2, 5, 10 ... 100 ms) and so
keeps waiting long after the lock is free.  In the embedded controller the writers are
threads of one process (the scheduler cycle, agent messages, API requests): a Python lock
taken before every write transaction and every write statement outside one hands the
database over at once instead.  Other processes (management commands) still meet the
busy handler, which is correct, just slower.
"""

from __future__ import annotations

import threading
from typing import Any

from django.db.backends.sqlite3 import base

_WRITE_GATE = threading.RLock()
_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")


class CursorWrapper(base.SQLiteCursorWrapper):
    in_transaction: Any  # the Django connection's atomic state, set by create_cursor

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


class DatabaseWrapper(base.DatabaseWrapper):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._holds_gate = False

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
