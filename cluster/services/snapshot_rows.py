"""The rows a scheduler pass reads, made into the core's views (cluster.core.scheduler).

Which columns of the node, partition and job tables a pass reads and how one row becomes
a ``NodeView``, ``PartitionView`` or ``JobView``: shared by the fresh read (``fresh``,
``read_queue``: every pass outside ``pass_snapshot.keep()``), by the kept snapshot that
re-reads only the rows written since the last pass (cluster/services/pass_snapshot.py), and
by the statement reader that decides whether a write touched a column a view holds
(cluster/services/statement_effects.py).  One place, so that the kept views and the fresh
ones cannot be built differently.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ClusterShell.NodeSet import NodeSet

from cluster.core import scheduler
from cluster.core.states import HOLDING_JOB_STATES, JobState, NodeFlag
from cluster.models import Job, Node, Partition
from cluster.services import rows
from cluster.services.dependencies import stored as stored_dependency

NODE_FIELDS = ("name", "cpus", "real_memory", "weight", "base_state", "flags", "features", "active_features")
PARTITION_FIELDS = (
    "name",
    "nodes",
    "state",
    "max_time",
    "default_time",
    "max_nodes",
    "min_nodes",
    "priority_tier",
    "priority_job_factor",
)
HOLDING_FIELDS = (
    "id",
    "partition",
    "user",
    "submit_time",
    "start_time",
    "time_limit",
    "alloc",
    "state",
    "array_job_id",
    "licenses",
    "paused_seconds",
)
# The queue: the pending jobs not held (held jobs cannot start; hold and release set their
# reason and priority, so no pass reads them).
PENDING_FIELDS = (
    "id",
    "partition",
    "user",
    "submit_time",
    "min_nodes",
    "max_nodes",
    "num_tasks",
    "cpus_per_task",
    "mem_per_node",
    "time_limit",
    "begin_time",
    "hold",
    "req_nodes",
    "exc_nodes",
    "features",
    "reservation",
    "licenses",
    "array_job_id",
    "array_max_tasks",
    "exclusive",
    "nice",
    "dependency",
    "name",
    "array_task_id",
    "deadline",
    "time_min",
    "priority_set",
)
QUEUED = {"state": JobState.PENDING, "hold": ""}
# A job row re-read by key: what either view needs.
JOB_FIELDS = HOLDING_FIELDS + tuple(f for f in PENDING_FIELDS if f not in HOLDING_FIELDS)
PENDING_AT = tuple(JOB_FIELDS.index(f) for f in PENDING_FIELDS)
STATE_AT = JOB_FIELDS.index("state")
HOLD_AT = JOB_FIELDS.index("hold")
HOLDING_STATES = frozenset(s.value for s in HOLDING_JOB_STATES)
# The reason, its detail and the priority of queued jobs as stored (``pass_snapshot.stored_reasons``).
REASON_FIELDS = ("reason", "reason_detail", "priority")


@dataclass(frozen=True)
class Resources:
    """What a pass reads besides the queue: the node names in index order, the views."""

    names: list[str]
    nodes: tuple[scheduler.NodeView, ...]
    partitions: dict[str, scheduler.PartitionView]
    running: tuple[scheduler.JobView, ...]  # by job id
    # The queue's views by job id (``queue()``), when kept; None: read it (``read_queue``).
    pending: tuple[scheduler.JobView, ...] | None = None


@lru_cache(maxsize=256)
def _hostnames(text: str) -> tuple[str, ...]:
    # Partition node lists change only on reconfigure; expanding one costs more than a pass's query.
    return tuple(NodeSet(text)) if text else ()


# Most nodes share a few feature lists: split each once.
_features = lru_cache(maxsize=1024)(scheduler.split_features)


def _epoch(dt: Any) -> float | None:
    return dt.timestamp() if dt else None


_POWERED_DOWN = int(NodeFlag.POWERED_DOWN)


def node_view(i: int, row: Sequence[Any]) -> scheduler.NodeView:
    name, cpus, memory, weight, base, flags, available, active = row
    return scheduler.NodeView(
        index=i,
        name=name,
        cpus=cpus,
        real_memory=memory,
        weight=weight,
        base=base,
        flags=flags,
        # --constraint: the available features of a powered-down node (they become
        # active when it is allocated), the active ones otherwise.
        features=_features(available if flags & _POWERED_DOWN else active),
    )


def partition_views(index: dict[str, int]) -> dict[str, scheduler.PartitionView]:
    partitions = {}
    for name, text, state, max_time, default_time, max_nodes, min_nodes, tier, factor in rows.select(
        Partition, PARTITION_FIELDS
    ):
        partitions[name] = scheduler.PartitionView(
            name=name,
            node_indices=tuple(sorted(index[n] for n in _hostnames(text) if n in index)),
            state=state,
            max_time=max_time,
            default_time=default_time,
            max_nodes=max_nodes,
            min_nodes=min_nodes,
            priority_tier=tier,
            priority_job_factor=factor,
        )
    return partitions


def holding_view(row: Sequence[Any], index: dict[str, int]) -> scheduler.JobView:
    job_id, part, user, submit, start, limit, alloc, state, array_id, lic, paused = row
    held = [n for n in alloc if n in index]
    return scheduler.JobView(
        job_id=job_id,
        partition=part,
        user=user,
        submit_time=submit.timestamp(),
        time_limit=limit,
        state=state,
        start_time=_epoch(start),
        node_indices=tuple(index[n] for n in held),
        alloc_cpus=tuple(alloc[n][0] for n in held),
        alloc_mem=tuple(alloc[n][1] for n in held),
        licenses=lic,
        array_job_id=array_id,
        paused=paused,
    )


def holding_rows() -> list[tuple[Any, ...]]:
    return rows.select(Job, HOLDING_FIELDS, {"state": sorted(HOLDING_STATES)}, order_by=("id",))


def pending_view(row: Sequence[Any]) -> scheduler.JobView:
    """A queued job's view from its ``PENDING_FIELDS``."""
    (
        job_id,
        part,
        user,
        submit,
        min_n,
        max_n,
        ntasks,
        cpt,
        mem,
        limit,
        begin,
        hold,
        req,
        exc,
        feat,
        resv,
        lic,
        array_id,
        throttle,
        exclusive,
        nice,
        depend_text,
        name,
        task_id,
        deadline,
        time_min,
        priority_set,
    ) = row
    return scheduler.JobView(
        job_id=job_id,
        partition=part,
        user=user,
        submit_time=submit.timestamp(),
        priority=priority_set,
        min_nodes=min_n,
        max_nodes=max_n,
        num_tasks=ntasks,
        cpus_per_task=cpt,
        mem_per_node=mem,
        time_limit=limit,
        begin_time=_epoch(begin),
        hold=hold or None,
        req_nodes=frozenset(NodeSet(req)) if req else frozenset(),
        exc_nodes=frozenset(NodeSet(exc)) if exc else frozenset(),
        features=feat,
        reservation=resv,
        licenses=lic,
        array_job_id=array_id,
        array_max_tasks=throttle,
        exclusive=bool(exclusive),
        nice=nice,
        dependency=stored_dependency(depend_text) if depend_text else None,
        name=name,
        array_task_id=task_id,
        deadline=_epoch(deadline),
        time_min=time_min,
    )


def read_queue(partitions: Sequence[str], queue_depth: int | None) -> tuple[scheduler.JobView, ...]:
    """The queue read from the database, by job id; with ``queue_depth`` only the first
    that many of each of ``partitions``."""
    where: dict[str, Any] = dict(QUEUED)
    if queue_depth is not None:
        heads: list[int] = []
        for name in partitions:
            heads += (
                job_id
                for (job_id,) in rows.select(
                    Job, ("id",), {**QUEUED, "partition": name}, order_by=("id",), limit=queue_depth
                )
            )
        where["pk"] = heads
    return tuple(pending_view(row) for row in rows.select(Job, PENDING_FIELDS, where, order_by=("id",)))


def fresh() -> Resources:
    """Everything read from the database now."""
    nodes = rows.select(Node, NODE_FIELDS, order_by=("name",))
    names = [n[0] for n in nodes]
    index = {name: i for i, name in enumerate(names)}
    return Resources(
        names=names,
        nodes=tuple(node_view(i, row) for i, row in enumerate(nodes)),
        partitions=partition_views(index),
        running=tuple(holding_view(row, index) for row in holding_rows()),
    )


_CHUNK = 512


def select_in(
    model: type[Any], fields: Sequence[str], keys: list[Any], where: rows.Where | None = None
) -> list[tuple[Any, ...]]:
    """Rows by primary key (of those, the ones ``where`` matches); the IN lists padded to
    powers of two, so that a handful of statement shapes serve every count (rows.select
    keeps a plan per shape)."""
    out = []
    for start in range(0, len(keys), _CHUNK):
        part = keys[start : start + _CHUNK]
        size = 1 << (len(part) - 1).bit_length()
        out += rows.select(model, fields, {**(where or {}), "pk": part + part[-1:] * (size - len(part))})
    return out
