"""Every (user, account, partition, QOS)'s count of active jobs, kept by the database.

Slurm checks MaxSubmitJobs, GrpSubmitJobs and a QOS's MaxSubmitJobsPerUser/PerAccount
against counts it keeps in memory (each association's and QOS's ``used_submit_jobs``), so
an sbatch costs the same whatever the queue.  Counting the active jobs at each submission
grew with the queue's depth (#18: 60 ms a submission at 100,000 active jobs).  Here
triggers on the job table add a row ``(user, account, partition, qos, +1/-1)`` to
``limits_submitted`` in the writer's own transaction whenever a job becomes active, stops
being active, is deleted while active or changes its key while active, whoever the writer
is (a service, a queryset update, another process, ``manage.py``).  Rows are only ever
added by writers, so concurrent writers never wait for each other on a counter row (no
lock order to get wrong, no deadlock); a reader sums them by key.  A compaction replaces
them by one row per key from time to time (``compact``): when a reader finds too many, and
at each usage cycle.

The triggers follow the job table (SQLite rebuilds a table to alter it, dropping its
triggers), so they are installed after every migrate, named by a digest of their SQL: a
database whose triggers are missing or differ gets them again and its counts recomputed
from the jobs, in one transaction that holds the job table's writers off.
"""

# Every statement here names only this table, the job table and its columns (quoted), and
# the active states' names (the project's constants): no one's input.
# ruff: noqa: S608

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections, transaction

from cluster.core.states import ACTIVE_JOB_STATES
from cluster.models import Job

TABLE = "limits_submitted"
KEY = ("user", "account", "partition", "qos")
# A reader past this many rows (by id span) compacts before it sums.
COMPACT_AT = 1_000
# pg_try_advisory_xact_lock's key: one compaction at a time (another one just reads on).
_PG_LOCK = 0x66736368_5355424D  # "fschSUBM"


def _names(connection: Any) -> dict[str, str]:
    q = connection.ops.quote_name
    meta = Job._meta
    out = {f: q(meta.get_field(f).column) for f in (*KEY, "state")}
    out["job"] = q(meta.db_table)
    out["table"] = q(TABLE)
    out["key"] = ", ".join(q(f) for f in KEY)
    out["active"] = ", ".join(f"'{s.value}'" for s in sorted(ACTIVE_JOB_STATES))
    return out


def _sqlite_triggers(n: dict[str, str]) -> list[tuple[str, str]]:
    def cols(ref: str) -> str:
        return ", ".join(f"{ref}.{n[f]}" for f in KEY)

    key_changed = " OR ".join(f"OLD.{n[f]} IS NOT NEW.{n[f]}" for f in KEY)
    old_active, new_active = f"OLD.{n['state']} IN ({n['active']})", f"NEW.{n['state']} IN ({n['active']})"
    into = f"INSERT INTO {n['table']} ({n['key']}, n)"
    return [
        ("ins", f"AFTER INSERT ON {n['job']} WHEN {new_active} BEGIN {into} VALUES ({cols('NEW')}, 1); END"),
        ("del", f"AFTER DELETE ON {n['job']} WHEN {old_active} BEGIN {into} VALUES ({cols('OLD')}, -1); END"),
        (
            "upd",
            f"AFTER UPDATE OF {n['state']}, {n['key']} ON {n['job']} "
            f"WHEN ({old_active}) <> ({new_active}) OR (({old_active}) AND ({key_changed})) BEGIN "
            f"{into} SELECT {cols('OLD')}, -1 WHERE {old_active}; "
            f"{into} SELECT {cols('NEW')}, 1 WHERE {new_active}; END",
        ),
    ]


def _pg_function(n: dict[str, str], name: str) -> str:
    def values(ref: str, delta: int) -> str:
        cols = ", ".join(f"{ref}.{n[f]}" for f in KEY)
        return f"INSERT INTO {n['table']} ({n['key']}, n) VALUES ({cols}, {delta});"

    key_changed = " OR ".join(f"OLD.{n[f]} IS DISTINCT FROM NEW.{n[f]}" for f in KEY)
    old_active, new_active = f"OLD.{n['state']} IN ({n['active']})", f"NEW.{n['state']} IN ({n['active']})"
    # The branches by TG_OP: OLD is not assigned in an INSERT's trigger, NEW in a DELETE's.
    return (
        f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        f"IF TG_OP = 'INSERT' THEN IF {new_active} THEN {values('NEW', 1)} END IF; "
        f"ELSIF TG_OP = 'DELETE' THEN IF {old_active} THEN {values('OLD', -1)} END IF; "
        f"ELSIF ({old_active}) <> ({new_active}) OR (({old_active}) AND ({key_changed})) THEN "
        f"IF {old_active} THEN {values('OLD', -1)} END IF; "
        f"IF {new_active} THEN {values('NEW', 1)} END IF; "
        "END IF; RETURN NULL; END $$"
    )


def _digest(connection: Any) -> str:
    n = _names(connection)
    text = repr(_sqlite_triggers(n)) + _pg_function(n, "f")
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def _trigger_names(connection: Any) -> set[str]:
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(
                "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = %s",
                [Job._meta.db_table],
            )
        else:
            cursor.execute(
                "SELECT tgname FROM pg_trigger WHERE tgrelid = to_regclass(%s) AND NOT tgisinternal",
                [connection.ops.quote_name(Job._meta.db_table)],
            )
        return {name for (name,) in cursor.fetchall() if name.startswith(f"{TABLE}_")}


def _wanted(connection: Any) -> set[str]:
    digest = _digest(connection)
    if connection.vendor == "sqlite":
        return {f"{TABLE}_{digest}_{kind}" for kind in ("ins", "del", "upd")}
    return {f"{TABLE}_{digest}_row", f"{TABLE}_{digest}_truncate"}


def install(connection: Any = None) -> bool:
    """The table and its triggers, the counts recomputed from the jobs when the triggers
    were missing or differed (idempotent: after every migrate).  Whether it (re)installed."""
    connection = connection or connections[DEFAULT_DB_ALIAS]
    if connection.vendor not in ("sqlite", "postgresql"):
        return False
    wanted = _wanted(connection)
    if _trigger_names(connection) == wanted:
        return False
    n = _names(connection)
    q = connection.ops.quote_name
    digest = _digest(connection)
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # Two migrates at once: the second waits, then finds the work done.
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_PG_LOCK + 1])
            if _trigger_names(connection) == wanted:
                return False
        if connection.vendor == "sqlite":
            cursor.execute(
                f"CREATE TABLE IF NOT EXISTS {n['table']} (id INTEGER PRIMARY KEY AUTOINCREMENT, "
                f"{q('user')} TEXT NOT NULL, {q('account')} TEXT NOT NULL, {q('partition')} TEXT NOT NULL, "
                f"{q('qos')} TEXT NOT NULL, n INTEGER NOT NULL)"
            )
            for name in _trigger_names(connection):
                cursor.execute(f"DROP TRIGGER IF EXISTS {q(name)}")
            for kind, body in _sqlite_triggers(n):
                cursor.execute(f"CREATE TRIGGER {q(f'{TABLE}_{digest}_{kind}')} {body}")
        else:
            cursor.execute(
                f"CREATE TABLE IF NOT EXISTS {n['table']} (id bigserial PRIMARY KEY, "
                f"{q('user')} text NOT NULL, {q('account')} text NOT NULL, {q('partition')} text NOT NULL, "
                f"{q('qos')} text NOT NULL, n integer NOT NULL)"
            )
            for name in _trigger_names(connection):
                cursor.execute(f"DROP TRIGGER IF EXISTS {q(name)} ON {n['job']}")
            row_fn, truncate_fn = q(f"{TABLE}_row"), q(f"{TABLE}_truncate")
            cursor.execute(_pg_function(n, row_fn))
            # A TRUNCATE (a test's flush) fires no row trigger: no job is left active.
            cursor.execute(
                f"CREATE OR REPLACE FUNCTION {truncate_fn}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                f"DELETE FROM {n['table']}; RETURN NULL; END $$"
            )
            # Creating the trigger locks the job table against writers until the commit,
            # so the counts below are those of the jobs the triggers start from.
            cursor.execute(
                f"CREATE TRIGGER {q(f'{TABLE}_{digest}_row')} AFTER INSERT OR DELETE OR UPDATE OF "
                f"{n['state']}, {n['key']} ON {n['job']} FOR EACH ROW EXECUTE FUNCTION {row_fn}()"
            )
            cursor.execute(
                f"CREATE TRIGGER {q(f'{TABLE}_{digest}_truncate')} AFTER TRUNCATE ON {n['job']} "
                f"FOR EACH STATEMENT EXECUTE FUNCTION {truncate_fn}()"
            )
        cursor.execute(f"DELETE FROM {n['table']}")
        cursor.execute(
            f"INSERT INTO {n['table']} ({n['key']}, n) "
            f"SELECT {', '.join(n[f] for f in KEY)}, COUNT(*) FROM {n['job']} "
            f"WHERE {n['state']} IN ({n['active']}) GROUP BY {', '.join(n[f] for f in KEY)}"
        )
    return True


def compact(connection: Any = None, *, at_least: int = 0) -> bool:
    """One row per key with a count not zero, when the rows' id span is at least
    ``at_least`` (and more than one row).  Whether it compacted."""
    connection = connection or connections[DEFAULT_DB_ALIAS]
    t = connection.ops.quote_name(TABLE)
    key = ", ".join(connection.ops.quote_name(f) for f in KEY)
    if _span(connection) < max(at_least, 2):
        return False  # read outside a transaction: most calls write nothing
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [_PG_LOCK])
            if not cursor.fetchone()[0]:
                return False
        # The sums are of exactly the rows this statement deletes: a row another writer
        # commits meanwhile (PostgreSQL) is either among them or left for the next time.
        cursor.execute(f"DELETE FROM {t} RETURNING {key}, n")
        sums: dict[tuple[str, ...], int] = {}
        for *k, n in cursor.fetchall():
            sums[tuple(k)] = sums.get(tuple(k), 0) + n
        rows = [(*k, n) for k, n in sorted(sums.items()) if n]
        if rows:
            cursor.executemany(f"INSERT INTO {t} ({key}, n) VALUES (%s, %s, %s, %s, %s)", rows)
    return True


def _span(connection: Any) -> int:
    """How many rows the table can hold, from its ids (two index lookups, no scan)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT min(id), max(id) FROM {connection.ops.quote_name(TABLE)}")
        low, high = cursor.fetchone()
    return 0 if high is None else high - low + 1


Counts = dict[tuple[str, str, str, str], int]


def groups(user: str, accounts: Iterable[str], qos: str, connection: Any = None) -> Counts:
    """The active jobs a new job's submit limits can count, by (user, account, partition,
    QOS): the user's, those of ``accounts``, and those of the QOS."""
    connection = connection or connections[DEFAULT_DB_ALIAS]
    compact(connection, at_least=COMPACT_AT)
    q = connection.ops.quote_name
    accounts = sorted(accounts)
    key = ", ".join(q(f) for f in KEY)
    marks = ", ".join(["%s"] * len(accounts)) or "NULL"
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {key}, SUM(n) FROM {q(TABLE)} "
            f"WHERE {q('user')} = %s OR {q('account')} IN ({marks}) OR {q('qos')} = %s "
            f"GROUP BY {key} HAVING SUM(n) <> 0",
            [user, *accounts, qos],
        )
        return {(u, a, p, s): int(count) for u, a, p, s, count in cursor.fetchall()}


def recount(connection: Any = None) -> Counts:
    """The same counts from the jobs themselves (tests, and an administrator's check)."""
    connection = connection or connections[DEFAULT_DB_ALIAS]
    n = _names(connection)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {', '.join(n[f] for f in KEY)}, COUNT(*) FROM {n['job']} "
            f"WHERE {n['state']} IN ({n['active']}) GROUP BY {', '.join(n[f] for f in KEY)}"
        )
        return {(u, a, p, s): int(count) for u, a, p, s, count in cursor.fetchall()}


def counts(connection: Any = None) -> Counts:
    """Every key's count as the table holds it (tests)."""
    connection = connection or connections[DEFAULT_DB_ALIAS]
    q = connection.ops.quote_name
    key = ", ".join(q(f) for f in KEY)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {key}, SUM(n) FROM {q(TABLE)} GROUP BY {key} HAVING SUM(n) <> 0")
        return {(u, a, p, s): int(count) for u, a, p, s, count in cursor.fetchall()}
