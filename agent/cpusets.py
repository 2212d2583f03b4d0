"""Which CPUs of its node a job is bound to (docs/containment.md).

The agent, the one authority over its node, picks the ids: the controller counts CPUs per
node (``alloc``) and never gives a node's jobs more CPUs than the node has, so the lowest
ids no running job of the node holds are always enough. Lowest first is what Slurm's
select/cons_tres does when nothing else orders the cores.

A node's ids are its own (0 .. CPUs-1 of its slurm.conf line); they map onto the CPUs
this agent may use (its own affinity) by position, modulo their number. A demo node
declaring 4 CPUs on a 2-CPU host folds ids 2-3 onto host CPUs 0-1: the agent logs it,
and the jobs on those ids then share host CPUs, as they must.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from slurmwords.int_lists import fold_ints


def pick_cpu_ids(held: Iterable[Iterable[int]], count: int) -> tuple[int, ...]:
    """The ``count`` lowest ids not in any of ``held``."""
    taken = {i for ids in held for i in ids}
    picked: list[int] = []
    candidate = 0
    while len(picked) < count:
        if candidate not in taken:
            picked.append(candidate)
        candidate += 1
    return tuple(picked)


def host_cpus(ids: Iterable[int], usable: Sequence[int]) -> tuple[int, ...]:
    """The host CPUs that node ids ``ids`` run on: ``usable[id % len(usable)]``."""
    if not usable:
        raise ValueError("no usable CPU")
    return tuple(sorted({usable[i % len(usable)] for i in ids}))


def folds(ids: Iterable[int], usable: Sequence[int]) -> bool:
    """Whether some of ``ids`` lie beyond the host's usable CPUs (they share one)."""
    return any(i >= len(usable) for i in ids)


def cpu_list(cpus: Iterable[int]) -> str:
    """The kernel's list format (``Cpus_allowed_list``, ``cpuset.cpus``): ``0-2,5``."""
    return fold_ints(cpus)


def parse_cpu_list(text: str) -> set[int]:
    """``0-2,5`` → {0, 1, 2, 5}; an empty string is no CPU."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        cpus.update(range(int(low), int(high or low) + 1))
    return cpus


class CpuBook:
    """The ids each running job holds on each node this agent serves.

    Keyed by job and node: one agent may serve several nodes of one job (the demo's
    agent serves them all), and a job's ids on one node say nothing of another.
    """

    def __init__(self) -> None:
        self._held: dict[tuple[int, str], tuple[int, ...]] = {}

    def take(self, job_id: int, node: str, count: int) -> tuple[int, ...]:
        """The job's ids on ``node``, picked now unless it holds some there already
        (a job step started on the node later gets the job's own ids)."""
        key = (job_id, node)
        if key in self._held:
            return self._held[key]
        others = (ids for (_, n), ids in self._held.items() if n == node)
        ids = pick_cpu_ids(others, max(1, count))
        self._held[key] = ids
        return ids

    def restore(self, job_id: int, node: str, ids: Iterable[int]) -> None:
        """An adopted job's ids, as its record says."""
        self._held[(job_id, node)] = tuple(ids)

    def release(self, job_id: int) -> None:
        """The job ended: its ids on every node are free."""
        for key in [k for k in self._held if k[0] == job_id]:
            del self._held[key]

    def ids(self, job_id: int, node: str) -> tuple[int, ...]:
        return self._held.get((job_id, node), ())


__all__ = ["CpuBook", "cpu_list", "folds", "host_cpus", "parse_cpu_list", "pick_cpu_ids"]
