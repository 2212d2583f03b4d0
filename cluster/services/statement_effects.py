"""What a SQL statement writes: its tables, and of the node, partition and job tables which rows.

The kept snapshot of the scheduler pass (cluster/services/pass_snapshot.py) sees every
statement a Django connection of this process runs, and must know, without asking the
writer, what each may have changed.  A statement that writes the node, partition or job
table is read once (its text is cached) for the rows it writes:

- an UPDATE or DELETE whose WHERE starts with the primary key (``id = %s``, ``id IN
  (...)``, the ORM's ``save()``, ``rows.update_rows``, ``filter(pk__in=...)``) names its rows
  in its parameters: those rows are re-read (a job row in no holding state is dropped);
- an UPDATE that sets none of the columns the pass reads changes nothing here (the pass's
  own reason and priority writes to thousands of pending jobs);
- an INSERT of jobs names their ids (a job's id is always given, ``Job.id``);
- anything else that writes one of those tables (an UPDATE by state, a flush, a migration,
  a node inserted) marks the whole table changed: slower, never stale.

Any other table written is named whole (``tables_written``), for the values kept until
their tables are written (``pass_snapshot.kept_value``), with the columns an UPDATE sets
(``columns_set``) for the values that read a few columns only (the node names, which the
nodes' state writes at every start and end leave alone), and the rows it names by key
(``keyed_rows``) for the rows kept and read again by key (``pass_snapshot.kept_rows``,
``kept_by_key``).  A table's key is its primary key's column: ``job_id`` of the jobs'
accounting (a one-to-one table), ``id`` of most; an upsert on the key alone
(``rows.upsert_values``) names its rows as an INSERT does.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache, lru_cache
from typing import Any, Literal

from django.apps import apps

from cluster.models import Job, Node, Partition
from cluster.services.snapshot_rows import JOB_FIELDS, NODE_FIELDS, PARTITION_FIELDS, REASON_FIELDS

# A statement's effect: (target, where its ids are) per table it writes; ids None: all rows.
# Where: ("one", i) the i-th parameter; ("in", i, n) parameters i..i+n; ("every", i, n)
# each n-th parameter from i (a multi-row INSERT).
Effect = tuple[tuple[str, tuple[Any, ...] | None], ...]

# The verb and the table a statement writes, the table quoted or not, in a schema or not
# (the simulator's ``temp.`` tables are written unquoted).
_HEAD = re.compile(
    r"\s*(?:(UPDATE)|(DELETE)\s+FROM|(INSERT)(?:\s+OR\s+\w+)?\s+INTO|REPLACE\s+INTO)\s+"
    r"(?:\"?\w+\"?\.)?\"?(\w+)\"?",
    re.IGNORECASE,
)
_PASSIVE = ("SELECT", "SAVEPOINT", "RELEASE", "BEGIN", "COMMIT", "PRAGMA", "EXPLAIN")


@lru_cache(maxsize=4096)
def _head(sql: str) -> re.Match[str] | Literal[False] | None:
    """What a statement writes, read once for both of its uses (``effect``, the rows a
    pass keeps; ``tables_written``, the kept values): False, nothing; None, possibly any
    table (DDL, several statements, a CTE that writes, a rollback); else the match of
    ``_HEAD``, its verb and its one table."""
    head = sql.lstrip()[:9].upper()
    if head.startswith(_PASSIVE):
        return False
    if head.startswith("WITH") and not re.search(r"\b(?:UPDATE|INSERT|DELETE|REPLACE)\b", sql, re.IGNORECASE):
        return False
    m = _HEAD.match(sql)
    if m is None or ";" in sql.rstrip().rstrip(";"):
        return None
    return m


@cache
def watched_tables() -> dict[str, tuple[str, frozenset[str]]]:
    """Table -> (target, the columns the pass reads)."""
    out = {}
    for target, model, fields in (
        ("node", Node, NODE_FIELDS),
        ("partition", Partition, PARTITION_FIELDS),
        ("job", Job, JOB_FIELDS),
    ):
        out[model._meta.db_table] = (target, frozenset(model._meta.get_field(f).column for f in fields))
    return out


_REASON_COLUMNS = frozenset(Job._meta.get_field(f).column for f in REASON_FIELDS)


@cache
def _key_columns() -> dict[str, str]:
    """Table -> its primary key's column, for the models' tables whose key is not ``id``
    (a one-to-one table's ``job_id``, the row of the job it extends)."""
    out = {}
    for model in apps.get_models():
        pk = model._meta.pk
        if pk is not None and pk.column != "id":
            out[model._meta.db_table] = pk.column
    return out


def _by_key(sql: str, where_at: int, table: str) -> tuple[Any, ...] | None:
    """Where the ids are when the WHERE clause from ``where_at`` starts with the primary key
    and only narrows it further; None otherwise."""
    where = sql[where_at:]
    key = re.escape(_key_columns().get(table, "id"))
    m = re.match(rf"\s*(?:\"{table}\"\.)?\"{key}\"\s*(?:(=\s*%s)|IN\s*\(((?:\s*%s\s*,)*\s*%s\s*)\))", where)
    if m is None:
        return None
    rest = where[m.end() :].strip()
    # AND binds tighter than OR: a later OR could reach other rows.
    if rest and (not rest.upper().startswith("AND ") or re.search(r"\bOR\b", rest, re.IGNORECASE)):
        return None
    first = sql[:where_at].count("%s")
    return ("one", first) if m.group(1) else ("in", first, m.group(2).count("%s"))


def _insert_ids(sql: str, start: int, table: str) -> tuple[Any, ...] | None:
    """Where the keys are in an INSERT's parameters when it names them, each row's.  An
    upsert on the key alone (``ON CONFLICT (key) DO UPDATE SET`` without parameters or
    subqueries: rows.upsert_values) writes the rows it names too, new or not."""
    key = _key_columns().get(table, "id")
    m = re.match(
        r"\s*\(([^)]*)\)\s*VALUES\s*(.*?)\s*"
        rf'(?:ON\s+CONFLICT\s*\(\s*"?{re.escape(key)}"?\s*\)\s*DO\s+(?:NOTHING|UPDATE\s+SET\s[^()%;]*?)\s*)?'
        r"(?:RETURNING\s[^()]*)?$",
        sql[start:],
        re.DOTALL | re.IGNORECASE,
    )
    if m is None:
        return None
    columns = [c.strip().strip('"') for c in m.group(1).split(",")]
    if key not in columns or sql.count("%s") != m.group(2).count("%s"):
        return None
    group = r"\(\s*%s(?:\s*,\s*%s){" + str(len(columns) - 1) + r"}\s*\)"
    if not re.fullmatch(rf"{group}(?:\s*,\s*{group})*", m.group(2)):
        return None
    return ("every", columns.index(key), len(columns))


@lru_cache(maxsize=4096)
def effect(sql: str) -> Effect:
    """What a statement writes of the tables the pass keeps views of, read once per text."""
    if sql.lstrip()[:8].upper().startswith("ROLLBACK"):
        return (("*", None),)
    m = _head(sql)
    if m is False:
        return ()
    watched = watched_tables()
    if m is None:
        # DDL, a CTE, several statements: every table it names, whole.
        named = [target for table, (target, _) in watched.items() if re.search(rf"\b{table}\b", sql)]
        named += ["reasons"] if "job" in named else []
        return tuple((target, None) for target in named)
    table = m.group(4)
    if table not in watched:
        return ()
    target, columns = watched[table]
    if target == "partition":
        return (("partition", None),)
    where = re.search(r"\sWHERE\s", sql, re.IGNORECASE)
    if re.search(r"\bSELECT\b", sql[m.end() :], re.IGNORECASE):
        return ((target, None),)  # a subquery: its WHERE is not the statement's
    if m.group(1):  # UPDATE
        sets = set(re.findall(r'"?(\w+)"?\s*=', sql[m.end() : where.start() if where else len(sql)]))
        rows_at = _by_key(sql, where.end(), table) if where else None
        found = ((target, rows_at),) if columns & sets else ()
        if target == "job" and _REASON_COLUMNS & sets:
            found += (("reasons", rows_at),)
        return found
    if m.group(2):  # DELETE
        rows_at = _by_key(sql, where.end(), table) if where else None
        return ((target, rows_at),) + ((("reasons", rows_at),) if target == "job" else ())
    # An INSERT: a new node moves the indices; a job's id is in its parameters.
    rows_at = _insert_ids(sql, m.end(), table) if m.group(3) and target == "job" else None
    return ((target, rows_at),) + ((("reasons", rows_at),) if target == "job" else ())


ANY_TABLE = "*"


def tables_written(sql: str) -> tuple[str, ...]:
    """The tables a statement writes; ``*`` for one that may write any."""
    m = _head(sql)
    if m is False:
        return ()
    if m is None:
        return (ANY_TABLE,)
    return (m.group(4),)


_SET = re.compile(r"\s*SET\s", re.IGNORECASE)
_SET_END = re.compile(r"\s(?:WHERE|RETURNING)\s", re.IGNORECASE)
_ASSIGNMENT = re.compile(r'\s*"?(\w+)"?\s*=(?!=)', re.IGNORECASE)


@lru_cache(maxsize=4096)
def columns_set(sql: str) -> frozenset[str] | None:
    """The columns an UPDATE sets, when its SET clause reads as plain ``column = value``
    assignments; None for any other write (an INSERT or a DELETE adds or removes rows, a
    statement not read here may change anything).  Slower when unsure, never short: a
    string literal, a subquery, an ``UPDATE ... FROM`` or an ``UPDATE OR REPLACE`` (which
    deletes the rows it collides with) are None."""
    m = _head(sql)
    if not m or not m.group(1) or "'" in sql or re.search(r"\b(?:SELECT|FROM)\b", sql, re.IGNORECASE):
        return None
    start = _SET.match(sql, m.end())
    if start is None:
        return None
    end = _SET_END.search(sql, start.end())
    clause = sql[start.end() : end.start() if end else len(sql)]
    if clause.count("(") != clause.count(")"):
        return None  # a WHERE inside parentheses: not the statement's
    pieces, depth, begin = [], 0, 0
    for i, char in enumerate(clause):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "," and depth == 0:
            pieces.append(clause[begin:i])
            begin = i + 1
    pieces.append(clause[begin:])
    columns = []
    for piece in pieces:
        assignment = _ASSIGNMENT.match(piece)
        if assignment is None:
            return None  # a row value ``(a, b) = ...``, or anything unread
        columns.append(assignment.group(1))
    return frozenset(columns)


@lru_cache(maxsize=4096)
def keyed_rows(sql: str) -> tuple[Any, ...] | None:
    """Where the ids of the rows a statement writes are in its parameters (for
    ``written_ids``): an UPDATE or DELETE whose WHERE starts with the primary key, an
    INSERT naming its ids; None when it may write rows it does not name."""
    m = _head(sql)
    if (
        not m
        or re.search(r"\bSELECT\b", sql[m.end() :], re.IGNORECASE)
        or re.match(r"\s*\w+\s+OR\s", sql, re.IGNORECASE)
    ):
        return None  # ``INSERT OR REPLACE`` deletes the rows it collides with, unnamed
    table = m.group(4)
    if m.group(1) or m.group(2):  # UPDATE, DELETE
        where = re.search(r"\sWHERE\s", sql, re.IGNORECASE)
        return _by_key(sql, where.end(), table) if where else None
    return _insert_ids(sql, m.end(), table) if m.group(3) else None


def written_ids(where: tuple[Any, ...], params: Sequence[Any]) -> list[Any]:
    """The ids in one row of a statement's parameters, ``where`` an ``Effect`` found them."""
    if where[0] == "one":
        return [params[where[1]]]
    if where[0] == "in":
        return list(params[where[1] : where[1] + where[2]])
    return list(params[where[1] :: where[2]])
