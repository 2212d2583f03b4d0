"""The change log's SQL on SQLite (cluster/services/change_log.py says what it is for).

Why an id is a reader's mark here: one writer holds the database from its first write to
its commit, so the entries' ids are handed out in commit order and a reader sees a prefix
of them: an entry it has not seen has a larger id than every entry it has.  A rolled-back
transaction's ids are handed out again (AUTOINCREMENT's counter rolls back with it); a
reader that was inside that transaction is restarted (pass_snapshot.forget), and one that
finds the largest id below its mark knows it happened.
"""

# Every statement here names only the log's own tables and the models' tables (quoted),
# never anyone's input: string-built SQL is the point of the module.
# ruff: noqa: S608

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cluster.services import change_log_entries as change_log

_Q = Callable[[str], str]


def install(cursor: Any, q: _Q, tables: list[tuple[str, bool]]) -> None:
    log = q(change_log.TABLE)
    cursor.execute(
        f"CREATE TABLE IF NOT EXISTS {log} "
        "(id INTEGER PRIMARY KEY AUTOINCREMENT, tbl TEXT NOT NULL, row INTEGER)"
    )
    for table, keyed in tables:
        for event, ref in (("INSERT", "NEW"), ("UPDATE", "NEW"), ("DELETE", "OLD")):
            row = f"{ref}.id" if keyed else "NULL"
            name = q(f"{change_log.TABLE}_{table}_{event.lower()}")
            # The table name is a model's db_table, quoted: no input of anyone's.
            sql = (
                f"CREATE TRIGGER IF NOT EXISTS {name} AFTER {event} ON {q(table)} "
                f"BEGIN INSERT INTO {log} (tbl, row) VALUES ('{table}', {row}); END"
            )
            cursor.execute(sql)


def uninstall(cursor: Any, q: _Q) -> None:
    cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
    for (name,) in cursor.fetchall():
        if name.startswith(f"{change_log.TABLE}_"):
            cursor.execute(f"DROP TRIGGER IF EXISTS {q(name)}")
    cursor.execute(f"DROP TABLE IF EXISTS {q(change_log.TABLE)}")


def installed(cursor: Any) -> bool:
    cursor.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = %s", [change_log.TABLE])
    return cursor.fetchone() is not None


def poll(cursor: Any, seen: int | None, out: change_log.Changes) -> tuple[int, bool]:
    """The entries after ``seen`` added to ``out``; the new mark, and whether a trim is due
    (``trim``, which the caller runs outside its reader's lock)."""
    log = f'"{change_log.TABLE}"'
    if seen is None:
        cursor.execute(f"SELECT coalesce(max(id), 0) FROM {log}")
        out.everything = True
        return cursor.fetchone()[0], False
    cursor.execute(f"SELECT min(id), max(id) FROM {log}")
    low, high = cursor.fetchone()
    if high is None or high <= seen:
        if high is not None and high < seen:  # ids handed out again: a rollback
            out.everything = True
            return high, False
        return seen, False
    if low > seen + 1:  # trimmed past us
        out.everything = True
        return high, False
    if high - seen > change_log.ROWS_AT_MOST:
        cursor.execute(f"SELECT DISTINCT tbl FROM {log} WHERE id > %s AND id <= %s", [seen, high])
        for (table,) in cursor.fetchall():
            out.add(table, None)
        complete = False
    else:
        cursor.execute(f"SELECT tbl, row FROM {log} WHERE id > %s AND id <= %s", [seen, high])
        rows = cursor.fetchall()
        for table, row in rows:
            out.add(table, row)
        # The ids are dense (one writer; a rollback's are handed out again), so a full
        # count means no trim took any of them between the two statements.
        complete = len(rows) == high - seen
    if not complete:
        cursor.execute(f"SELECT min(id) FROM {log}")
        (now_low,) = cursor.fetchone()
        if now_low is None or now_low > seen + 1:  # another reader's trim, meanwhile
            out.everything = True
    return high, high - low >= change_log.TRIM_AT


def trim(cursor: Any, mark: int) -> None:
    """Down to the newest ``KEEP`` entries, if the log holds ``TRIM_AT``."""
    log = f'"{change_log.TABLE}"'
    cursor.execute(f"SELECT min(id), max(id) FROM {log}")
    low, high = cursor.fetchone()
    if low is not None and high - low >= change_log.TRIM_AT:
        cursor.execute(f"DELETE FROM {log} WHERE id <= %s", [high - change_log.KEEP])
