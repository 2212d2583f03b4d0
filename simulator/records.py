"""What the simulator's parts hand one another: a workload's jobs and the event log's lines.

The workload readers (SWF, the YAML/JSON job list, the cluster's history, the generator)
produce ``SimJob`` records; the engine replays them and writes one JSON object per line
(``EVENT_KINDS``); the report reads those lines back. Plain data only, so that every part
can be tested alone.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SimJob:
    """One job of a workload, as submitted and as it ran."""

    job_id: int  # the workload's own number (SWF's job number); dependencies name these
    submit: float  # seconds after the workload's first submission (>= 0)
    run_time: float  # seconds it ran when recorded; the simulation caps it by the time limit
    user: str
    account: str = ""  # "" = the user's default account
    partition: str = ""  # "" = the default partition
    qos: str = ""
    nodes: int = 1
    ntasks: int = 1
    cpus_per_task: int = 1
    mem_mb: int = 0  # per node; 0 = the partition's default
    time_limit: int | None = None  # minutes; None = the partition's default
    licenses: str = ""  # sbatch -L text, HRES requests included
    name: str = ""
    dependency: str = ""  # sbatch --dependency text naming workload job numbers
    exit_code: int = 0  # what the job's script returned


# The event log (JSON lines). Every line has "t" (virtual seconds since the simulation's
# start, float) and "event" (one of these kinds); the other keys per kind:
EVENT_KINDS = {
    # first line: {"start_epoch", "conf", "workload", "nodes": [{"name", "cpus", "memory",
    # "partitions": [..]}], "partitions": {name: [node names]}, "resources": {name: {layer: count}}}
    "meta": ("start_epoch", "conf", "workload", "nodes", "partitions", "resources"),
    "submit": ("job", "fsched_id", "user", "account", "partition"),
    "reject": ("job", "error"),  # refused at submission, with the error sbatch would print
    "start": ("job", "fsched_id", "user", "account", "partition", "nodes", "cpus", "wait"),
    "end": ("job", "fsched_id", "state", "run"),  # state: COMPLETED, TIMEOUT, FAILED, ...
    "reason": ("job", "reason"),  # a pending job's reason changed (Resources, AssocGrpCpuLimit, ...)
    "node": ("node", "state"),  # a node's state changed, as sinfo -N -o %T spells it
    "layers": ("resource", "layer", "used", "count"),  # an HRES layer's use changed
    "load": ("job", "action", "reason"),  # a job stopped or held by a load threshold
    # last line: {"jobs", "simulated_seconds", "wall_seconds"}
    "done": ("jobs", "simulated_seconds", "wall_seconds"),
}
