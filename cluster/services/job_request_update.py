"""``scontrol update JobId=N`` of a pending job's request (``StartTime=``, ``Features=``,
``ReqNodeList=``/``NodeList=``, ``ExcNodeList=``, ``NumNodes=``, ``NumTasks=``,
``MinMemoryNode=``) and of
any job's ``Comment=``: each value read as sbatch reads the option, with slurmctld's
words for a bad one.

Only the values are read here; ``cluster.services.jobs.job_update`` then checks the job as
changed against its partition as a submission is checked (a request that could never run
there is refused, nothing stored), writes it and asks for a pass.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from cluster.core import hostlists, jobspec
from cluster.core.states import JobState
from cluster.models import Job, Node
from cluster.services.errors import ServiceError
from slurmwords import memory
from slurmwords.begin_time import parse_begin_time

# The changes a pending job only takes (Slurm: "Job is no longer pending execution").
PENDING_ONLY = frozenset({"begin", "features", "req_nodes", "exc_nodes", "nodes", "num_tasks", "mem"})
FIELDS = PENDING_ONLY | {"comment"}
# The request fields whose change the partition's check must see again.
REQUEST_FIELDS = frozenset(
    {"features", "req_nodes", "exc_nodes", "min_nodes", "max_nodes", "num_tasks", "mem_per_node"}
)
# Beyond this a begin time is refused: later dates overflow once a time limit is added.
MAX_BEGIN_YEAR = 9000


def apply(job: Job, changes: dict[str, str], *, now: datetime, node_limit: int) -> list[str]:
    """Set the changed fields on ``job`` (not saved); the names of the model fields set."""
    asked = PENDING_ONLY.intersection(changes)
    if asked and job.state != JobState.PENDING:
        raise ServiceError("Job is no longer pending execution", field=min(asked))
    fields: list[str] = []
    if "begin" in changes:
        job.begin_time = job.eligible_time = parse_begin(changes["begin"], now)
        fields += ["begin_time", "eligible_time"]
    if "features" in changes:
        job.features = changes["features"].strip()
        fields.append("features")
    for name in ("req_nodes", "exc_nodes"):
        if name in changes:
            setattr(job, name, _known_nodes(changes[name], name, node_limit))
            fields.append(name)
    if "nodes" in changes:
        try:
            job.min_nodes, job.max_nodes = jobspec.parse_node_count(changes["nodes"])
        except ValueError:
            raise ServiceError("Node count specification invalid", field="nodes") from None
        if job.min_nodes > node_limit:
            raise ServiceError("Node count specification invalid", field="nodes")
        fields += ["min_nodes", "max_nodes"]
    if "num_tasks" in changes:
        # slurmctld's ESLURM_BAD_TASK_COUNT for less than 1 (scontrol refuses what is no number).
        text = changes["num_tasks"].strip()
        if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= jobspec.MAX_INT32:
            raise ServiceError("Task count specification invalid", field="num_tasks")
        job.num_tasks = int(text)
        fields.append("num_tasks")
    if "mem" in changes:
        job.mem_per_node, job.mem_per_cpu = parse_memory(changes["mem"]), None
        fields += ["mem_per_node", "mem_per_cpu"]
    if "comment" in changes:
        job.comment = changes["comment"]
        fields.append("comment")
    return fields


def parse_begin(text: str, now: datetime) -> datetime:
    """sbatch --begin's and StartTime='s forms; "Invalid time specification" for another."""
    try:
        begin = parse_begin_time(text, now)
    except ValueError:
        begin = None
    if begin is None or begin.year > MAX_BEGIN_YEAR:
        raise ServiceError(f"Invalid time specification: {text}", field="begin")
    return begin


def _known_nodes(text: str, field: str, limit: int) -> str:
    """A hostlist of existing nodes, folded; "" clears it."""
    try:
        names = hostlists.parse(text.strip(), limit=limit, what=field)
    except hostlists.HostlistTooLarge as exc:
        raise ServiceError(str(exc), field=field) from None
    except hostlists.HostlistError:
        raise ServiceError("Invalid node name specified", field=field) from None
    known = set(Node.objects.filter(name__in=list(names)).values_list("name", flat=True)) if names else set()
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ServiceError(f"Invalid node name specified: {hostlists.fold(unknown)}", field=field)
    return str(names)


def parse_memory(text: Any, wording: str = "MinMemoryNode value") -> int:
    """Megabytes as sbatch's --mem and scontrol's MinMemoryNode= take them; else
    ``Invalid <wording>: <text>``."""
    try:
        mb = memory.parse_memory_mb(text)
    except ValueError:
        mb = None
    if mb is None or mb > jobspec.MAX_INT32:
        raise ServiceError(f"Invalid {wording}: {text}", field="mem")
    return mb
