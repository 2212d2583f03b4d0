"""A job whose tasks outgrow one node (#18 fidelity): ``sbatch -n 8`` on the demo's 4-CPU
nodes pended for ever with BadConstraints, where Slurm's select/cons_tres runs it on two
nodes; ``-N 1 -n 64`` was taken and pended the same way, where slurmctld refuses it at
submission.  The node count is fixed at submission (cluster.services.job_options
.nodes_for_tasks): the fewest of the partition's largest nodes that hold the tasks."""

from __future__ import annotations

import pytest

from cluster.models import Job
from cluster.services.errors import ServiceError
from cluster.services.job_options import nodes_for_tasks
from cluster.services.jobs import job_submit
from cluster.services.scheduling import schedule_pass
from cluster.services.state import launch_payload
from tests.cluster.test_nice import register


def submit(user, **spec) -> Job:
    job_id = job_submit(user=user, spec={"wrap": "true", "work_dir": "/tmp", **spec}).job_ids[0]
    return Job.objects.get(pk=job_id)


@pytest.mark.parametrize(
    ("spec", "nodes", "layout"),
    [
        ({"ntasks": 8}, 2, [4, 4]),
        ({"ntasks": 5}, 2, [3, 2]),
        ({"ntasks": 3, "cpus_per_task": 3}, 3, [3, 3, 3]),
        ({"ntasks": 8, "nodes": "1-3"}, 2, [4, 4]),
        ({"ntasks": 4}, 1, [4]),
    ],
)
def test_the_tasks_take_the_nodes_they_need(demo, users, spec, nodes, layout):
    register()
    job = submit(users["alice"], **spec)
    assert job.min_nodes == nodes
    schedule_pass()
    job.refresh_from_db()
    assert job.state in ("RUNNING", "CONFIGURING"), job.reason
    assert sorted((cpus for cpus, _mem in job.alloc.values()), reverse=True) == layout
    # The launch names each node's CPUs in the node list's order (SLURM_JOB_CPUS_PER_NODE).
    in_order = [job.alloc[n][0] for n in sorted(job.alloc)]
    assert launch_payload(job)["job"]["cpus_per_node"] == in_order


@pytest.mark.parametrize("nodes", ["1", "1-3"])  # -N 1-3 -n 16: 6 CPUs a node at most
def test_a_node_count_that_cannot_hold_the_tasks_is_refused(demo, users, nodes):
    with pytest.raises(ServiceError) as refused:
        submit(users["alice"], ntasks=64 if nodes == "1" else 16, nodes=nodes)
    assert str(refused.value) == "Requested node configuration is not available"
    assert refused.value.err_msg == "CPU count per node can not be satisfied"
    assert not Job.objects.exists()


def test_nodes_for_tasks():
    assert nodes_for_tasks(8, 1, min_nodes=1, max_nodes=None, nodes_given=False, largest=4) == 2
    assert nodes_for_tasks(8, 1, min_nodes=1, max_nodes=None, nodes_given=True, largest=4) == 1
    assert nodes_for_tasks(8, 1, min_nodes=3, max_nodes=None, nodes_given=False, largest=4) == 3
    assert nodes_for_tasks(9, 2, min_nodes=1, max_nodes=None, nodes_given=False, largest=4) == 5
    assert nodes_for_tasks(2, 8, min_nodes=1, max_nodes=None, nodes_given=False, largest=4) == 1
