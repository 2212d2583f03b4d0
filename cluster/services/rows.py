"""Reading and writing rows on the hot paths without the ORM's query compiler.

Compiling a queryset costs far more than running it: on SQLite an ORM ``get()`` or
one-row ``bulk_create`` takes 0.3 to 0.6 ms of Python, the statement itself tens of
microseconds.  The submission path (hundreds per second) and the scheduler's writes use
these helpers; the SQL is built from the models' metadata, and values go through each
field's own ``get_db_prep_save``, so both backends (SQLite, PostgreSQL) get what the ORM
would have sent.

``update_rows``: Django's ``bulk_update`` builds one ``CASE WHEN id=...`` expression per
field and row: for the scheduler's few dozen rows that costs several times more than
plain one-row UPDATEs (measured: 23 ms against 4 ms for 30 jobs and 7 fields on SQLite),
and an ORM ``update()`` per row still compiles one query per row: one statement run
for every row (``executemany``) costs a fraction of either.

``select`` and ``load`` read as a queryset's ``values_list`` and ``only`` do, values
converted by the same converters, without compiling a query.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection, connections, models, transaction
from psycopg import _queries as _psycopg_queries


def table(model: type[models.Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def column(model: type[models.Model], name: str) -> str:
    return connection.ops.quote_name(model._meta.get_field(name).column)


# Every statement below is assembled from the models' metadata only; values are parameters.

Where = Mapping[str, Any]
"""field name (or ``pk``) -> a value (``=``; None: ``IS NULL``) or a list, tuple or set of
values (``IN``; empty: no row matches), conditions joined by AND."""


def _field(model: type[models.Model], name: str) -> models.Field:
    return model._meta.pk if name == "pk" else model._meta.get_field(name)


_Plan = tuple[str, list[tuple[int, Any, list[Any]]]]  # SQL, and (column, expression, converters)
# Per connection: converters are bound to its operations (SQLite's use its time zone).
_PLANS: weakref.WeakKeyDictionary[Any, dict[tuple[Any, ...], _Plan]] = weakref.WeakKeyDictionary()
_PLANS_KEPT = 512  # shapes per connection (IN lists of every length count apart)


def _shape(where: Where | None) -> tuple[tuple[str, int], ...] | None:
    """Each condition's field and kind: a list's length, -1 for a value, -2 for None;
    None when a condition matches no row (an empty list)."""
    shape = []
    for name, value in (where or {}).items():
        if isinstance(value, list | tuple | set | frozenset):
            if not value:
                return None
            shape.append((name, len(value)))
        else:
            shape.append((name, -2 if value is None else -1))
    return tuple(shape)


def _where_sql(model: type[models.Model], shape: tuple[tuple[str, int], ...], quote: Any) -> str:
    parts = []
    for name, kind in shape:
        col = quote(_field(model, name).column)
        if kind >= 0:
            parts.append(f"{col} IN ({', '.join(['%s'] * kind)})")
        else:
            parts.append(f"{col} IS NULL" if kind == -2 else f"{col} = %s")
    return " WHERE " + " AND ".join(parts) if parts else ""


def _where_params(model: type[models.Model], where: Where | None, conn: Any) -> list[Any]:
    params = []
    for name, value in (where or {}).items():
        prep = _field(model, name).get_db_prep_value
        if isinstance(value, list | tuple | set | frozenset):
            params += [prep(v, conn) for v in value]
        elif value is not None:
            params.append(prep(value, conn))
    return params


def _select_plan(conn: Any, key: tuple[Any, ...]) -> _Plan:
    plans = _PLANS.get(conn)
    if plans is None or len(plans) > _PLANS_KEPT:
        plans = _PLANS[conn] = {}
    plan = plans.get(key)
    if plan is None:
        model, fields, shape, order_by, limit, for_update = key
        quote = conn.ops.quote_name
        targets = tuple(_field(model, f) for f in fields)
        columns = ", ".join(quote(f.column) for f in targets)
        sql = f"SELECT {columns} FROM {quote(model._meta.db_table)}{_where_sql(model, shape, quote)}"  # noqa: S608
        if order_by:
            sql += " ORDER BY " + ", ".join(
                f"{quote(_field(model, o.lstrip('-')).column)}{' DESC' if o.startswith('-') else ''}"
                for o in order_by
            )
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        if for_update and conn.features.has_select_for_update:
            sql += " FOR UPDATE"
        converters = []
        for i, field in enumerate(targets):
            col = field.cached_col
            found = conn.ops.get_db_converters(col) + field.get_db_converters(conn)
            if found:
                converters.append((i, col, found))
        plan = plans[key] = (sql, converters)
    return plan


def select(
    model: type[models.Model],
    fields: Sequence[str],
    where: Where | None = None,
    *,
    order_by: Sequence[str] = (),
    limit: int | None = None,
    for_update: bool = False,
) -> list[tuple[Any, ...]]:
    """Rows of the named fields, converted as ``values_list`` converts them (JSON decoded,
    SQLite's datetimes parsed).  ``order_by``: field names, ``-`` for descending;
    ``for_update`` locks the rows where the database can (PostgreSQL)."""
    shape = _shape(where)
    if shape is None:
        return []
    conn = connections[DEFAULT_DB_ALIAS]
    sql, converters = _select_plan(conn, (model, tuple(fields), shape, tuple(order_by), limit, for_update))
    with conn.cursor() as cursor:
        cursor.execute(sql, _where_params(model, where, conn))
        fetched = cursor.fetchall()
    if not converters:
        return [tuple(row) for row in fetched]
    out = []
    for row in fetched:
        values = list(row)
        for i, col, found in converters:
            value = values[i]
            for convert in found:
                value = convert(value, col, conn)
            values[i] = value
        out.append(tuple(values))
    return out


def load(
    model: type[models.Model],
    fields: Sequence[str] | None,
    where: Where | None = None,
    *,
    order_by: Sequence[str] = (),
    for_update: bool = False,
) -> list[Any]:
    """Model instances with the named fields (all when None) read, as ``only()`` gives them:
    reading a field left out costs a query, and ``save()`` writes only what was read or set."""
    wanted = None if fields is None else {_field(model, f).attname for f in fields} | {model._meta.pk.attname}
    names = [f.attname for f in model._meta.concrete_fields if wanted is None or f.attname in wanted]
    alias = connections[DEFAULT_DB_ALIAS].alias
    found = select(model, names, where, order_by=order_by, for_update=for_update)
    return [model.from_db(alias, names, row) for row in found]


def update_rows(rows: Iterable[models.Model], fields: Sequence[str]) -> int:
    """Write the named fields of each instance to its row (no signals, no ``auto_now``:
    as a queryset's ``update()``), one statement run for every row."""
    rows = list(rows)
    if not rows:
        return 0
    model = type(rows[0])
    conn = connections[DEFAULT_DB_ALIAS]
    quote = conn.ops.quote_name
    targets = [_field(model, f) for f in fields]
    pk = model._meta.pk
    sets = ", ".join(f"{quote(f.column)} = %s" for f in targets)
    sql = f"UPDATE {quote(model._meta.db_table)} SET {sets} WHERE {quote(pk.column)} = %s"  # noqa: S608
    params = [[f.get_db_prep_save(getattr(row, f.attname), conn) for f in targets] + [row.pk] for row in rows]
    _run(conn, sql, params)
    return len(rows)


def _run(conn: Any, sql: str, params: list[list[Any]]) -> None:
    """One statement for every parameter row.  A single row (the submission path's job and
    event) is executed plainly: psycopg's ``executemany`` enters and leaves pipeline mode
    for it (measured on PostgreSQL: 56 against 39 us of CPU, 225 against 198 us wall)."""
    with conn.cursor() as cursor:
        if len(params) == 1:
            cursor.execute(sql, params[0])
        else:
            cursor.executemany(sql, params)


def update_where(model: type[models.Model], values: Mapping[str, Any], where: Where) -> int:
    """``filter(**where).update(**values)`` for plain values; returns the rows changed."""
    shape = _shape(where)
    if shape is None:
        return 0
    conn = connections[DEFAULT_DB_ALIAS]
    quote = conn.ops.quote_name
    targets = [(_field(model, name), value) for name, value in values.items()]
    sets = ", ".join(f"{quote(f.column)} = %s" for f, _ in targets)
    params = [f.get_db_prep_save(v, conn) for f, v in targets] + _where_params(model, where, conn)
    sql = f"UPDATE {quote(model._meta.db_table)} SET {sets}{_where_sql(model, shape, quote)}"  # noqa: S608
    with conn.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


def _left_to_database(f: models.Field) -> bool:
    """A column the database fills as the ORM would: nullable, no default in Python or in
    the schema, so NULL either way."""
    return f.null and not f.has_default() and f.db_default is models.NOT_PROVIDED and not f.primary_key


class Sql(str):
    """A value written as SQL, not sent as a parameter: an expression of the caller's,
    built from models' metadata, never from anything a user gave (``insert_together``)."""


@cache
def _insert_sql(
    model: type[models.Model], given: frozenset[str], vendor: str, written: tuple[tuple[str, str], ...] = ()
) -> tuple[str, tuple[models.Field, ...]]:
    """The INSERT of one row giving `given` (``written``: field name -> its SQL), and the
    fields whose values are its parameters, in order."""
    # Columns no row gives and the database fills with NULL are left out: the job has 51
    # columns, and psycopg caches its parsing of a statement of at most 50 parameters only
    # (re-parsed, it was a fifth of a submission's time in the server).
    with_pk = model._meta.pk.name in given or model._meta.pk.attname in given
    fields = tuple(
        f
        for f in model._meta.concrete_fields
        if (with_pk or not f.primary_key)
        and (f.name in given or f.attname in given or not _left_to_database(f))
    )
    sql_of = dict(written)
    quote = connection.ops.quote_name
    columns = ", ".join(quote(f.column) for f in fields)
    marks = ", ".join(sql_of.get(f.name, "%s") for f in fields)
    params = tuple(f for f in fields if f.name not in sql_of)
    return f"INSERT INTO {table(model)} ({columns}) VALUES ({marks})", params  # noqa: S608


@cache
def _field_names(model: type[models.Model]) -> frozenset[str]:
    return frozenset(n for f in model._meta.concrete_fields for n in (f.name, f.attname))


def _row_values(row: Mapping[str, Any], fields: Sequence[models.Field], conn: Any) -> list[Any]:
    values = []
    for f in fields:
        if f.name in row:
            value = row[f.name]
            if isinstance(value, models.Model):
                value = value.pk
        elif f.attname in row:
            value = row[f.attname]
        else:
            value = f.get_default()
        values.append(f.get_db_prep_save(value, conn))
    return values


def insert_values(model: type[models.Model], rows: Sequence[Mapping[str, Any]], batch: int = 500) -> None:
    """INSERT rows given as field name -> value maps, without building model instances
    (for a model of forty fields, as costly as the statement), ``batch`` rows a statement.
    A foreign key is given as its instance or its ``<name>_id``; a field left out takes its
    default; either every row gives the primary key or none does."""
    if not rows:
        return
    given = frozenset().union(*rows)
    unknown = given - _field_names(model)
    if unknown:
        raise TypeError(f"{model.__name__} has no field {', '.join(sorted(unknown))}")
    conn = connections[DEFAULT_DB_ALIAS]
    sql, fields = _insert_sql(model, given, conn.vendor)
    params = [_row_values(row, fields, conn) for row in rows]
    for start in range(0, len(params), batch):
        _run(conn, sql, params[start : start + batch])


Rows = Sequence[Mapping[str, Any]]


def insert_together(
    parts: Sequence[tuple[type[models.Model], Rows]], *, first: str | None = None
) -> tuple[Any, ...] | None:
    """``insert_values`` of each (model, rows), all or none stored; a value may be ``Sql``.
    ``first``: a statement (of the caller's SQL, no parameters) run before them in the same
    transaction, whose first row is returned (None without it).

    A submission's job and its first event, on PostgreSQL outside a transaction, go as one
    message of several statements, which PostgreSQL runs as one transaction: one round
    trip where BEGIN, an INSERT per model and COMMIT took four (each a wake-up of both
    processes: a third of a submission's round trips). Anything else (SQLite, an open
    transaction, server-side binding, which sends one statement a message, or several
    rows of a model) takes a transaction of Django's.
    """
    conn = connections[DEFAULT_DB_ALIAS]
    if one_message(conn) and all(len(rows) == 1 for _, rows in parts):
        statements, params = [first] if first else [], []
        for model, rows in parts:
            sql, values = _one_insert(model, rows[0], conn)
            statements.append(sql)
            params += values
        with conn.cursor() as cursor:
            cursor.execute("; ".join(statements), params)
            return cursor.fetchone() if first else None
    with transaction.atomic(savepoint=False):
        found = _fetch_one(first, []) if first else None
        for model, rows in parts:
            if any(isinstance(v, Sql) for row in rows for v in row.values()):
                with conn.cursor() as cursor:
                    for row in rows:
                        cursor.execute(*_one_insert(model, row, conn))
            else:
                insert_values(model, rows)
        return found


def _one_insert(model: type[models.Model], row: Mapping[str, Any], conn: Any) -> tuple[str, list[Any]]:
    given = frozenset(row)
    unknown = given - _field_names(model)
    if unknown:
        raise TypeError(f"{model.__name__} has no field {', '.join(sorted(unknown))}")
    written = tuple(sorted((k, v) for k, v in row.items() if isinstance(v, Sql)))
    sql, fields = _insert_sql(model, given, conn.vendor, written)
    return sql, _row_values(row, fields, conn)


# psycopg parses a statement's placeholders on every execute unless it has at most this
# many parameters, then it keeps the parse in a 128-entry LRU keyed by the statement's
# text. A submission's message has 57 (48 of the job, 9 of its event), and its parse was
# half of the time the statement took in the server: let it in. The statements here are a
# few shapes of bounded length (the cache also takes none over 4 kB), so memory stays
# bounded. A name psycopg no longer has is left alone: only speed depends on it.
_PSYCOPG_PARSE_CACHE_PARAMS = 64
if (
    getattr(_psycopg_queries, "MAX_CACHED_STATEMENT_PARAMS", _PSYCOPG_PARSE_CACHE_PARAMS)
    < _PSYCOPG_PARSE_CACHE_PARAMS
):
    _psycopg_queries.MAX_CACHED_STATEMENT_PARAMS = _PSYCOPG_PARSE_CACHE_PARAMS


def one_message(conn: Any = None) -> bool:
    """Whether ``insert_together`` sends its statements as one message."""
    conn = conn or connections[DEFAULT_DB_ALIAS]
    return (
        conn.vendor == "postgresql"
        and conn.get_autocommit()
        and not conn.in_atomic_block
        and not conn.settings_dict.get("OPTIONS", {}).get("server_side_binding")
    )


def _fetch_one(sql: str, params: Sequence[Any]) -> tuple[Any, ...] | None:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()


def count_in(model: type[models.Model], field: str, values: Sequence[Any]) -> int:
    """How many rows have ``field`` among ``values``."""
    where = {field: list(values)}
    shape = _shape(where)
    if shape is None:
        return 0
    conn = connections[DEFAULT_DB_ALIAS]
    sql = f"SELECT COUNT(*) FROM {table(model)}{_where_sql(model, shape, conn.ops.quote_name)}"  # noqa: S608
    row = _fetch_one(sql, _where_params(model, where, conn))
    return row[0] if row else 0


@cache
def _add_sql(model: type[models.Model], field: str, vendor: str) -> str:
    col = column(model, field)
    return (
        f"UPDATE {table(model)} SET {col} = {col} + %s "  # noqa: S608
        f"WHERE {column(model, model._meta.pk.name)} = %s RETURNING {col}"
    )


def add_returning(model: type[models.Model], pk: Any, field: str, amount: int) -> Any | None:
    """Add ``amount`` to one row's ``field`` and return the new value (None: no such row),
    one statement under the row's lock (UPDATE ... RETURNING: SQLite >= 3.35, PostgreSQL)."""
    row = _fetch_one(_add_sql(model, field, connection.vendor), [amount, pk])
    return row[0] if row else None
