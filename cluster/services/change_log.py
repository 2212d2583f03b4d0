"""The rows every process writes, logged by the database itself (embedded mode's SQLite file).

The scheduler pass keeps its snapshot between passes (cluster/services/pass_snapshot.py)
where it can see every write.  Watching the statements of its own process's connections
sees that process's writes only; in embedded mode the HTTP helper processes (submissions,
cancellations) and ``manage.py`` write the same file.  So the database records them:
triggers on the project's tables add a row ``(table, row id)`` to ``fsched_change`` in the
writer's own transaction, whoever the writer is, and a process that keeps views reads the
entries added since it last looked (``poll``).

Why that is exact on SQLite: one writer holds the database from its first write to its
commit, so the entries' ids are handed out in commit order, and a reader sees a prefix of
them: an entry it has not seen has a larger id than every entry it has.  A rolled-back
transaction's ids are handed out again; a reader that was inside it forgets everything
and starts again from the committed largest id (``restart``).

The log is trimmed by the reader (``TRIM_AT``): entries older than the newest ``KEEP`` go.
A reader that finds entries missing below what it has seen (another reader trimmed them)
forgets everything, slower, never stale.

Only where the database is a file shared by processes: an in-memory database (the
simulator's, the unit tests') has one process, whose statement watch sees every write, and
PostgreSQL (distributed mode), where ids are not handed out in commit order, keeps the
full read (``installed`` is False there).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.apps import apps
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections

TABLE = "fsched_change"
# The reader trims the log when it holds more than TRIM_AT entries, down to the newest KEEP.
TRIM_AT = 50_000
KEEP = 10_000
# More entries than this since the last look: the tables named are read whole.
ROWS_AT_MOST = 5_000
# Tables whose rows nothing keeps, written on every job transition: not logged.
_UNLOGGED = frozenset({TABLE, "cluster_event"})


@dataclass
class Changes:
    """What was written since the last look: table -> row ids (None: the whole table)."""

    tables: dict[str, set[int] | None] = field(default_factory=dict)
    everything: bool = False  # the log cannot say: forget all

    def add(self, table: str, row: int | None) -> None:
        if table in self.tables and self.tables[table] is None:
            return
        if row is None:
            self.tables[table] = None
        else:
            self.tables.setdefault(table, set()).add(row)  # type: ignore[union-attr]


def project_tables() -> list[tuple[str, bool]]:
    """(table, whether its primary key is the integer ``id``) for every table of the
    project's own apps."""
    root = Path(settings.BASE_DIR).resolve()
    out = []
    for model in apps.get_models():
        meta = model._meta
        # The project's apps are packages at its root (a venv inside it holds the others).
        home = Path(apps.get_app_config(meta.app_label).path).resolve().parent
        if not meta.managed or meta.proxy or home != root:
            continue
        if meta.db_table in _UNLOGGED:
            continue
        pk = meta.pk
        keyed = pk is not None and pk.column == "id" and pk.get_internal_type().endswith("AutoField")
        out.append((meta.db_table, keyed))
    return sorted(set(out))


def _shared_file(connection: Any) -> bool:
    return connection.vendor == "sqlite" and not connection.is_in_memory_db()


def install(connection: Any = None, *, force: bool = False) -> bool:
    """Create the log and its triggers (idempotent; after every migrate).  Only on an
    SQLite file, unless ``force`` (tests).  Whether the log is there."""
    connection = connection or connections[DEFAULT_DB_ALIAS]
    if connection.vendor != "sqlite" or not (force or _shared_file(connection)):
        return False
    q = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TABLE IF NOT EXISTS {q(TABLE)} "
            "(id INTEGER PRIMARY KEY AUTOINCREMENT, tbl TEXT NOT NULL, row INTEGER)"
        )
        for table, keyed in project_tables():
            for event, ref in (("INSERT", "NEW"), ("UPDATE", "NEW"), ("DELETE", "OLD")):
                row = f"{ref}.id" if keyed else "NULL"
                name = q(f"{TABLE}_{table}_{event.lower()}")
                # The table name is a model's db_table, quoted: no input of anyone's.
                sql = (
                    f"CREATE TRIGGER IF NOT EXISTS {name} AFTER {event} ON {q(table)} "  # noqa: S608
                    f"BEGIN INSERT INTO {q(TABLE)} (tbl, row) VALUES ('{table}', {row}); END"
                )
                cursor.execute(sql)
    return True


def uninstall(connection: Any = None) -> None:
    """Drop the log and its triggers (a database leaving embedded mode; tests)."""
    connection = connection or connections[DEFAULT_DB_ALIAS]
    if connection.vendor != "sqlite":
        return
    q = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        for (name,) in cursor.fetchall():
            if name.startswith(f"{TABLE}_"):
                cursor.execute(f"DROP TRIGGER IF EXISTS {q(name)}")
        cursor.execute(f"DROP TABLE IF EXISTS {q(TABLE)}")


def installed(connection: Any = None) -> bool:
    connection = connection or connections[DEFAULT_DB_ALIAS]
    if connection.vendor != "sqlite":
        return False
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = %s", [TABLE])
        return cursor.fetchone() is not None


class Reader:
    """One process's place in the log."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: int | None = None  # None: start again from the committed end

    def restart(self) -> None:
        """A rollback seen, or nothing read yet: the next poll says ``everything``."""
        with self._lock:
            self._seen = None

    def poll(self, connection: Any = None) -> Changes:
        connection = connection or connections[DEFAULT_DB_ALIAS]
        q = connection.ops.quote_name(TABLE)
        with self._lock, connection.cursor() as cursor:
            seen = self._seen
            if seen is None:
                cursor.execute(f"SELECT coalesce(max(id), 0) FROM {q}")  # noqa: S608 - our table's name
                self._seen = cursor.fetchone()[0]
                return Changes(everything=True)
            cursor.execute(f"SELECT min(id), max(id) FROM {q}")  # noqa: S608
            low, high = cursor.fetchone()
            if high is None or high <= seen:
                if high is not None and high < seen:  # ids handed out again: a rollback
                    self._seen = high
                    return Changes(everything=True)
                return Changes()
            if low > seen + 1:  # trimmed past us
                self._seen = high
                return Changes(everything=True)
            out = Changes()
            if high - seen > ROWS_AT_MOST:
                cursor.execute(f"SELECT DISTINCT tbl FROM {q} WHERE id > %s AND id <= %s", [seen, high])  # noqa: S608
                for (table,) in cursor.fetchall():
                    out.add(table, None)
            else:
                cursor.execute(f"SELECT tbl, row FROM {q} WHERE id > %s AND id <= %s", [seen, high])  # noqa: S608
                for table, row in cursor.fetchall():
                    out.add(table, row)
            self._seen = high
            if high - low >= TRIM_AT:
                cursor.execute(f"DELETE FROM {q} WHERE id <= %s", [high - KEEP])  # noqa: S608
            return out
