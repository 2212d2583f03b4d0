"""A real database outage for tests: another connection holds the test database's write lock.

The test database is shared-cache in-memory SQLite, where a second writer (and a reader
of the locked table) fails at once with "database table is locked": the same
OperationalError a restarting PostgreSQL raises, without waiting out a busy timeout.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.db import connection


@contextmanager
def write_lock(table: str = "cluster_job") -> Iterator[None]:
    """Hold the write lock (and ``table``'s lock) until the block ends."""
    name = connection.settings_dict["NAME"]
    if connection.vendor != "sqlite" or "mode=memory" not in name:
        pytest.skip("needs the shared-cache SQLite test database")
    other = sqlite3.connect(name, uri=True, isolation_level=None, check_same_thread=False)
    try:
        other.execute("BEGIN IMMEDIATE")
        other.execute(f"UPDATE {table} SET id = id")  # noqa: S608 - a table name of the tests'
        yield
    finally:
        other.execute("ROLLBACK")
        other.close()
