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

import enum
import weakref
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection, connections, models, transaction


def table(model: type[models.Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def column(model: type[models.Model], name: str) -> str:
    return connection.ops.quote_name(model._meta.get_field(name).column)


# Every statement below is assembled from the models' metadata only; values are parameters.

Where = Mapping[str, Any]
"""field name (or ``pk``) -> a value (``=``; None: ``IS NULL``), a list, tuple or set of
values (``IN``; empty: no row matches), ``Not(value)`` or ``Above(value)``; conditions
joined by AND."""


class Not:
    """``exclude(field=value)``: the rows whose field is not ``value`` (``Not(None)``: IS NOT
    NULL). As the ORM's exclude, a NULL counts as different from any value."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


class Above:
    """``filter(field__gt=value)``: a NULL is not above anything."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        if value is None:
            raise ValueError("Above(None) matches no row")
        self.value = value


# A condition's kind in a statement's shape: IN lists count their values (>= 0).
_EQ, _NULL, _NOT, _NOT_NULL, _ABOVE = -1, -2, -3, -4, -5


def _field(model: type[models.Model], name: str) -> models.Field:
    return model._meta.pk if name == "pk" else model._meta.get_field(name)


_Plan = tuple[str, list[tuple[int, Any, list[Any]]]]  # SQL, and (column, expression, converters)
# Per connection: converters are bound to its operations (SQLite's use its time zone).
_PLANS: weakref.WeakKeyDictionary[Any, dict[tuple[Any, ...], _Plan]] = weakref.WeakKeyDictionary()
_PLANS_KEPT = 512  # shapes per connection (IN lists of every length count apart)


def _shape(where: Where | None) -> tuple[tuple[str, int], ...] | None:
    """Each condition's field and kind: a list's length, else one of the kinds above;
    None when a condition matches no row (an empty list)."""
    shape = []
    for name, value in (where or {}).items():
        if isinstance(value, list | tuple | set | frozenset):
            if not value:
                return None
            shape.append((name, len(value)))
        elif isinstance(value, Not):
            shape.append((name, _NOT_NULL if value.value is None else _NOT))
        elif isinstance(value, Above):
            shape.append((name, _ABOVE))
        else:
            shape.append((name, _NULL if value is None else _EQ))
    return tuple(shape)


def _where_sql(model: type[models.Model], shape: tuple[tuple[str, int], ...], quote: Any) -> str:
    parts = _conditions(model, shape, quote)
    return " WHERE " + " AND ".join(parts) if parts else ""


def _conditions(model: type[models.Model], shape: tuple[tuple[str, int], ...], quote: Any) -> list[str]:
    parts = []
    for name, kind in shape:
        field = _field(model, name)
        col = quote(field.column)
        if kind >= 0:
            parts.append(f"{col} IN ({', '.join(['%s'] * kind)})")
        elif kind == _EQ:
            parts.append(f"{col} = %s")
        elif kind == _NULL:
            parts.append(f"{col} IS NULL")
        elif kind == _NOT_NULL:
            parts.append(f"{col} IS NOT NULL")
        elif kind == _NOT:
            parts.append(f"({col} <> %s OR {col} IS NULL)" if field.null else f"{col} <> %s")
        else:
            parts.append(f"{col} > %s")
    return parts


def _where_params(model: type[models.Model], where: Where | None, conn: Any) -> list[Any]:
    params = []
    for name, value in (where or {}).items():
        prep = _field(model, name).get_db_prep_value
        if isinstance(value, list | tuple | set | frozenset):
            params += [prep(v, conn) for v in value]
        elif isinstance(value, Not | Above):
            if value.value is not None:
                params.append(prep(value.value, conn))
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
        plan = plans[key] = (sql, _converters(conn, targets))
    return plan


def _converters(conn: Any, targets: Sequence[models.Field]) -> list[tuple[int, Any, list[Any]]]:
    converters = []
    for i, field in enumerate(targets):
        col = field.cached_col
        found = conn.ops.get_db_converters(col) + field.get_db_converters(conn)
        if found:
            converters.append((i, col, found))
    return converters


def _converted(
    fetched: list[Any], converters: list[tuple[int, Any, list[Any]]], conn: Any
) -> list[tuple[Any, ...]]:
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
    return _converted(fetched, converters, conn)


def select_sql(
    model: type[models.Model], fields: Sequence[str], where_sql: str, params: Sequence[Any]
) -> list[tuple[Any, ...]]:
    """``select`` with the caller's WHERE clause (``where_sql``, without the keyword; built
    from the models' metadata, values as ``params``), for a condition ``Where`` cannot
    say (an OR, two columns compared)."""
    conn = connections[DEFAULT_DB_ALIAS]
    quote = conn.ops.quote_name
    targets = [_field(model, f) for f in fields]
    columns = ", ".join(quote(f.column) for f in targets)
    sql = f"SELECT {columns} FROM {quote(model._meta.db_table)} WHERE {where_sql}"  # noqa: S608
    with conn.cursor() as cursor:
        cursor.execute(sql, params)
        fetched = cursor.fetchall()
    return _converted(fetched, _converters(conn, targets), conn)


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


def update_rows(rows: Iterable[models.Model], fields: Sequence[str], *, only_if: Where | None = None) -> int:
    """Write the named fields of each instance to its row (no signals, no ``auto_now``:
    as a queryset's ``update()``), one statement run for every row.

    ``only_if``: conditions the row must still meet when it is written (values, not
    lists): a row changed meanwhile by another transaction is left as that one made it.
    PostgreSQL checks them again on the newest version of a row it had to wait for."""
    rows = list(rows)
    if not rows:
        return 0
    model = type(rows[0])
    attnames = [_field(model, f).attname for f in fields]
    values = [(row.pk, *(getattr(row, a) for a in attnames)) for row in rows]
    return update_values(model, fields, values, only_if=only_if)


def update_values(
    model: type[models.Model],
    fields: Sequence[str],
    values: Iterable[Sequence[Any]],
    *,
    only_if: Where | None = None,
) -> int:
    """``update_rows`` of rows given as (primary key, each field's value): no model
    instance built (a job's costs more than its statement)."""
    values = list(values)
    if not values:
        return 0
    conn = connections[DEFAULT_DB_ALIAS]
    quote = conn.ops.quote_name
    targets = [_field(model, f) for f in fields]
    pk = model._meta.pk
    sets = ", ".join(f"{quote(f.column)} = %s" for f in targets)
    shape = _shape(only_if) or ()
    if any(kind >= 0 for _, kind in shape):
        raise ValueError("only_if takes single values")
    where = " AND ".join([f"{quote(pk.column)} = %s", *_conditions(model, shape, quote)])
    sql = f"UPDATE {quote(model._meta.db_table)} SET {sets} WHERE {where}"  # noqa: S608
    extra = _where_params(model, only_if, conn)
    preps = [_Prepared(f, conn) for f in targets]
    params = [[p(v) for p, v in zip(preps, row[1:], strict=True)] + [row[0], *extra] for row in values]
    _run(conn, sql, params)
    return len(values)


_BY_VALUE = frozenset({str, int, bool, type(None)})


class _Prepared:
    """A field's ``get_db_prep_save``, each value prepared once per statement: the rows of a
    pass that starts thousands of jobs share most values (the state, the start time, an
    empty reason), and preparing each again was a fifth of writing them.

    A value is the same as one prepared before when it is the same object, or an equal
    plain scalar or enum member of the same type (``True`` is not ``1``, nor ``"1"``), or
    an empty dict or list; anything else (a datetime, a non-empty dict) only when it is the
    same object."""

    __slots__ = ("conn", "field", "memo")

    def __init__(self, field: models.Field, conn: Any) -> None:
        self.field, self.conn = field, conn
        self.memo: dict[Any, Any] = {}

    def __call__(self, value: Any) -> Any:
        kind = type(value)
        if kind in _BY_VALUE or isinstance(value, enum.Enum):
            key: Any = (kind, value)
        elif (kind is dict or kind is list) and not value:
            key = kind
        else:
            key = id(value)
        try:
            return self.memo[key][1]
        except KeyError:
            prepared = self.field.get_db_prep_save(value, self.conn)
            # The value is kept with it: an object freed meanwhile could hand its id on.
            self.memo[key] = (value, prepared)
            return prepared


# Plain scalars prepared before, per connection: (id(field), type, value) -> (field, prepared).
_SAVED: weakref.WeakKeyDictionary[Any, dict[tuple[int, type, Any], tuple[models.Field, Any]]] = (
    weakref.WeakKeyDictionary()
)
_SAVED_KEPT = 4096  # entries per connection; emptied when full
_SAVED_LONGEST = 256  # characters of a text kept (a script is prepared afresh)


def _kept(conn: Any) -> dict[tuple[int, type, Any], tuple[models.Field, Any]]:
    """The connection's kept values (``_saved``): looked up once a row, not once a value
    (a weak dictionary's lookup makes a weak reference each time)."""
    saved = _SAVED.get(conn)
    if saved is None:
        saved = _SAVED[conn] = {}
    return saved


def _saved(field: models.Field, value: Any, conn: Any, saved: dict | None = None) -> Any:
    """``field.get_db_prep_save(value, conn)``, kept for the next row of another statement
    when ``value`` is a plain scalar: a submission's job row is a statement of its own, and
    most of its fifty values are the same empty text, zero or False at every submission
    (preparing each through the field's methods was a sixth of storing the job).  The same
    scalar of the same type prepares to the same value (``True`` is not ``1``); text is
    kept up to a length only."""
    kind = type(value)
    if (
        kind not in _BY_VALUE
        or (kind is str and len(value) > _SAVED_LONGEST)
        or isinstance(field, models.DateField)
    ):
        # A date field warns of a naive time given as text at every call: left as it is.
        return field.get_db_prep_save(value, conn)
    if saved is None:
        saved = _kept(conn)
    key = (id(field), kind, value)
    found = saved.get(key)
    if found is not None and found[0] is field:  # the id of a field freed meanwhile is another's
        return found[1]
    prepared = field.get_db_prep_save(value, conn)
    if len(saved) >= _SAVED_KEPT:
        saved.clear()
    saved[key] = (field, prepared)
    return prepared


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


def _row_values(
    row: Mapping[str, Any],
    fields: Sequence[models.Field],
    conn: Any,
    preps: Sequence[_Prepared] | None = None,
) -> list[Any]:
    values = []
    saved = _kept(conn) if preps is None else None
    for k, f in enumerate(fields):
        if f.name in row:
            value = row[f.name]
            if isinstance(value, models.Model):
                value = value.pk
        elif f.attname in row:
            value = row[f.attname]
        else:
            value = f.get_default()
        values.append(_saved(f, value, conn, saved) if preps is None else preps[k](value))
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
    # One row (a submission's job, its event): nothing for a statement's memo to share.
    preps = [_Prepared(f, conn) for f in fields] if len(rows) > 1 else None
    params = [_row_values(row, fields, conn, preps) for row in rows]
    for start in range(0, len(params), batch):
        _run(conn, sql, params[start : start + batch])


def upsert_values(model: type[models.Model], fields: Sequence[str], values: Iterable[Sequence[Any]]) -> None:
    """INSERT rows given as (primary key, each field's value); a row whose key is there
    already takes those values instead (``bulk_create(update_conflicts=True)`` without
    its model instances): one statement run for every row."""
    values = list(values)
    if not values:
        return
    conn = connections[DEFAULT_DB_ALIAS]
    quote = conn.ops.quote_name
    pk = model._meta.pk
    targets = [_field(model, f) for f in fields]
    columns = ", ".join(quote(f.column) for f in (pk, *targets))
    marks = ", ".join(["%s"] * (len(targets) + 1))
    sets = ", ".join(f"{quote(f.column)} = excluded.{quote(f.column)}" for f in targets)
    sql = (
        f"INSERT INTO {quote(model._meta.db_table)} ({columns}) VALUES ({marks}) "  # noqa: S608
        f"ON CONFLICT ({quote(pk.column)}) DO UPDATE SET {sets}"
    )
    preps = [_Prepared(f, conn) for f in (pk, *targets)]
    _run(conn, sql, [[p(v) for p, v in zip(preps, row, strict=True)] for row in values])


Rows = Sequence[Mapping[str, Any]]


def insert_together(
    parts: Sequence[tuple[type[models.Model], Rows]], *, first: tuple[str, Sequence[Any]] | None = None
) -> tuple[Any, ...] | None:
    """``insert_values`` of each (model, rows), all or none stored.

    A submission's job and its first event, on PostgreSQL outside a transaction, go as one
    message of several statements, which PostgreSQL runs as one transaction: one round
    trip where BEGIN, an INSERT per model and COMMIT took four (each a wake-up of both
    processes: a third of a submission's round trips). Anything else (SQLite, an open
    transaction, server-side binding, which sends one statement a message, or several
    rows of a model) takes a transaction of Django's.

    In one message only (``one_message()``, one row a model): ``first`` is a statement and
    its parameters run before the inserts, whose first row is returned, and a value may be
    ``Sql`` (an expression reading what ``first`` wrote).
    """
    conn = connections[DEFAULT_DB_ALIAS]
    single = all(len(rows) == 1 for _, rows in parts)
    if not (one_message(conn) and single):
        if first is not None:
            raise ValueError("insert_together: `first` needs one message")
        with transaction.atomic(savepoint=False):
            for model, rows in parts:
                insert_values(model, rows)
        return None
    statements, params = [], []
    if first is not None:
        statements.append(first[0])
        params += first[1]
    for model, rows in parts:
        sql, values = _one_insert(model, rows[0], conn)
        statements.append(sql)
        params += values
    with conn.cursor() as cursor:
        cursor.execute("; ".join(statements), params)
        return cursor.fetchone() if first is not None else None


def _one_insert(model: type[models.Model], row: Mapping[str, Any], conn: Any) -> tuple[str, list[Any]]:
    given = frozenset(row)
    unknown = given - _field_names(model)
    if unknown:
        raise TypeError(f"{model.__name__} has no field {', '.join(sorted(unknown))}")
    written = tuple(sorted((k, v) for k, v in row.items() if isinstance(v, Sql)))
    sql, fields = _insert_sql(model, given, conn.vendor, written)
    return sql, _row_values(row, fields, conn)


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
    col, pk = column(model, field), column(model, model._meta.pk.name)
    return (
        f"INSERT INTO {table(model)} ({pk}, {col}) VALUES (%s, %s) "  # noqa: S608
        f"ON CONFLICT ({pk}) DO UPDATE SET {col} = {table(model)}.{col} + %s RETURNING {col}"
    )


def add_returning_sql(model: type[models.Model], pk: Any, field: str, amount: int) -> tuple[str, list[Any]]:
    """The statement of ``add_returning``, to run in a message of several (``insert_together``)."""
    start = model._meta.get_field(field).get_default()
    return _add_sql(model, field, connection.vendor), [pk, start + amount, amount]


def add_returning(model: type[models.Model], pk: Any, field: str, amount: int) -> Any:
    """Add ``amount`` to one row's ``field`` and return the new value; a missing row is made
    at the field's default plus ``amount`` (a counter row of that one field). One statement
    under the row's lock (an upsert with RETURNING: SQLite >= 3.35, PostgreSQL)."""
    row = _fetch_one(*add_returning_sql(model, pk, field, amount))
    assert row is not None  # the upsert returns its row
    return row[0]
