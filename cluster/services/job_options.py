"""Submission of sbatch's ``--comment``, ``--open-mode``, ``--time-min``, ``--signal``,
``--mem-per-cpu``, ``--ntasks-per-node``, ``--deadline``, ``--get-user-env``, ``--mail-type`` and
``--mail-user``: checked here, stored in the
job's own columns, acted on by the agent (open mode, signal) or the scheduler (memory,
tasks per node) and shown by ``scontrol show job`` (Comment=, TimeMin=, MinMemoryCPU=,
NtasksPerN:B:S:C=, Deadline=); the scheduler pass ends the jobs that missed
their deadline."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from cluster.core import jobspec
from cluster.core.scheduler import cpu_layout_of
from slurmwords import job_options, mail, memory
from slurmwords.begin_time import parse_begin_time

# Request field -> sbatch's option, for the messages.
FIELDS = {
    "comment": "--comment",
    "open_mode": "--open-mode",
    "time_min": "--time-min",
    "signal": "--signal",
    "mem_per_cpu": "--mem-per-cpu",
    "ntasks_per_node": "--ntasks-per-node",
    "deadline": "--deadline",
    "get_user_env": "--get-user-env",
    "mail_type": "--mail-type",
    "mail_user": "--mail-user",
    "alloc_node": "alloc_node",
    "alloc_sid": "alloc_sid",
}
# sbatch's fatal error for both (slurm_opt.c's validate_memory_options).
MEM_EXCLUSIVE = "--mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive."


def checked(spec: dict[str, Any]) -> dict[str, Any]:
    """The fields of the request, parsed; raises ``jobspec.SpecError`` naming the field."""
    out: dict[str, Any] = {}
    for name, what in FIELDS.items():
        value = spec.get(name)
        if value in (None, ""):
            continue
        if name == "alloc_sid":
            try:
                out[name] = jobspec.parse_count(value, "alloc_sid", maximum=jobspec.MAX_INT32, minimum=0)
            except ValueError as exc:
                raise jobspec.SpecError(str(exc), field=name) from None
            continue
        text = jobspec.check_text(value, name, what, max_len=job_options.MAX_COMMENT)
        try:
            if name == "alloc_node":
                out[name] = _alloc_node(text)
            elif name in ("comment", "deadline"):  # the deadline is read against the submit time
                out[name] = text
            elif name == "open_mode":
                out[name] = job_options.parse_open_mode(text)
            elif name == "mail_type":
                out[name] = mail.parse_mail_type(text)
            elif name == "mail_user":
                out[name] = _mail_user(text)
            elif name == "get_user_env":
                seconds, mode = job_options.parse_get_user_env(text)
                out[name] = f"{seconds}{mode}"
            elif name == "ntasks_per_node":
                out[name] = jobspec.parse_count(text, what, maximum=jobspec.MAX_INT32)
            elif name == "mem_per_cpu":
                out[name] = _memory(text)
            elif name == "time_min":
                out[name] = job_options.parse_time_min(text)
                if out[name] > jobspec.MAX_INT32:
                    raise ValueError(f"Invalid time-min specification: {text}")
            else:
                out[name] = str(job_options.parse_signal(text))
        except ValueError as exc:
            raise jobspec.SpecError(str(exc), field=name) from None
    return out


def _alloc_node(text: str) -> str:
    """The submitting host (sbatch's gethostname), as slurmctld keeps job_desc's alloc_node."""
    host = text.strip()
    if not host or len(host) > 255 or any(c.isspace() or c in ",;:" for c in host):
        raise ValueError(f"Invalid alloc_node: {text}")
    return host


def _mail_user(text: str) -> str:
    """One address (or user name): no spaces, no commas, at most the column's length."""
    address = text.strip()
    if not address or len(address) > 256 or any(c.isspace() or c in ",;<>\"" for c in address):
        raise ValueError(f"Invalid --mail-user specification: {text}")
    return address


def _memory(text: str) -> int:
    try:
        mb = memory.parse_memory_mb(text)
    except ValueError:
        mb = None
    if mb is None or not 0 < mb <= jobspec.MAX_INT32:
        raise ValueError(f"Invalid --mem-per-cpu specification: {text}")
    return mb


def node_memory(
    spec: dict[str, Any], mem: int | None, *, nodes: int, ntasks: int, cpus_per_task: int
) -> int | None:
    """The memory per node the scheduler charges: ``--mem``, or with ``--mem-per-cpu`` the
    CPUs the job takes on its busiest node times it (the scheduler lays tasks out over
    ``nodes`` as cluster.core.scheduler.cpu_layout does), as Slurm charges cpus x
    mem-per-cpu per node."""
    per_cpu = spec.get("mem_per_cpu")
    if per_cpu is None:
        return mem
    if mem is not None:
        raise jobspec.SpecError(MEM_EXCLUSIVE, field="mem_per_cpu")
    total = cpu_layout_of(nodes, ntasks, cpus_per_task)[0] * per_cpu
    if total > jobspec.MAX_INT32:
        raise jobspec.SpecError(f"Invalid --mem-per-cpu specification: {per_cpu}", field="mem_per_cpu")
    return total


def tasks_per_node(
    spec: dict[str, Any],
    *,
    ntasks: int,
    ntasks_given: bool,
    min_nodes: int,
    max_nodes: int | None,
    nodes_given: bool,
) -> tuple[int, int]:
    """``--ntasks-per-node``: (tasks, nodes) as Slurm derives them.  Without ``-n`` the job
    runs that many tasks on each node; with it, it needs enough nodes that none holds
    more (the scheduler spreads tasks evenly over the nodes, cpu_layout): more nodes
    than ``-N`` allows is Slurm's "Requested node configuration is not available"."""
    per_node = spec.get("ntasks_per_node")
    if per_node is None:
        return ntasks, min_nodes
    if not ntasks_given:
        return min_nodes * per_node, min_nodes
    needed = -(-ntasks // per_node)
    allowed = max_nodes if max_nodes is not None else (min_nodes if nodes_given else None)
    if allowed is not None and needed > allowed:
        raise jobspec.SpecError("Requested node configuration is not available", field="ntasks_per_node")
    return ntasks, max(min_nodes, needed)


def nodes_for_tasks(
    ntasks: int, cpus_per_task: int, *, min_nodes: int, max_nodes: int | None, nodes_given: bool, largest: int
) -> int:
    """The node count of a job whose tasks outgrow a node.  Without ``-N`` (or with a range,
    ``-N 1-4``) Slurm's select/cons_tres takes as many nodes as the tasks need, up to the
    range's top: ``sbatch -n 8`` on 4-CPU nodes runs on two.  fsched fixes the count at
    submission: the fewest of the partition's largest nodes (``largest`` CPUs) that hold
    the tasks, spread evenly as the scheduler spreads them.  ``-N n`` alone keeps n (a job
    that cannot fit is then refused, as Slurm refuses it)."""
    if nodes_given and max_nodes is None:
        return min_nodes
    per_node = largest // max(cpus_per_task, 1)
    if per_node < 1:
        return min_nodes  # no node holds one task: the feasibility check refuses the job
    needed = -(-ntasks // per_node)
    if max_nodes is not None:
        needed = min(needed, max_nodes)
    return max(min_nodes, needed)


def stored(
    spec: dict[str, Any], time_limit: int | None, *, now: datetime, begin: datetime | None
) -> dict[str, Any]:
    """The job's columns for the checked request.  A TimeMin above the time limit is
    refused as slurmctld refuses it (ESLURM_INVALID_TIME_MIN_LIMIT); ``--deadline`` takes
    ``--begin``'s forms, and one before the begin time is sbatch's "Incompatible begin and
    deadline time specification"."""
    deadline = None
    if (text := spec.get("deadline")) is not None:
        try:
            deadline = parse_begin_time(text, now)
        except ValueError:
            raise jobspec.SpecError(f"Invalid deadline specification: {text}", field="deadline") from None
        if begin is not None and deadline < begin:
            raise jobspec.SpecError("Incompatible begin and deadline time specification", field="deadline")
    time_min = spec.get("time_min")
    if time_min is not None and time_limit is not None and time_min > time_limit:
        raise jobspec.SpecError(
            "Invalid time-min specification (exceeds job's time or other limits)", field="time_min"
        )
    return {
        "comment": spec.get("comment", ""),
        "alloc_node": spec.get("alloc_node", ""),
        "alloc_sid": spec.get("alloc_sid"),
        "open_mode": spec.get("open_mode", ""),
        "time_min": time_min,
        "signal": spec.get("signal", ""),
        "mem_per_cpu": spec.get("mem_per_cpu"),
        "ntasks_per_node": spec.get("ntasks_per_node"),
        "deadline": deadline,
        "get_user_env": spec.get("get_user_env", ""),
        "mail_type": spec.get("mail_type", ""),
        "mail_user": spec.get("mail_user", ""),
    }
