"""Whether a job could ever run in its partition as configured: Slurm refuses at submission
a job that no configuration of the partition's nodes could ever hold, instead of letting it
pend forever (sbatch.html: "Batch job submission failed: ...").

Only what the configuration decides counts here, never what other jobs hold now or the
nodes' states: a job that could run once others end, or once a node is back, is accepted
and pends.  Names in a partition's node list that are no node yet (room for dynamic nodes)
count as nodes that could hold anything.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

# Slurm's messages (slurm_strerror) for the two cases: ESLURM_INVALID_NODE_COUNT and
# ESLURM_REQUESTED_NODE_CONFIG_UNAVAILABLE.
INVALID_NODE_COUNT = "Node count specification invalid"
NODE_CONFIG_UNAVAILABLE = "Requested node configuration is not available"
# What slurmctld adds before the message when no node of the partition has the CPUs or the
# memory (sbatch prints it as an error line of its own).
CPUS_UNSATISFIABLE = "CPU count per node can not be satisfied"
MEMORY_UNSATISFIABLE = "Memory specification can not be satisfied"


@dataclass(frozen=True, slots=True)
class NodeSize:
    """A node's configured size (slurm.conf, or ``scontrol create`` for a dynamic node)."""

    name: str
    cpus: int
    real_memory: int  # MB


@dataclass(frozen=True, slots=True)
class Request:
    """What a job asks of every one of its nodes, and how many of them."""

    nodes: int
    cpus_per_task: int = 1
    mem_per_node: int | None = None  # MB; None or 0 (all of a node's memory): no minimum
    exc_nodes: frozenset[str] = frozenset()
    num_tasks: int = 1

    @property
    def cpus_per_node(self) -> int:
        """The CPUs the busiest node needs: the scheduler spreads the tasks evenly over the
        nodes (cluster.core.scheduler.cpu_layout), at least one task a node."""
        return -(-max(self.num_tasks, self.nodes) // max(self.nodes, 1)) * self.cpus_per_task

    def fits(self, node: NodeSize) -> bool:
        """The busiest node's share of the tasks, and the job's memory per node."""
        return node.cpus >= self.cpus_per_node and node.real_memory >= (self.mem_per_node or 0)

    @property
    def sized(self) -> bool:
        """Whether the answer depends on the nodes' sizes (or names), not only their number."""
        return self.cpus_per_node > 1 or bool(self.mem_per_node) or bool(self.exc_nodes)


@dataclass(frozen=True, slots=True)
class Refused:
    """Why a job can never run: Slurm's message, fsched's figures, and the line slurmctld
    sends before the message where it has one (sbatch prints it first)."""

    message: str
    explanation: str
    field: str
    err_msg: str = ""


def count_refusal(request: Request, partition: str, size: int) -> Refused | None:
    """More nodes than the partition has: Slurm's ``_part_access_check`` refuses the job
    (a partition ``MaxNodes`` below that only makes it pend, with PartitionNodeLimit)."""
    if request.nodes > size:
        return Refused(
            INVALID_NODE_COUNT, f"{request.nodes} nodes requested, partition {partition} has {size}", "nodes"
        )
    return None


def capable_nodes(request: Request, members: Sequence[NodeSize]) -> tuple[str, ...]:
    """The partition's nodes that could each hold one share of the job, in their order."""
    return tuple(n.name for n in members if n.name not in request.exc_nodes and request.fits(n))


def size_refusal(
    request: Request,
    partition: str,
    members: Sequence[NodeSize],
    *,
    unnamed: int = 0,
    capable: Sequence[str] | None = None,
) -> Refused | None:
    """Fewer nodes that could hold the job than it asks for, whatever their state: Slurm's
    test of the job against the partition's configured nodes at submission fails with
    ``Requested node configuration is not available``.  ``unnamed``: names of the
    partition that are no node yet; ``capable``: :func:`capable_nodes` of the request,
    when the caller has it already."""
    if capable is None:
        capable = capable_nodes(request, members)
    capable_count = len(capable) + unnamed
    if capable_count >= request.nodes:
        return None
    if not unnamed and not any(n.cpus >= request.cpus_per_node for n in members):
        return Refused(
            NODE_CONFIG_UNAVAILABLE,
            f"no node of partition {partition} has {request.cpus_per_node} CPUs",
            "cpus_per_task",
            CPUS_UNSATISFIABLE,
        )
    if not unnamed and not any(n.real_memory >= (request.mem_per_node or 0) for n in members):
        return Refused(
            NODE_CONFIG_UNAVAILABLE,
            f"no node of partition {partition} has {request.mem_per_node} MB",
            "mem",
            MEMORY_UNSATISFIABLE,
        )
    why = f"{capable_count} of the {len(members) + unnamed} nodes of partition {partition} could hold the job"
    return Refused(NODE_CONFIG_UNAVAILABLE, why, "nodes")


def never_runs(
    request: Request, partition: str, members: Sequence[NodeSize], *, unnamed: int = 0
) -> Refused | None:
    """The first reason, in Slurm's order, that the job can never run in ``partition``."""
    return count_refusal(request, partition, len(members) + unnamed) or size_refusal(
        request, partition, members, unnamed=unnamed
    )


def unnamed_count(names: Collection[str], members: Sequence[NodeSize]) -> int:
    """How many of a partition's ``names`` are no node (yet)."""
    return len(set(names) - {n.name for n in members})
