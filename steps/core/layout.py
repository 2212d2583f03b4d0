"""Where a new step of a running job goes (pure): its nodes, tasks and CPUs.

Steps are exclusive within the job by default, as in Slurm since 21.08: a step gets CPUs
no other running step holds; ``--overlap`` shares them (and holds none). The batch step is
not counted, as Slurm's batch step does not keep srun's steps from the job's CPUs.

srun's ``--interactive`` step (salloc's with LaunchParameters=use_interactive_step) is
slurmctld's interactive step: one task on the job's first node, with all the job's CPUs
there, holding none from the other steps, whatever else the request says.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from slurmwords import step_layout


class StepRefused(ValueError):
    """The step can never run in this job: Slurm's words for why."""


class StepBusy(Exception):
    """Not now: the CPUs it needs are held by the job's other steps."""


@dataclass(frozen=True)
class Request:
    ntasks: int | None
    nodes: int | None
    ntasks_per_node: int | None
    cpus_per_task: int
    overlap: bool
    interactive: bool = False


@dataclass(frozen=True)
class Layout:
    nodes: list[str]
    tasks: list[list[int]]
    cpus: list[list[int]]  # the job's CPU indices on each node
    ntasks: int
    tasks_per_node: str


def plan(
    req: Request, job_nodes: Sequence[str], job_cpus: Mapping[str, int], held: Mapping[str, set[int]]
) -> Layout:
    """The step's layout, StepRefused when it could never fit, StepBusy when not now.

    ``job_nodes``: the job's nodes in order, ``job_cpus``: its CPUs on each, ``held``: the
    CPU indices the job's running exclusive steps hold on each.
    """
    if req.interactive:
        return _interactive(job_nodes, job_cpus)
    cpt = max(req.cpus_per_task, 1)
    want_nodes = req.nodes
    if want_nodes is not None and want_nodes > len(job_nodes):
        raise StepRefused("Requested node configuration is not available")
    ntasks = req.ntasks
    if ntasks is None:
        per = req.ntasks_per_node or 1
        ntasks = per * (want_nodes or len(job_nodes))
    if ntasks < 1:
        raise StepRefused("Invalid number of tasks")
    count = want_nodes or min(len(job_nodes), ntasks)
    if ntasks < count:
        raise StepRefused(f"Requested node count {count} exceeds task count {ntasks}")
    if req.ntasks_per_node is not None and req.ntasks_per_node * count < ntasks:
        raise StepRefused("More processors requested than permitted")
    capacity = {n: job_cpus.get(n, 0) // cpt for n in job_nodes}
    if sum(sorted(capacity.values(), reverse=True)[:count]) < ntasks:
        raise StepRefused("More processors requested than permitted")

    def free(node: str) -> list[int]:
        if req.overlap:
            return list(range(job_cpus.get(node, 0)))
        return [i for i in range(job_cpus.get(node, 0)) if i not in held.get(node, set())]

    chosen = [n for n in job_nodes if len(free(n)) >= cpt][:count]
    if len(chosen) < count:
        raise StepBusy
    slots = [len(free(n)) // cpt for n in chosen]
    if req.ntasks_per_node is not None:
        slots = [min(s, req.ntasks_per_node) for s in slots]
    if sum(slots) < ntasks:
        raise StepBusy
    counts = step_layout.block_counts(ntasks, slots)
    cpus = [free(n)[: c * cpt] for n, c in zip(chosen, counts, strict=True)]
    return Layout(
        nodes=chosen,
        tasks=step_layout.task_ids(counts),
        cpus=cpus,
        ntasks=ntasks,
        tasks_per_node=step_layout.compress_counts(counts),
    )


def _interactive(job_nodes: Sequence[str], job_cpus: Mapping[str, int]) -> Layout:
    """slurmctld's _build_interactive_step: the batch host alone, the job's cores there."""
    if not job_nodes:
        raise StepRefused("Requested node configuration is not available")
    first = job_nodes[0]
    return Layout(
        nodes=[first],
        tasks=[[0]],
        cpus=[list(range(job_cpus.get(first, 0)))],
        ntasks=1,
        tasks_per_node="1",
    )
