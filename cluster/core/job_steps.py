"""A job's steps as accounting shows them (``sacct``'s ``N.batch`` lines), derived from the job.

Pure (no Django, no clock: ``now`` is a parameter).  The batch script is step ``batch``,
whose start, end, node and exit are the job's own.  Steps started by ``srun`` (``N.0``,
``N.1`` ...; the steps app keeps them) are listed after it by the same shape
(:func:`srun_step`).  ``N.extern`` is not listed: Slurm
makes that step only with ``PrologFlags=Contain``.
"""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from cluster.core.states import JobState
from slurmwords.step_ids import step_label

BATCH = "batch"

# States the controller ends a job in by killing its processes: Slurm records the job's own
# exit as 0:0 and its batch step as CANCELLED with the signal that killed it (sacct shows
# ``TIMEOUT 0:0`` over ``N.batch CANCELLED 0:15``).
KILLED_STATES = frozenset({JobState.CANCELLED, JobState.TIMEOUT, JobState.DEADLINE, JobState.PREEMPTED})
# A job in these states has no batch step yet (never launched) or any more (requeued).
NO_STEP_STATES = frozenset({JobState.PENDING, JobState.REQUEUED})


class JobFacts(NamedTuple):
    """What a job's steps are derived from."""

    state: str
    exit_code: int
    exit_signal: int
    start: datetime | None
    end: datetime | None
    paused_seconds: int
    batch_host: str
    batch_cpus: int
    batch_mem_mb: int
    max_rss_kb: int | None = None
    total_cpu_secs: float | None = None
    # False for an allocation-only job (salloc's): no script, so no ``batch`` step.
    batch: bool = True


class Step(NamedTuple):
    step_id: str  # "batch", or "0", "1" ... for srun's steps
    name: str
    state: str
    exit_code: int
    exit_signal: int
    start: datetime | None
    end: datetime | None
    elapsed: int
    nnodes: int
    ntasks: int
    alloc_cpus: int
    alloc_tres: str
    node_list: str
    max_rss_kb: int | None
    total_cpu_secs: float | None


def elapsed_seconds(start: datetime | None, end: datetime | None, paused: int, now: datetime) -> int:
    """Run time without the time suspended (Slurm's ``Elapsed``); 0 before the start."""
    if start is None:
        return 0
    return max(0, int(((end or now) - start).total_seconds()) - paused)


def job_exit(state: str, exit_code: int, exit_signal: int) -> tuple[int, int]:
    """The job line's ExitCode: the script's, except for a job the controller killed (0:0)."""
    if state in KILLED_STATES:
        return (0, 0)
    return (exit_code, exit_signal)


def batch_step(job: JobFacts, now: datetime) -> Step | None:
    """The ``batch`` step of a job that started its script, else None."""
    if not job.batch or job.state in NO_STEP_STATES or job.start is None or not job.batch_host:
        return None
    state = JobState.CANCELLED.value if job.state in KILLED_STATES else job.state
    return Step(
        step_id=BATCH,
        name=BATCH,
        state=state,
        exit_code=job.exit_code,
        exit_signal=job.exit_signal,
        start=job.start,
        end=job.end,
        elapsed=elapsed_seconds(job.start, job.end, job.paused_seconds, now),
        nnodes=1,
        ntasks=1,
        alloc_cpus=job.batch_cpus,
        alloc_tres=tres_text(cpus=job.batch_cpus, mem_mb=job.batch_mem_mb, nodes=1, billing=False),
        node_list=job.batch_host,
        max_rss_kb=job.max_rss_kb,
        total_cpu_secs=job.total_cpu_secs,
    )


def job_steps(job: JobFacts, now: datetime) -> list[Step]:
    """Every step of the job, in sacct's order (batch first)."""
    batch = batch_step(job, now)
    return [batch] if batch is not None else []


def srun_step(
    *,
    step_id: int,
    name: str,
    state: str,
    exit_code: int,
    exit_signal: int,
    start: datetime | None,
    end: datetime | None,
    nnodes: int,
    ntasks: int,
    cpus: int,
    node_list: str,
    now: datetime,
) -> Step:
    """A step srun started, as sacct lists it (``N.0``, ``N.interactive``): its own nodes,
    tasks and CPUs."""
    return Step(
        step_id=step_label(step_id),
        name=name,
        state=state,
        exit_code=exit_code,
        exit_signal=exit_signal,
        start=start,
        end=end,
        elapsed=elapsed_seconds(start, end, 0, now),
        nnodes=nnodes,
        ntasks=ntasks,
        alloc_cpus=cpus,
        alloc_tres=tres_text(cpus=cpus, mem_mb=0, nodes=nnodes, billing=False).replace(",mem=0M", ""),
        node_list=node_list,
        max_rss_kb=None,
        total_cpu_secs=None,
    )


def tres_text(
    *, cpus: int, mem_mb: int, nodes: int, billing: bool = True, gres: dict[str, int] | None = None
) -> str:
    """A TRES list as sacct's AllocTRES/ReqTRES print it: names in order, memory in the
    largest unit that divides it (``billing=2,cpu=2,gres/gpu=1,mem=4000M,node=1``)."""
    items = {"cpu": str(cpus), "mem": _mem(mem_mb), "node": str(nodes)}
    if billing:
        items["billing"] = str(cpus)
    for name, count in (gres or {}).items():
        items[f"gres/{name}"] = str(count)
    return ",".join(f"{k}={items[k]}" for k in sorted(items))


def _mem(mb: int) -> str:
    value, unit = mb, 0
    while value and value % 1024 == 0 and unit < 3:
        value //= 1024
        unit += 1
    return f"{value}{'MGTP'[unit]}"
