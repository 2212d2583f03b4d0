"""The change log's SQL on PostgreSQL (cluster/services/change_log.py says what it is for).

Why a transaction id is a reader's mark here, not an entry's id: writers commit in any
order, so an entry with a small id can become visible after larger ones were read.  Each
entry carries its writer's transaction id (``xid8``, never wrapping).  At each look the
reader first takes the oldest transaction still running (``pg_snapshot_xmin`` of a fresh
snapshot), then reads every entry of a transaction at least as new as the mark taken at
its previous look.  Any transaction whose writes that previous look could not see was
running then or began after, so its id is at least that mark: nothing is missed.  Entries
seen twice (a transaction that was already visible) only make a row be read again.

Trimming: entries of transactions older than the trimmer's own mark, below the newest
``KEEP`` ids, go, and the table ``fsched_change_trim`` keeps that mark: a reader whose
mark is older cannot know what it missed and reports ``everything``.
"""

# Every statement here names only the log's own tables and the models' tables (quoted),
# never anyone's input: string-built SQL is the point of the module.
# ruff: noqa: S608

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cluster.services import change_log_entries as change_log

_Q = Callable[[str], str]
TRIM = f"{change_log.TABLE}_trim"
_KEYED = f"{change_log.TABLE}_keyed"
_WHOLE = f"{change_log.TABLE}_whole"


def install(cursor: Any, q: _Q, tables: list[tuple[str, bool]]) -> None:
    log = q(change_log.TABLE)
    cursor.execute(
        f"CREATE TABLE IF NOT EXISTS {log} (id bigserial PRIMARY KEY, tbl text NOT NULL, row bigint,"
        " xid xid8 NOT NULL DEFAULT pg_current_xact_id())"
    )
    cursor.execute(f"CREATE INDEX IF NOT EXISTS {q(change_log.TABLE + '_xid')} ON {log} (xid)")
    cursor.execute(
        f"CREATE TABLE IF NOT EXISTS {q(TRIM)} (one int PRIMARY KEY CHECK (one = 1), below xid8 NOT NULL)"
    )
    cursor.execute(
        f"CREATE OR REPLACE FUNCTION {q(_KEYED)}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        f"INSERT INTO {log} (tbl, row) "
        "VALUES (TG_TABLE_NAME, CASE WHEN TG_OP = 'DELETE' THEN OLD.id ELSE NEW.id END); "
        "RETURN NULL; END $$"
    )
    cursor.execute(
        f"CREATE OR REPLACE FUNCTION {q(_WHOLE)}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        f"INSERT INTO {log} (tbl, row) VALUES (TG_TABLE_NAME, NULL); RETURN NULL; END $$"
    )
    for table, keyed in tables:
        # The table name is a model's db_table, quoted: no input of anyone's.
        cursor.execute(
            f"CREATE OR REPLACE TRIGGER {q(change_log.TABLE + '_row')} AFTER INSERT OR UPDATE OR DELETE "
            f"ON {q(table)} FOR EACH ROW EXECUTE FUNCTION {q(_KEYED if keyed else _WHOLE)}()"
        )
        # A TRUNCATE (a test's flush) fires no row trigger.
        cursor.execute(
            f"CREATE OR REPLACE TRIGGER {q(change_log.TABLE + '_truncate')} AFTER TRUNCATE "
            f"ON {q(table)} FOR EACH STATEMENT EXECUTE FUNCTION {q(_WHOLE)}()"
        )


def uninstall(cursor: Any, q: _Q) -> None:
    cursor.execute(f"DROP FUNCTION IF EXISTS {q(_KEYED)}() CASCADE")
    cursor.execute(f"DROP FUNCTION IF EXISTS {q(_WHOLE)}() CASCADE")
    cursor.execute(f"DROP TABLE IF EXISTS {q(change_log.TABLE)}, {q(TRIM)}")


def installed(cursor: Any) -> bool:
    cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [change_log.TABLE])
    return bool(cursor.fetchone()[0])


def poll(cursor: Any, seen: int | None, out: change_log.Changes) -> tuple[int, bool]:
    """The entries of transactions from ``seen`` on added to ``out``; the new mark, and
    whether a trim may be due (``trim``, which the caller runs outside its reader's lock)."""
    log = f'"{change_log.TABLE}"'
    cursor.execute("SELECT pg_snapshot_xmin(pg_current_snapshot())::text")
    mark = int(cursor.fetchone()[0])
    if seen is None:
        out.everything = True
        return mark, False
    if _trimmed_past(cursor, seen):  # entries it needed may be gone
        out.everything = True
        return mark, True
    cursor.execute(f"SELECT count(*), min(id), max(id) FROM {log} WHERE xid >= %s::text::xid8", [str(seen)])
    count, _low, _high = cursor.fetchone()
    if count > change_log.ROWS_AT_MOST:
        cursor.execute(f"SELECT DISTINCT tbl FROM {log} WHERE xid >= %s::text::xid8", [str(seen)])
        for (table,) in cursor.fetchall():
            out.add(table, None)
    elif count:
        cursor.execute(f"SELECT tbl, row FROM {log} WHERE xid >= %s::text::xid8", [str(seen)])
        for table, row in cursor.fetchall():
            out.add(table, row)
    if count and _trimmed_past(cursor, seen):  # another reader's trim, meanwhile
        out.everything = True
    return mark, True


def _trimmed_past(cursor: Any, seen: int) -> bool:
    cursor.execute(f'SELECT below::text FROM "{TRIM}"')
    found = cursor.fetchone()
    return found is not None and int(found[0]) > seen


def trim(cursor: Any, mark: int) -> None:
    """Entries of transactions before ``mark`` past the newest ``KEEP``, if the log holds
    ``TRIM_AT``."""
    log = f'"{change_log.TABLE}"'
    cursor.execute(f"SELECT min(id), max(id) FROM {log}")
    low, high = cursor.fetchone()
    if low is None or high - low < change_log.TRIM_AT:
        return
    # The mark first: a reader that looks between the two statements then knows.
    cursor.execute(
        f'INSERT INTO "{TRIM}" (one, below) VALUES (1, %s::text::xid8) '
        "ON CONFLICT (one) DO UPDATE SET below = greatest(EXCLUDED.below, "
        f'"{TRIM}".below)',
        [str(mark)],
    )
    cursor.execute(
        f"DELETE FROM {log} WHERE id <= %s AND xid < %s::text::xid8", [high - change_log.KEEP, str(mark)]
    )
