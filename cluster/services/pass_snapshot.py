"""The parts of the scheduler pass's snapshot that rarely change, kept between passes.

A pass reads the nodes, the partitions and the jobs holding resources (RUNNING, SUSPENDED,
COMPLETING ...) besides the queue.  At 10,000 nodes reading and converting the holding jobs
alone took 1.3-2.1 s of a pass, though between two of the simulator's event passes only a
few of them change.  ``resources()`` keeps the node views, the partition views and the
holding jobs' views and re-reads only the rows written since the last pass; ``fresh()``
reads everything, as every pass did before.

How the writes are seen: not by asking every writer to say what it changed (a missed one,
today or added later, would let a pass decide on a stale view), but below all of them.
Every statement a Django connection of this process runs passes through ``_watch`` (an
execute wrapper on every connection).  A statement that writes the node, partition or job
table is read once (its text is cached) for the rows it writes
(cluster/services/statement_effects.py): a write by primary key re-reads those rows, one
that sets no column a view holds changes nothing, anything else marks the whole table
changed (slower, never stale).  The rows are read and made into the core's views as a fresh
read makes them (cluster/services/snapshot_rows.py).

A node re-read in place keeps its index; a node added, removed or renamed re-reads the
nodes, the partitions and the holding jobs (their node indices moved).  A rollback of a
transaction or a savepoint forgets everything (what was read inside it may never have been
committed): ``config.sqlite.base`` calls ``forget``.  A write inside a transaction is marked
when it runs and again when the transaction commits, so a pass on another thread's
connection cannot take the mark of a write it cannot yet see.

The queue (the pending jobs not held) is kept the same way: a job row written is re-read
and goes to the holding jobs, the queue or neither by its state and hold.  Every pass read
and converted it (at 20,000 pending, most of a full pass's reading), and an event pass
asked each partition for its head, though between two passes a submission or a start
changes one or two of its rows.  The pass's own writes of reasons and priorities touch no
column either view reads.

What other parts of a pass read every time is kept the same way: a value until one of its
tables is written (``kept_value``; with ``fields``, until a write may change those
columns), rows of a table brought up to date from the rows written since (``kept_rows``;
``kept_by_key`` for a value of a few tables sharing one key, the jobs and their accounting).

The holding jobs' tuple is made anew only when one of them changed, and with it what changed
(``running_change``: the views gone and come since the last tuple), which the pass core
uses to bring what it keeps of the holding jobs up to date from those views alone.

Where it is exact: where every write to the database comes from this process through
Django, on a backend that reports rollbacks (config.sqlite, config.postgresql): the
simulator (one thread, its store in memory, ``keep()``) and bench.pass_service.  And where
the database itself logs the writes of every process (cluster/services/change_log.py): the
embedded controller's cycles and distributed mode's Celery processes run inside
``keep(live=True)``, and every use of what is kept first reads the log's entries since the
last look (the HTTP helper processes', the other servers' and workers', ``manage.py``'s
writes).  Where the log is not installed, ``keep(live=True)`` keeps nothing.  Outside
``keep()`` nothing is recorded.
"""

from __future__ import annotations

import bisect
import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from functools import cache
from typing import Any, TypeVar

from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections

from cluster.core import scheduler
from cluster.core.states import JobState
from cluster.models import Job, Node
from cluster.services import change_log, rows, statement_effects
from cluster.services.snapshot_rows import (
    HOLD_AT,
    HOLDING_FIELDS,
    HOLDING_STATES,
    JOB_FIELDS,
    NODE_FIELDS,
    PENDING_AT,
    PENDING_FIELDS,
    QUEUED,
    REASON_FIELDS,
    STATE_AT,
    Resources,
    fresh,
    holding_rows,
    holding_view,
    node_view,
    partition_views,
    pending_view,
    select_in,
)

log = logging.getLogger(__name__)
T = TypeVar("T")


# --------------------------------------------------------------------------- what changed

_ALL = None  # a whole table changed


class _Changes:
    """The rows written since the kept views were last brought up to date."""

    def __init__(self) -> None:
        self.forget()

    def forget(self) -> None:
        self.partitions = True
        self.nodes: set[int] | None = _ALL
        self.jobs: set[int] | None = _ALL
        self.reasons: set[int] | None = _ALL  # the jobs whose reason or priority was written

    def add(self, target: str, ids: Iterator[Any] | None) -> None:
        if target == "partition":
            self.partitions = True
            return
        name = {"node": "nodes", "job": "jobs", "reasons": "reasons"}[target]
        kept = getattr(self, name)
        if kept is _ALL:
            return
        if ids is None:
            setattr(self, name, _ALL)
        else:
            kept.update(ids)


_lock = threading.Lock()
_changes = _Changes()
_keeping = 0  # keep() depth: while 0 nothing is recorded or kept


# Every table's writes counted while keeping, for the values other parts of a pass keep
# between passes (``kept_value``); a rollback advances the epoch, which every key includes.
# For the values that read a few columns (``kept_value``'s ``fields``): the writes that
# may add, remove or change any row of a table (``_reshaped``: an INSERT, a DELETE, an
# UPDATE not read, another process's write) and the UPDATEs by the columns they set.
_generations: dict[str, int] = {}
_reshaped: dict[str, int] = {}
_columns_set: dict[tuple[str, str], int] = {}
_epoch_count = 0


# The rows kept by ``kept_rows`` and ``kept_by_key``, each name's: its tables and the
# columns it reads of each (its fields and its conditions'), the keys written since its
# last look (None: read everything again) and what it read.
class _RowsKept:
    def __init__(self, tables: dict[str, frozenset[str]]) -> None:
        self.tables = tables
        self.dirty: set[Any] | None = None
        self.rows: dict[Any, Any] = {}
        self.listed: list[tuple[Any, ...]] = []
        self.keys: list[Any] = []  # kept_rows: the listed rows' keys, ascending


def _listed(kept: _RowsKept, dirty: set[Any], read: list[tuple[Any, ...]]) -> tuple[list, list]:
    """``kept_rows``' rows by key after the ``dirty`` keys were read again (``read``, into
    ``kept.rows`` already), and their keys: the last lists copied and edited at those keys
    (new lists: callers compare them by identity), not every key sorted and looked up
    again (10,000 nodes kept by the power cycle, a few written between two cycles)."""
    keys = kept.keys
    if len(dirty) > len(keys) // 8 + 8:
        keys = sorted(kept.rows)
        return [kept.rows[key] for key in keys], keys
    keys, listed = keys.copy(), kept.listed.copy()
    for key in sorted({row[0] for row in read} | dirty):
        i = bisect.bisect_left(keys, key)
        here = i < len(keys) and keys[i] == key
        row = kept.rows.get(key)
        if row is None:
            if here:
                del keys[i], listed[i]
        elif here:
            listed[i] = row
        else:
            keys.insert(i, key)
            listed.insert(i, row)
    return listed, keys


_rows_kept: dict[str, _RowsKept] = {}
_rows_reading = threading.Lock()  # one kept_rows brought up to date at a time


def _rows_written(table: str, columns: frozenset[str] | None, ids: Any) -> None:
    """A write of ``table`` (under _lock): ``ids`` the rows (None: any), ``columns`` those
    set (None: any), marked for every ``kept_rows`` of that table that reads them."""
    for kept in _rows_kept.values():
        read = kept.tables.get(table)
        if read is None or kept.dirty is None:
            continue
        if columns is not None and not (columns & read):
            continue
        if ids is None:
            kept.dirty = None
        else:
            kept.dirty.update(ids)


def _count(table: str, columns: frozenset[str] | None) -> None:
    """One write of ``table`` counted (under _lock); ``columns`` those it sets, None: any."""
    _generations[table] = _generations.get(table, 0) + 1
    if columns is None:
        _reshaped[table] = _reshaped.get(table, 0) + 1
        return
    for column in columns:
        _columns_set[table, column] = _columns_set.get((table, column), 0) + 1


def forget() -> None:
    """A rollback: whatever was read may have been undone."""
    global _epoch_count  # noqa: PLW0603 - one count per process, under _lock
    with _lock:
        _changes.forget()
        _epoch_count += 1
        for kept in _rows_kept.values():
            kept.dirty = None
    _reader.restart()


# Live (embedded mode's SQLite file): the writes of other processes, from the database's
# own log (cluster/services/change_log.py), read before every use of what is kept.
_reader = change_log.Reader()
_live = False


def _catch_up() -> None:
    global _epoch_count  # noqa: PLW0603 - one count per process, under _lock
    if not _live:
        return
    found = _reader.poll()
    watched = statement_effects.watched_tables()
    with _lock:
        if found.everything:
            _changes.forget()
            _epoch_count += 1
            for kept in _rows_kept.values():
                kept.dirty = None
            return
        for table, ids in found.tables.items():
            _count(table, None)  # the log names rows, not columns
            _rows_written(table, None, ids)
            if table in watched:
                target = watched[table][0]
                _changes.add(target, ids)
                if target == "job":
                    _changes.add("reasons", ids)


def _count_writes(
    tables: tuple[str, ...],
    columns: frozenset[str] | None,
    keyed: Any = None,
    params: Any = None,
    many: bool = False,
) -> None:
    """The writes of one statement counted, and its rows marked for ``kept_rows``: ``keyed``
    where its ids are in ``params`` (statement_effects.keyed_rows; None: any row)."""
    global _epoch_count  # noqa: PLW0603 - one count per process, under _lock
    with _lock:
        if statement_effects.ANY_TABLE in tables:
            _epoch_count += 1
            for kept in _rows_kept.values():
                kept.dirty = None
            return
        for table in tables:
            _count(table, columns)
        if not _rows_kept:
            return
        ids = _written_ids(keyed, params, many) if keyed is not None and params is not None else None
        for table in tables:
            _rows_written(table, columns, ids)


def _written_ids(where: Any, params: Any, many: bool) -> list[Any] | None:
    """The row ids a statement's WHERE names with these parameters (each set of an
    executemany's); None when they cannot be read from them (all rows, then)."""
    try:
        if many:
            return [i for p in params for i in statement_effects.written_ids(where, p)]
        return statement_effects.written_ids(where, params)
    except (IndexError, TypeError, KeyError):
        return None


def _record(effect: statement_effects.Effect, params: Any, many: bool) -> None:
    with _lock:
        for target, where in effect:
            if target == "*":
                _changes.forget()
            elif where is None or params is None:
                _changes.add(target, None)
            else:
                _changes.add(target, _written_ids(where, params, many))


def _watch(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
    if not _keeping:
        return execute(sql, params, many, context)
    tables = statement_effects.tables_written(sql)
    if not tables:
        return execute(sql, params, many, context)
    effect = statement_effects.effect(sql)
    columns = statement_effects.columns_set(sql)
    keyed = statement_effects.keyed_rows(sql)
    if many:
        params = list(params)  # an iterator would be spent by the statement
    if not effect:
        try:
            return execute(sql, params, many, context)
        finally:
            _count_writes(tables, columns, keyed, params, many)
            conn = context["connection"]
            if conn.in_atomic_block:
                conn.on_commit(lambda: _count_writes(tables, columns, keyed, params, many))
    try:
        return execute(sql, params, many, context)
    finally:
        # After the statement: a pass that took the mark before it ran would re-read the
        # old row and lose the change.
        _record(effect, params, many)
        _count_writes(tables, columns, keyed, params, many)
        conn = context["connection"]
        if conn.in_atomic_block:
            conn.on_commit(
                lambda: (_record(effect, params, many), _count_writes(tables, columns, keyed, params, many))
            )


def watch(connection: Any, **_: Any) -> None:
    """Django's connection_created: watch the connection's statements and rollbacks (once)."""
    if _watch not in connection.execute_wrappers:
        connection.execute_wrappers.append(_watch)
    listeners = getattr(connection, "rollback_listeners", None)
    if listeners is not None and forget not in listeners:
        listeners.append(forget)


def _log_installed() -> bool:
    try:
        return change_log.installed()
    except DatabaseError as exc:  # the database not there yet: read everything, as before
        log.warning("the pass reads its whole snapshot every time: the change log unreadable: %s", exc)
        return False


_for_life = ExitStack()


def keep_live() -> None:
    """``keep(live=True)`` for the rest of this process (a Celery worker's pool process)."""
    _for_life.enter_context(keep(live=True))


@cache
def _logged() -> frozenset[str]:
    return frozenset(table for table, _keyed in change_log.project_tables())


@contextmanager
def keep(*, live: bool = False) -> Iterator[None]:
    """Keep the views between passes while inside.  The simulator's run: every writer of
    the database is in this process.  ``live`` (the embedded controller's cycles): other
    processes write too, and the views are kept only where the database logs every write
    (``change_log.installed``); elsewhere (PostgreSQL) nothing is kept."""
    global _keeping, _live  # noqa: PLW0603 - one kept snapshot per process
    if live and not _log_installed():
        yield
        return
    with _lock:
        if not _keeping:
            _changes.forget()
        _keeping += 1
        if live:
            _live = True
            _reader.restart()
    for conn in connections.all():
        watch(conn)
    try:
        yield
    finally:
        with _lock:
            _keeping = max(0, _keeping - 1)  # 0 in a child forked inside keep(): reset
            if not _keeping:
                _live = False
                _kept.clear()
                _values.clear()
                _reasons.clear()
                _rows_kept.clear()


# --------------------------------------------------------------------------- kept values

_values: dict[str, tuple[tuple[int, ...], Any]] = {}


@cache
def _columns_of(
    models: tuple[type[Any], ...], fields: tuple[str, ...]
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    return tuple((m._meta.db_table, tuple(m._meta.get_field(f).column for f in fields)) for m in models)


def kept_value(
    name: str, models: Sequence[type[Any]], compute: Callable[[], T], *, fields: Sequence[str] | None = None
) -> T:
    """``compute()``'s value, kept inside ``keep()`` until one of those models' tables is
    written or anything is rolled back; computed every call outside ``keep()``.

    For what a pass or cycle reads every time though it rarely changes (the HRES state, the
    limits' policy): the value must depend on nothing but those tables' rows, and callers
    must not change it (it is shared).  ``fields``: the value reads only these fields of
    the models' rows (each model has them all), so an UPDATE that sets none of them keeps
    it; a row added or removed, or a write not read column by column, does not."""
    if not _keeping:
        return compute()
    tables = [m._meta.db_table for m in models]
    if _live:
        if not _logged().issuperset(tables):
            return compute()
        _catch_up()
    with _lock:
        if fields is None:
            key = (_epoch_count, *(_generations.get(t, 0) for t in tables))
        else:
            key = (_epoch_count,)
            for table, columns in _columns_of(tuple(models), tuple(fields)):
                key += (_reshaped.get(table, 0), *(_columns_set.get((table, c), 0) for c in columns))
        held = _values.get(name)
    if held is not None and held[0] == key:
        return held[1]
    value = compute()
    with _lock:
        # Keyed by the counts taken before computing: a write meanwhile makes the next
        # call compute again.
        if _keeping:
            _values[name] = (key, value)
    return value


def kept_rows(name: str, model: type[Any], fields: Sequence[str], where: rows.Where) -> list[tuple[Any, ...]]:
    """``rows.select(model, fields, where, order_by=("id",))``, kept inside ``keep()`` and
    brought up to date by reading again only the rows written since the last call (by
    their ids, as the statement watch finds them in each write; a write naming no rows, a
    rollback or another process's write the log cannot name reads them all again).  A
    write that sets none of the fields' or the conditions' columns reads nothing.

    For the few rows of a large table that every pass reads, of which a pass changes one or
    two (the holding jobs with licenses, among thousands pending).  ``fields`` start with
    ``id``; the same list is returned while nothing changed (shared: read-only)."""
    if not _keeping:
        return rows.select(model, fields, where, order_by=("id",))
    table = model._meta.db_table
    if _live:
        if table not in _logged():
            return rows.select(model, fields, where, order_by=("id",))
        _catch_up()
    with _rows_reading:
        with _lock:
            kept = _rows_kept.get(name)
            if kept is None:
                kept = _rows_kept[name] = _RowsKept(
                    {table: _columns_read(model, tuple(fields), tuple(where))}
                )
            dirty, kept.dirty = kept.dirty, set()
        try:
            if dirty is None:
                found = rows.select(model, fields, where, order_by=("id",))
                kept.rows = {row[0]: row for row in found}
                kept.listed = found
                kept.keys = list(kept.rows)
            elif dirty:
                for key in dirty:
                    kept.rows.pop(key, None)
                read = select_in(model, fields, sorted(dirty), where)
                for row in read:
                    kept.rows[row[0]] = row
                kept.listed, kept.keys = _listed(kept, dirty, read)
        except BaseException:
            with _lock:
                kept.dirty = None
            raise
        return kept.listed


K = TypeVar("K")


def kept_by_key(
    name: str,
    tables: Sequence[tuple[type[Any], Sequence[str]]],
    read: Callable[[Sequence[Any] | None], Iterable[tuple[K, T]]],
) -> dict[K, T]:
    """``dict(read(None))``, kept inside ``keep()`` as ``kept_rows`` keeps rows: brought up
    to date by ``read(keys)`` of the keys written since, in any of ``tables`` (each model
    with the fields the value reads of it; a write of none of them reads nothing).

    For a value made of a few tables whose primary keys are one key (a table and the
    one-to-one table extending its rows: the jobs and their accounting).  ``read(keys)``
    gives the entries of those keys that are there now, ``read(None)`` every entry.  The
    same dict is returned while nothing it reads was written, a new one otherwise
    (shared: read-only; memos compare it by identity)."""
    if not _keeping:
        return dict(read(None))
    names = [model._meta.db_table for model, _ in tables]
    if _live:
        if not _logged().issuperset(names):
            return dict(read(None))
        _catch_up()
    with _rows_reading:
        with _lock:
            kept = _rows_kept.get(name)
            if kept is None:
                columns = {
                    model._meta.db_table: _columns_read(model, ("pk", *fields), ())
                    for model, fields in tables
                }
                kept = _rows_kept[name] = _RowsKept(columns)
            dirty, kept.dirty = kept.dirty, set()
        try:
            if dirty is None:
                kept.rows = dict(read(None))
            elif dirty:
                found = kept.rows.copy()
                for key in dirty:
                    found.pop(key, None)
                found.update(read(list(dirty)))
                kept.rows = found
        except BaseException:
            with _lock:
                kept.dirty = None
            raise
        return kept.rows


@cache
def _columns_read(model: type[Any], fields: tuple[str, ...], conditions: tuple[str, ...]) -> frozenset[str]:
    meta = model._meta
    return frozenset(
        meta.pk.column if f == "pk" else meta.get_field(f).column for f in (*fields, *conditions)
    )


# --------------------------------------------------------------------------- the kept views


class _Kept:
    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.names: list[str] = []
        self.index: dict[str, int] = {}
        self.node_pks: dict[int, int] = {}  # primary key -> index
        self.nodes: list[scheduler.NodeView] = []
        self.nodes_tuple: tuple[scheduler.NodeView, ...] = ()
        self.partitions: dict[str, scheduler.PartitionView] = {}
        self.running: dict[int, scheduler.JobView] = {}
        self.running_tuple: tuple[scheduler.JobView, ...] | None = None
        # What left and came since the last tuple (``base``, None when read whole), by
        # id(view), and the change from the last tuple to the one before it, handed to
        # the pass core (``running_change``) so that it brings what it keeps of the
        # holding jobs up to date by those views alone.
        self.base: tuple[scheduler.JobView, ...] | None = None
        self.gone: dict[int, scheduler.JobView] = {}
        self.came: dict[int, scheduler.JobView] = {}
        self.change: scheduler.RunningChange | None = None
        # The queue: views by id, and each partition's ids and every id in ascending order.
        self.queued: dict[int, scheduler.JobView] = {}
        self.queued_ids: list[int] = []
        self.queued_by_partition: dict[str, list[int]] = {}

    def read_nodes(self) -> bool:
        """All nodes read; whether their names or order changed."""
        found = rows.select(Node, ("id", *NODE_FIELDS), order_by=("name",))
        names = [row[1] for row in found]
        moved = names != self.names
        self.names = names
        self.index = {name: i for i, name in enumerate(names)}
        self.node_pks = {row[0]: i for i, row in enumerate(found)}
        self.nodes = [node_view(i, row[1:]) for i, row in enumerate(found)]
        return moved

    def reread_nodes(self, pks: set[int]) -> bool:
        """The nodes of those keys read again in place; False when one was added, removed
        or renamed (everything must be read)."""
        found = select_in(Node, ("id", *NODE_FIELDS), sorted(pks))
        if len(found) != len(pks):
            return False
        for row in found:
            i = self.node_pks.get(row[0])
            if i is None or self.names[i] != row[1]:
                return False
            self.nodes[i] = node_view(i, row[1:])
        return True

    def read_jobs(self, ids: set[int] | None) -> None:
        if ids is None:
            self.running = {row[0]: holding_view(row, self.index) for row in holding_rows()}
            self.queued, self.queued_ids, self.queued_by_partition = {}, [], {}
            for row in rows.select(Job, PENDING_FIELDS, QUEUED, order_by=("id",)):
                self._queue(pending_view(row))
            self.running_tuple = self.base = None
            self.gone, self.came = {}, {}
            return
        for job_id in ids:
            view = self.running.pop(job_id, None)
            if view is not None:
                self._left(view)
            self._unqueue(job_id)
        for row in select_in(Job, JOB_FIELDS, sorted(ids)):
            if row[STATE_AT] in HOLDING_STATES:
                view = self.running[row[0]] = holding_view(row[: len(HOLDING_FIELDS)], self.index)
                self._left(None)
                self.came[id(view)] = view
            elif row[STATE_AT] == JobState.PENDING and row[HOLD_AT] == "":
                self._queue(pending_view([row[i] for i in PENDING_AT]))

    def _left(self, view: scheduler.JobView | None) -> None:
        """The holding jobs change (``view`` leaves them): a new tuple for the next pass."""
        if self.running_tuple is not None:
            self.base, self.running_tuple = self.running_tuple, None
            self.gone, self.came = {}, {}
        if view is None:
            return
        if self.came.pop(id(view), None) is None:  # one that came since the base: gone again
            self.gone[id(view)] = view

    def running_views(self) -> tuple[scheduler.JobView, ...]:
        """The holding jobs' views by job id, the tuple kept until one of them changes."""
        if self.running_tuple is None:
            running = self.running
            result = self.running_tuple = tuple(map(running.__getitem__, sorted(running)))
            base = self.base
            self.change = (
                scheduler.RunningChange(base, result, tuple(self.gone.values()), tuple(self.came.values()))
                if base is not None
                else None
            )
            self.base = None
            self.gone, self.came = {}, {}
        return self.running_tuple

    def _queue(self, view: scheduler.JobView) -> None:
        self.queued[view.job_id] = view
        bisect.insort(self.queued_ids, view.job_id)
        bisect.insort(self.queued_by_partition.setdefault(view.partition, []), view.job_id)

    def _unqueue(self, job_id: int) -> None:
        view = self.queued.pop(job_id, None)
        if view is None:
            return
        for ids in (self.queued_ids, self.queued_by_partition[view.partition]):
            del ids[bisect.bisect_left(ids, job_id)]

    def queue(self, queue_depth: int | None) -> tuple[scheduler.JobView, ...]:
        """``read_queue``'s answer from the kept queue."""
        if queue_depth is None:
            ids = self.queued_ids
        else:
            ids = sorted(
                i for name in self.partitions for i in self.queued_by_partition.get(name, ())[:queue_depth]
            )
        return tuple(map(self.queued.__getitem__, ids))


_kept = _Kept()

# The reason, its detail and the priority of queued jobs as stored, for the pass's writes of
# them (``stored_reasons``); a job's entry is dropped when any statement writes one of these
# columns of its row, and everything on a rollback or a write of unknown rows.
_reasons: dict[int, tuple[str, str, int]] = {}


def stored_reasons(ids: Sequence[int]) -> dict[int, tuple[str, str, int]]:
    """job id -> (reason, reason_detail, priority) as the rows hold them now, for the jobs of
    ``ids`` that exist.  Inside ``keep()`` only the rows written since the last call (and
    those never asked for) are read: a pass's reasons and priorities mostly stay as the
    last pass wrote them, and reading every queued job's to find that out was most of the
    cost of writing them.  Elsewhere, all are read."""
    conn = connections[DEFAULT_DB_ALIAS]
    if not _keeping or forget not in getattr(conn, "rollback_listeners", ()):
        return {row[0]: row[1:] for row in select_in(Job, ("id", *REASON_FIELDS), sorted(ids))}
    with _refreshing:
        _catch_up()
        with _lock:
            dirty, _changes.reasons = _changes.reasons, set()
        try:
            if dirty is _ALL:
                _reasons.clear()
            else:
                for job_id in dirty:
                    _reasons.pop(job_id, None)
            unknown = sorted(i for i in ids if i not in _reasons)
            for row in select_in(Job, ("id", *REASON_FIELDS), unknown):
                _reasons[row[0]] = row[1:]
        except BaseException:
            forget()
            raise
        return {i: _reasons[i] for i in ids if i in _reasons}


_refreshing = threading.Lock()


def resources(*, queue: bool = False, queue_depth: int | None = None) -> Resources:
    """The kept views brought up to date inside ``keep()``; ``fresh()`` elsewhere.

    ``queue``: the kept queue's views too (``pending``; with ``queue_depth`` the first
    that many of each partition), as ``read_queue`` reads them."""
    conn = connections[DEFAULT_DB_ALIAS]
    if not _keeping or forget not in getattr(conn, "rollback_listeners", ()):
        return fresh()  # a backend that does not report its rollbacks
    with _refreshing:
        _catch_up()
        kept = _refresh()
        if queue:
            kept = replace(kept, pending=_kept.queue(queue_depth))
        return kept


def _refresh() -> Resources:
    with _lock:
        partitions, nodes, jobs = _changes.partitions, _changes.nodes, _changes.jobs
        _changes.partitions, _changes.nodes, _changes.jobs = False, set(), set()
    try:
        moved = False
        if nodes is _ALL or (nodes and not _kept.reread_nodes(nodes)):
            moved = _kept.read_nodes()
            _kept.nodes_tuple = ()
        elif nodes:
            _kept.nodes_tuple = ()
        if not _kept.nodes_tuple:
            _kept.nodes_tuple = tuple(_kept.nodes)
        if partitions or moved:
            _kept.partitions = partition_views(_kept.index)
        if moved:
            jobs = _ALL
        if jobs is _ALL or jobs:
            _kept.read_jobs(jobs)
        running = _kept.running_views()
    except BaseException:
        forget()
        raise
    return Resources(
        names=list(_kept.names),
        nodes=_kept.nodes_tuple,
        partitions=dict(_kept.partitions),
        running=running,
    )


def running_change(running: tuple[scheduler.JobView, ...]) -> scheduler.RunningChange | None:
    """How ``running`` (a tuple ``resources()`` handed out) came from the one before it,
    when it is the latest and was not read whole."""
    change = _kept.change
    return change if change is not None and change.result is running else None


def _after_fork_in_child() -> None:
    """A forked process (a Celery pool's replacement child) starts with nothing kept and
    its own locks: one another thread held at the fork would never be released in it."""
    global _lock, _refreshing, _rows_reading, _reader, _keeping, _live, _for_life  # noqa: PLW0603 - reset in the child
    _lock = threading.Lock()
    _refreshing = threading.Lock()
    _rows_reading = threading.Lock()
    _reader = change_log.Reader()
    _keeping = 0
    _live = False
    _for_life = ExitStack()
    _changes.forget()
    _kept.clear()
    _values.clear()
    _reasons.clear()
    _rows_kept.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)
