"""A job that can never run in its partition is refused at submission with Slurm's message,
not left pending forever (issue #13 point 2).  The demo's partition debug is node[01-08],
4 CPUs and 2000 MB each; batch is node[09-24], also 4 CPUs and 2000 MB."""

from __future__ import annotations

import pytest

from cluster.core import feasibility
from cluster.core.feasibility import NodeSize, Request
from cluster.models import Job, Partition
from cluster.services.errors import ServiceError
from cluster.services.jobs import job_submit, job_update
from cluster.services.scheduling import schedule_pass

pytestmark = pytest.mark.django_db

WRAP = {"wrap": "true", "work_dir": "/tmp", "partition": "debug"}


def post(client, **fields):
    return client.post("/api/jobs/", {**WRAP, **fields}, format="json")


@pytest.mark.parametrize(
    ("fields", "message", "explanation"),
    [
        ({"nodes": "20"}, "Node count specification invalid", "20 nodes requested, partition debug has 8"),
        ({"nodes": "9-12"}, "Node count specification invalid", "9 nodes requested, partition debug has 8"),
        (
            {"cpus_per_task": 5},
            "Requested node configuration is not available",
            "no node of partition debug has 5 CPUs",
        ),
        (
            {"mem": "3G"},
            "Requested node configuration is not available",
            "no node of partition debug has 3072 MB",
        ),
        (
            {"nodes": "2", "exclude": "node[02-08]"},
            "Requested node configuration is not available",
            "1 of the 8 nodes of partition debug could hold the job",
        ),
        # An array is refused whole, none of its tasks stored.
        (
            {"nodes": "20", "array": "0-9"},
            "Node count specification invalid",
            "20 nodes requested, partition debug has 8",
        ),
    ],
)
def test_a_job_that_can_never_run_is_refused_with_slurms_message(demo, api, fields, message, explanation):
    response = post(api("alice"), **fields)
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == message
    assert body["explanation"] == explanation
    assert not Job.objects.exists()


@pytest.mark.parametrize(
    ("fields", "err_msg"),
    [
        ({"cpus_per_task": 5}, "CPU count per node can not be satisfied"),
        ({"mem": "3G"}, "Memory specification can not be satisfied"),
        ({"nodes": "20"}, None),  # slurmctld sends no line of its own for this one
    ],
)
def test_slurmctlds_own_line_comes_as_err_msg(demo, api, fields, err_msg):
    assert post(api("alice"), **fields).json().get("err_msg") == err_msg


@pytest.mark.parametrize(
    "fields",
    [
        {"nodes": "8"},
        {"cpus_per_task": 4, "mem": "2000M"},
        {"mem": "0"},  # all of a node's memory
        {"nodes": "3", "partition": "batch", "exclude": "node[09-21]"},
    ],
)
def test_a_job_that_fits_the_partition_is_accepted(demo, api, fields):
    assert post(api("alice"), **fields).status_code == 201


def test_more_nodes_than_maxnodes_but_not_than_the_partition_still_pends(demo, users):
    Partition.objects.filter(name="debug").update(max_nodes=2)
    job_id = job_submit(user=users["alice"], spec={**WRAP, "nodes": "4"}).job_ids[0]
    schedule_pass()
    assert Job.objects.get(pk=job_id).reason == "PartitionNodeLimit"


def test_a_job_that_waits_for_busy_or_down_nodes_is_accepted(demo, users):
    # Every node of debug is down (no agent registered): the job waits, it is not refused.
    job_id = job_submit(user=users["alice"], spec={**WRAP, "nodes": "8", "mem": "2000M"}).job_ids[0]
    assert Job.objects.get(pk=job_id).state == "PENDING"


def test_a_partition_that_does_not_schedule_refuses_nothing_by_node_count(demo, users):
    # As Slurm's _part_access_check: the count is checked only where the partition schedules.
    Partition.objects.filter(name="debug").update(state="DOWN")
    assert job_submit(user=users["alice"], spec={**WRAP, "nodes": "20"}).job_ids


def test_test_only_refuses_as_the_submission_does(demo, api):
    response = post(api("alice"), nodes="20", test_only=True)
    assert response.status_code == 400
    assert response.json()["error"] == "Node count specification invalid"


def test_names_that_are_no_node_yet_count_as_nodes_that_could_hold_the_job():
    members = [NodeSize("n1", 4, 2000), NodeSize("n2", 4, 2000)]
    assert feasibility.never_runs(Request(nodes=3), "p", members, unnamed=1) is None
    assert feasibility.never_runs(Request(nodes=1, cpus_per_task=8), "p", members, unnamed=1) is None
    refused = feasibility.never_runs(Request(nodes=4), "p", members, unnamed=1)
    assert refused is not None and refused.message == feasibility.INVALID_NODE_COUNT
    refused = feasibility.never_runs(Request(nodes=1, cpus_per_task=8), "p", members)
    assert (refused.message, refused.err_msg) == (
        feasibility.NODE_CONFIG_UNAVAILABLE,
        feasibility.CPUS_UNSATISFIABLE,
    )


def test_moving_a_pending_job_to_a_partition_where_it_can_never_run_is_refused(demo, users):
    job_id = job_submit(user=users["alice"], spec={**WRAP, "partition": "batch", "nodes": "10"}).job_ids[0]
    with pytest.raises(ServiceError) as err:
        job_update(actor=users["alice"], job_id=job_id, changes={"partition": "debug"})
    assert (str(err.value), err.value.explanation) == (
        "Node count specification invalid",
        "10 nodes requested, partition debug has 8",
    )
    assert Job.objects.get(pk=job_id).partition == "batch"
    job_update(actor=users["alice"], job_id=job_id, changes={"partition": "long"})
    assert Job.objects.get(pk=job_id).partition == "long"


def test_names_of_a_partition_that_are_no_node_yet_may_become_dynamic_nodes(demo, users):
    Partition.objects.create(name="grow", nodes="node[01-02],dyn[01-04]")
    spec = {**WRAP, "partition": "grow", "cpus_per_task": 8}
    # No node has 8 CPUs yet, but a dynamic node created as dyn01 may.
    assert job_submit(user=users["alice"], spec={**spec, "nodes": "4"}).job_ids
    with pytest.raises(ServiceError) as err:
        job_submit(user=users["alice"], spec={**spec, "nodes": "5"})
    assert str(err.value) == "Requested node configuration is not available"
    with pytest.raises(ServiceError, match="Node count specification invalid"):
        job_submit(user=users["alice"], spec={**WRAP, "partition": "grow", "nodes": "7"})


def test_test_only_names_a_job_id_of_its_own_and_stores_no_job(demo, users, api):
    """As slurmctld's will-run test (a job record made and purged): "Job N to start at ...",
    N taken from the ids, so the next submission gets a later one."""
    response = post(api("alice"), test_only=True)
    assert response.status_code == 200, response.content
    answer = response.json()
    assert isinstance(answer["job_id"], int)
    assert answer["message"].startswith(f"Job {answer['job_id']} to start at ")
    assert not Job.objects.filter(pk=answer["job_id"]).exists()
    assert job_submit(user=users["alice"], spec=WRAP).job_ids[0] > answer["job_id"]
