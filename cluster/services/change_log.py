"""The rows every process writes, logged by the database itself.

The scheduler pass keeps its snapshot between passes (cluster/services/pass_snapshot.py)
where it can see every write.  Watching the statements of its own process's connections
sees that process's writes only: in embedded mode the HTTP helper processes (submissions,
cancellations) and ``manage.py`` write the same SQLite file, in distributed mode the
server processes and every Celery worker write PostgreSQL.  So the database records them:
triggers on the project's tables add a row ``(table, row id)`` to ``fsched_change`` in the
writer's own transaction, whoever the writer is, and a process that keeps views reads the
entries added since it last looked (``Reader.poll``).

What "since it last looked" means is the database's (change_log_sqlite.py: ids, handed
out in commit order by SQLite's one writer; change_log_pg.py: transaction ids, as
PostgreSQL's writers commit in any order).  Whatever a reader cannot be sure of (its first
look, a rollback it was inside, entries trimmed before it read them) it reports as
``everything``: slower, never stale.

The log is trimmed by its readers: past ``TRIM_AT`` entries, down to the newest ``KEEP``.

Not installed on an in-memory SQLite database (the simulator's, the unit tests'): one
process, whose statement watch sees every write.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from django.apps import apps
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections

from cluster.services.change_log_entries import TABLE, Changes

# Tables whose rows nothing keeps, written on every job transition: not logged.
_UNLOGGED = frozenset({TABLE, "cluster_event"})


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


def _backend(connection: Any) -> Any:
    # The vendors' SQL, imported when asked for: neither is needed by the other's process.
    if connection.vendor == "sqlite":
        from cluster.services import change_log_sqlite  # noqa: PLC0415

        return change_log_sqlite
    if connection.vendor == "postgresql":
        from cluster.services import change_log_pg  # noqa: PLC0415

        return change_log_pg
    return None


def install(connection: Any = None, *, force: bool = False) -> bool:
    """Create the log and its triggers (idempotent; after every migrate).  Not on an
    in-memory SQLite database unless ``force`` (tests).  Whether the log is there."""
    connection = connection or connections[DEFAULT_DB_ALIAS]
    backend = _backend(connection)
    if backend is None:
        return False
    if connection.vendor == "sqlite" and connection.is_in_memory_db() and not force:
        return False
    with connection.cursor() as cursor:
        backend.install(cursor, connection.ops.quote_name, project_tables())
    return True


def uninstall(connection: Any = None) -> None:
    """Drop the log and its triggers (tests; a database given up)."""
    connection = connection or connections[DEFAULT_DB_ALIAS]
    if (backend := _backend(connection)) is not None:
        with connection.cursor() as cursor:
            backend.uninstall(cursor, connection.ops.quote_name)


def installed(connection: Any = None) -> bool:
    connection = connection or connections[DEFAULT_DB_ALIAS]
    if (backend := _backend(connection)) is None:
        return False
    with connection.cursor() as cursor:
        return backend.installed(cursor)


class Reader:
    """One process's place in the log (a vendor's mark: an id, a transaction id)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: int | None = None  # None: start again from where the log ends now

    def restart(self) -> None:
        """A rollback seen, or nothing read yet: the next poll says ``everything``."""
        with self._lock:
            self._seen = None

    def poll(self, connection: Any = None) -> Changes:
        connection = connection or connections[DEFAULT_DB_ALIAS]
        backend = _backend(connection)
        with self._lock, connection.cursor() as cursor:
            out = Changes()
            self._seen, trim_due = backend.poll(cursor, self._seen, out)
            mark = self._seen
        # The trim writes, so it waits for the database's writer (SQLite's gate, a
        # PostgreSQL row lock) while a thread inside a write transaction may be waiting
        # for this lock to poll: holding it here deadlocked the embedded controller the
        # first time its log passed TRIM_AT under load.
        if trim_due:
            with connection.cursor() as cursor:
                backend.trim(cursor, mark)
        return out
