"""Where a job step's tasks go, and the SLURM_* counts that describe it (pure).

Shared by the controller, which lays a step out over the job's nodes, and the agent, which
starts each node's share of the tasks with the environment Slurm's tasks see.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from slurmwords.int_lists import fold_ints, fold_repeats


class LayoutError(ValueError):
    """The step can never fit in the job as requested (not: "not now")."""


def block_counts(ntasks: int, slots: Sequence[int]) -> list[int]:
    """Tasks per node under Slurm's default ``--distribution=block``.

    Slurm's step layout counts tasks per node as a cyclic pass would (one task per node
    per round, while the node has a free slot), so that heterogeneous nodes fill evenly,
    and then numbers the tasks in blocks: -n4 over two 4-CPU nodes is 2+2, tasks 0-1 on
    the first. Once every slot is used, the remaining tasks are spread the same way
    (oversubscription), as Slurm does when it may overcommit.
    """
    if ntasks < len(slots):
        raise LayoutError(f"{ntasks} tasks cannot cover {len(slots)} nodes")
    counts = [0] * len(slots)
    given, rnd, oversubscribe = 0, 0, False
    while given < ntasks:
        room = False
        for i, free in enumerate(slots):
            if given >= ntasks:
                break
            if rnd < free or oversubscribe:
                counts[i] += 1
                given += 1
                room = room or rnd + 1 < free
        if not room:
            oversubscribe = True
        rnd += 1
    return counts


def task_ids(counts: Sequence[int]) -> list[list[int]]:
    """The global task ids (SLURM_PROCID) on each node: consecutive blocks."""
    out, first = [], 0
    for n in counts:
        out.append(list(range(first, first + n)))
        first += n
    return out


def compress_counts(counts: Sequence[int]) -> str:
    """Slurm's ``SLURM_TASKS_PER_NODE`` form: runs folded, ``2(x3),1``."""
    return fold_repeats(counts)


def task_range(ids: Sequence[int]) -> str:
    """``0-3,7``: how srun names a set of tasks in its messages."""
    return fold_ints(ids)


def step_task_env(
    *,
    job_id: int,
    step_id: int,
    task: int,
    local: int,
    node_index: int,
    node: str,
    ntasks: int,
    node_list: str,
    num_nodes: int,
    tasks_per_node: str,
    cpus_per_task: int | None,
    preserve: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The step variables Slurm's slurmstepd gives each task (srun(1), "OUTPUT ENVIRONMENT
    VARIABLES"); SLURM_NODELIST and SLURM_NNODES become the step's, as srun sets them.

    ``preserve``: srun -E's environment: its counts (PRESERVED) stay as it has them, as
    env_array_for_step leaves them under preserve_env; the SLURM_STEP_* are the step's."""
    env = {
        "SLURM_STEP_ID": str(step_id),
        "SLURM_STEPID": str(step_id),
        "SLURM_PROCID": str(task),
        "SLURM_LOCALID": str(local),
        "SLURM_NODEID": str(node_index),
        "SLURM_NTASKS": str(ntasks),
        "SLURM_NPROCS": str(ntasks),
        "SLURM_STEP_NODELIST": node_list,
        "SLURM_NODELIST": node_list,
        "SLURM_STEP_NUM_NODES": str(num_nodes),
        "SLURM_NNODES": str(num_nodes),
        "SLURM_STEP_NUM_TASKS": str(ntasks),
        "SLURM_STEP_TASKS_PER_NODE": tasks_per_node,
        "SLURM_TASKS_PER_NODE": tasks_per_node,
        "SLURMD_NODENAME": node,
        "SLURM_JOB_ID": str(job_id),
        "SLURM_JOBID": str(job_id),
    }
    if cpus_per_task:
        env["SLURM_CPUS_PER_TASK"] = str(cpus_per_task)
    if preserve is not None:
        for name in PRESERVED:
            if name in preserve:
                env[name] = preserve[name]
            else:
                del env[name]
    return env


# srun -E: the variables env_array_for_step does not set (src/common/env.c).
PRESERVED = ("SLURM_NNODES", "SLURM_NTASKS", "SLURM_NPROCS", "SLURM_TASKS_PER_NODE")


def label_width(ntasks: int) -> int:
    """srun -l's label width: the digits of the highest task id, so that the labels of 11
    tasks and more line up (`` 0: `` .. ``10: ``)."""
    return len(str(max(ntasks - 1, 0)))


def label(task: int, width: int) -> bytes:
    return f"{task:>{width}}: ".encode()
