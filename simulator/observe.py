"""The event log (simulator.records' kinds), read from what the live services wrote.

Starts are seen as the agents see them (a launch); everything else is read back from the
store after each virtual instant: the jobs that ended (their state as the controller
recorded it), nodes whose state changed, pending jobs whose reason changed, HRES layers
whose use changed (hres' own state).
"""

from __future__ import annotations

import json
from functools import cache, lru_cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.db import connection

from cluster.core.hostlists import expand
from cluster.core.states import FINISHED_JOB_STATES, JobState, sinfo_long
from cluster.models import Event, Job, Node, Partition
from cluster.services import rows as plain_rows
from simulator.records import EVENT_KINDS, SimJob

if TYPE_CHECKING:
    from simulator.engine import Engine

_FINISHED = [s.value for s in FINISHED_JOB_STATES]
# The names of the nodes whose state changed, kept by temporary triggers on Node's table
# (cluster_node) of the simulator's connection (EventLog.watch_nodes).
_WATCH = (
    "CREATE TEMP TABLE IF NOT EXISTS fsched_sim_changed_node (name TEXT PRIMARY KEY)",
    "CREATE TEMP TRIGGER IF NOT EXISTS fsched_sim_node_update AFTER UPDATE ON cluster_node "
    "WHEN OLD.base_state IS NOT NEW.base_state OR OLD.flags IS NOT NEW.flags "
    "BEGIN INSERT OR IGNORE INTO fsched_sim_changed_node (name) VALUES (NEW.name); END",
    "CREATE TEMP TRIGGER IF NOT EXISTS fsched_sim_node_insert AFTER INSERT ON cluster_node "
    "BEGIN INSERT OR IGNORE INTO fsched_sim_changed_node (name) VALUES (NEW.name); END",
    "DELETE FROM temp.fsched_sim_changed_node",
)
_UNWATCH = (
    "DROP TRIGGER IF EXISTS temp.fsched_sim_node_update",
    "DROP TRIGGER IF EXISTS temp.fsched_sim_node_insert",
    "DROP TABLE IF EXISTS temp.fsched_sim_changed_node",
)


@cache
def _new_events_sql() -> str:
    """The Event rows after an id, with their stored time (put in the model's order here:
    ordered by the database, SQLite walked the whole time index for the few rows past the
    id, 2 ms an instant at 10,000 nodes)."""
    t, col = plain_rows.table(Event), partial(plain_rows.column, Event)
    return (
        f"SELECT {col('id')}, {col('kind')}, {col('job_id')}, {col('new_state')}, {col('time')} "  # noqa: S608
        f"FROM {t} WHERE {col('id')} > %s"
    )


@lru_cache(maxsize=4096)
def long_state(base: str, flags: int) -> str:
    """``sinfo_long``, kept by its two arguments: a cluster's nodes take a few dozen
    (state, flags) pairs, read back at every instant (10,000 nodes at the start)."""
    return sinfo_long(base, flags)


def newest_first(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Rows of ``_new_events_sql`` in the Event model's order, newest first (time, then id,
    descending), as ``ORDER BY time DESC, id DESC`` gives them: the times as the cursor
    gives them compare as the database compares them (SQLite's text by its bytes,
    PostgreSQL's timestamps)."""
    return sorted(rows, key=lambda row: (row[4], row[0]), reverse=True)


# More changed nodes than this at one instant: one read of them all instead of a long IN.
_NAMES_AT_ONCE = 500


class EventLog:
    def __init__(self, path: Path, engine: Engine) -> None:
        self.engine = engine
        self._out = path.open("w", encoding="utf-8")
        self.nodes: dict[str, str] = {}
        self.reasons: dict[int, str] = {}
        self.layers: dict[tuple[str, str], int] = {}
        self.ended: set[int] = set()
        self._event_cursor = 0
        self._raw: dict[str, tuple[str, int]] = {}
        self._hres = True
        self._watching = False
        self.last_change = 0.0
        # Reasons change in passes and at submission, layer use with starts and ends: read
        # back only after those (each read is a query over the queue or the layers).
        self.reasons_dirty = True
        self.layers_dirty = True  # virtual time of the last line (the engine's idle stop)

    def close(self) -> None:
        self._out.close()

    def write(self, kind: str, **fields: Any) -> None:
        assert kind in EVENT_KINDS, kind
        line = {"t": round(self.engine.t, 3), "event": kind, **fields}
        self.last_change = self.engine.t
        self._out.write(json.dumps(line, separators=(",", ":")) + "\n")

    # -- the first line ---------------------------------------------------------------------

    def meta(self) -> None:
        partitions = {
            name: expand(nodes, limit=1_000_000) if nodes else []
            for name, nodes in Partition.objects.order_by("name").values_list("name", "nodes")
        }
        member: dict[str, list[str]] = {}
        for name, nodes in partitions.items():
            for node in nodes:
                member.setdefault(node, []).append(name)
        nodes = [
            {"name": name, "cpus": cpus, "memory": memory, "partitions": member.get(name, [])}
            for name, cpus, memory in Node.objects.order_by("name").values_list("name", "cpus", "real_memory")
        ]
        resources: dict[str, dict[str, int | None]] = {}
        for res in self._hres_state():
            resources[res.structure.name] = {la.name: la.count for la in res.structure.layers}
        self.write(
            "meta",
            start_epoch=self.engine.start_epoch,
            conf=str(self.engine.conf_dir),
            workload=self.engine.workload_name,
            nodes=nodes,
            partitions=partitions,
            resources=resources,
        )
        self.observe()

    def _hres_state(self) -> list[Any]:
        if not self._hres:
            return []
        from hres.services import state_with_usage  # noqa: PLC0415

        state = state_with_usage()
        if not state.resources:
            self._hres = False  # none configured: nothing to read at every instant
        return list(state.resources)

    # -- what the engine saw ----------------------------------------------------------------

    # The job's row after a submission and a start, read without the ORM's compiler (it
    # compiled the same two queries again for every job: 4% of a run at 10,000 nodes).

    def submitted(self, job: SimJob, fsched_id: int) -> None:
        found = plain_rows.select(Job, ("user", "account", "partition", "reason"), {"pk": fsched_id})
        user, account, partition, reason = found[0] if found else (job.user, job.account, job.partition, "")
        self.write(
            "submit", job=job.job_id, fsched_id=fsched_id, user=user, account=account, partition=partition
        )
        self._reason(fsched_id, job.job_id, reason)

    def started(self, fsched_id: int, sim: SimJob | None) -> None:
        found = plain_rows.select(
            Job, ("user", "account", "partition", "alloc", "start_time", "submit_time"), {"pk": fsched_id}
        )
        if not found or sim is None:
            return
        user, account, partition, alloc, start, submit = found[0]
        self.reasons.pop(fsched_id, None)
        self.layers_dirty = True
        self.write(
            "start",
            job=sim.job_id,
            fsched_id=fsched_id,
            user=user,
            account=account,
            partition=partition,
            nodes=sorted(alloc),
            cpus=sum(int(v[0]) for v in alloc.values()),
            wait=round((start - submit).total_seconds(), 3) if start and submit else 0.0,
        )

    def load_action(self, fsched_id: int, action: str) -> None:
        sim = self.engine.by_fsched.get(fsched_id)
        # Why, as the live transition recorded it (a continue clears the job's reason_detail).
        detail = (
            Event.objects.filter(job_id=fsched_id, kind=Event.Kind.JOB)
            .order_by("-id")
            .values_list("reason", flat=True)
            .first()
            or ""
        )
        if sim is not None:
            self.write("load", job=sim.job_id, action=action, reason=detail)

    # -- read back after each instant -----------------------------------------------------

    def observe(self) -> None:
        self._ends()
        self._nodes()
        if self.reasons_dirty:
            self.reasons_dirty = False
            self._pending_reasons()
        if self.layers_dirty:
            self.layers_dirty = False
            self._layers()

    def _ends(self) -> None:
        """Jobs that ended since the last instant: the live services record every job
        transition as an Event row, read here from where the last look stopped (in the
        Event model's order, newest first)."""
        with connection.cursor() as cursor:
            cursor.execute(_new_events_sql(), [self._event_cursor])
            found = newest_first(cursor.fetchall())
        if not found:
            return
        self._event_cursor = max(row[0] for row in found)
        ended = [
            (i, state)
            for _id, kind, i, state, _time in found
            if kind == Event.Kind.JOB
            and state in _FINISHED
            and i in self.engine.by_fsched
            and i not in self.ended
        ]
        if not ended:
            return
        times = {
            i: (start, end)
            for i, start, end in plain_rows.select(
                Job, ("id", "start_time", "end_time"), {"pk": [i for i, _ in ended]}
            )
        }
        for fsched_id, state in ended:
            if fsched_id in self.ended:
                continue
            self.ended.add(fsched_id)
            self.layers_dirty = True
            self.reasons.pop(fsched_id, None)
            start, end = times.get(fsched_id, (None, None))
            run = (end - start).total_seconds() if start and end else 0.0
            sim = self.engine.by_fsched[fsched_id]
            self.write("end", job=sim.job_id, fsched_id=fsched_id, state=state, run=round(run, 3))
            self.engine.job_ended(fsched_id)

    def watch_nodes(self) -> None:
        """From now on, note which nodes' state changes (a temporary trigger of the
        simulator's own connection), so that each instant reads back those nodes only,
        not the whole cluster (profiled: at 1,000 nodes the full read cost more than the
        scheduler passes). The simulator's store is SQLite in memory
        (config.settings_sim); elsewhere every instant reads every node."""
        if connection.vendor != "sqlite":
            return
        with connection.cursor() as cursor:
            for statement in _WATCH:
                cursor.execute(statement)
        self._watching = True

    def unwatch_nodes(self) -> None:
        if not self._watching:
            return
        self._watching = False
        with connection.cursor() as cursor:
            for statement in _UNWATCH:
                cursor.execute(statement)

    def _changed_nodes(self) -> list[str] | None:
        """The nodes whose state changed since the last look; None: read them all."""
        if not self._watching or not self._raw:
            return None
        with connection.cursor() as cursor:
            cursor.execute("SELECT name FROM temp.fsched_sim_changed_node")
            names = [name for (name,) in cursor.fetchall()]
            if names:
                cursor.execute("DELETE FROM temp.fsched_sim_changed_node")
        return names

    def _nodes(self) -> None:
        changed = self._changed_nodes()
        if changed is not None and not changed:
            return
        where = {"name": changed} if changed is not None and len(changed) <= _NAMES_AT_ONCE else None
        for name, base, flags in plain_rows.select(
            Node, ("name", "base_state", "flags"), where, order_by=("name",)
        ):
            if self._raw.get(name) == (base, flags):
                continue
            self._raw[name] = (base, flags)
            state = long_state(base, flags)
            if self.nodes.get(name) != state:
                self.nodes[name] = state
                self.write("node", node=name, state=state)

    def _pending_reasons(self) -> None:
        # No order asked for, as the ORM asked for none (Job has no default order): the
        # same statement, so the same order of the lines.
        for fsched_id, reason in plain_rows.select(Job, ("id", "reason"), {"state": JobState.PENDING}):
            sim = self.engine.by_fsched.get(fsched_id)
            if sim is not None:
                self._reason(fsched_id, sim.job_id, reason)

    def _reason(self, fsched_id: int, job: int, reason: str) -> None:
        # "None" is a pending job's reason before any pass looked at it: no line for it.
        if reason and reason != "None" and self.reasons.get(fsched_id) != reason:
            self.reasons[fsched_id] = reason
            self.write("reason", job=job, reason=reason)

    def _layers(self) -> None:
        for res in self._hres_state():
            for layer, used in zip(res.structure.layers, res.used, strict=True):
                key = (res.structure.name, layer.name)
                if self.layers.get(key) != used:
                    self.layers[key] = used
                    self.write("layers", resource=key[0], layer=layer.name, used=used, count=layer.count)
