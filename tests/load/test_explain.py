"""The load thresholds in "Why is this job pending?" (#14 point 5): the nodes a pending job
could use that the load check drained are named with the figures behind the drain and what
undrains them, under the reason code the scheduler gave (Slurm's); a job the load check
STOPPED says why and what continues it.  Through ``GET /api/jobs/{id}/explain/``, which
the console's job page and ``fsched explain`` show."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from cluster.core.states import NodeBase, NodeFlag, Reason
from cluster.models import Job, Node
from cluster.services.configuration import config_load
from cluster.services.jobs import job_submit
from cluster.services.scheduling import schedule_pass
from load.models import NodeLoad
from load.services import load_check
from tests.load.test_check import CALM, running
from tests.load.test_config import EXAMPLE, write

THREE = (
    "PartitionName=p1 Nodes=node[01-03] Default=YES LoadSchedMem=1300 LoadSchedUt=80 LoadStopUt=90\n"
    "NodeName=node[01-03] CPUs=4 RealMemory=8000\n"
)
UNDRAIN = (
    "It is undrained when every LoadSched threshold is satisfied again (mem > 1300, ut < 80) "
    "and its stopped jobs are continued; the load check runs every 30 s."
)


def report(node: str, **indices) -> None:
    NodeLoad.objects.update_or_create(node=node, defaults={**CALM, **indices, "at": timezone.now()})


def up(tmp_path, partitions: str) -> None:
    config_load(path=write(tmp_path, partitions))
    Node.objects.update(base_state=NodeBase.IDLE, flags=NodeFlag.NONE)


def submit(user, **spec) -> int:
    return job_submit(user=user, spec={"wrap": "sleep 100", "work_dir": "/tmp", **spec}).job_ids[0]


def explain(api, job_id: int) -> dict:
    answer = api("alice").get(f"/api/jobs/{job_id}/explain/")
    assert answer.status_code == 200
    return answer.json()


@pytest.mark.django_db
def test_a_pending_job_names_the_nodes_drained_by_load_with_their_figures(users, api, tmp_path):
    up(tmp_path, THREE)
    report("node01", ut=95.0)
    report("node02", ut=10.0)
    assert load_check() == "drain node01"
    # An administrator's drain is no load cause, whatever its reason says.
    Node.objects.filter(name="node02").update(flags=NodeFlag.DRAIN, reason="bad fan")
    job_id = submit(users["alice"], nodes="3")
    schedule_pass()
    job = Job.objects.get(pk=job_id)
    assert job.state == "PENDING"
    body = explain(api, job_id)
    # The reason code stays the scheduler's, bare, and every cause carries it.
    assert body["reason"] == job.reason and job.reason in set(Reason)
    load = [c for c in body["causes"] if c["level"] == "node load"]
    assert load == [
        {
            "reason": job.reason,
            "holder": "node01: drained by the load check: ut=95 > LoadSchedUt=80 (partition p1)",
            "level": "node load",
            "release": UNDRAIN,
        }
    ]


@pytest.mark.django_db
def test_the_figures_that_drained_a_node_back_within_its_thresholds(users, api, tmp_path):
    up(tmp_path, THREE)
    report("node01", mem=1100, ut=85.5)
    load_check()
    report("node01", mem=1300)  # on the threshold: not satisfied, nor crossed any more
    job_id = submit(users["alice"], nodes="3")
    schedule_pass()
    (cause,) = [c for c in explain(api, job_id)["causes"] if c["level"] == "node load"]
    assert cause["holder"] == (
        "node01: drained by the load check: mem=1100 < LoadSchedMem=1300, ut=85.5 > LoadSchedUt=80 "
        "when drained (partition p1)"
    )


@pytest.mark.django_db
def test_no_load_cause_outside_the_job_s_nodes_or_for_a_held_job(users, api, tmp_path):
    up(tmp_path, THREE)
    report("node01", ut=95.0)
    load_check()
    Node.objects.filter(name__in=["node02", "node03"]).update(base_state=NodeBase.DOWN, reason="gone")
    beside = submit(users["alice"], nodelist="node02")  # node01 is none of its nodes
    excluded = submit(users["alice"], exclude="node01")
    held = submit(users["alice"], hold=True)
    schedule_pass()
    for job_id in (beside, excluded, held):
        causes = explain(api, job_id)["causes"]
        assert Job.objects.get(pk=job_id).state == "PENDING"
        assert [c for c in causes if c["level"] == "node load"] == [], job_id
    assert explain(api, held)["reason"] == "JobHeldUser"


@pytest.mark.django_db
def test_a_job_stopped_by_load_says_why_and_what_continues_it(users, api, tmp_path):
    up(tmp_path, EXAMPLE.replace(" State=CLOUD", ""))
    running(1, priority=100, started_ago=600)
    running(2, priority=50, started_ago=500)
    report("compute1", mem=1100)
    assert load_check() == "drain compute1, stop job 2 on compute1"
    body = explain(api, 2)
    assert (body["state"], body["reason"]) == ("STOPPED", Job.objects.get(pk=2).reason)
    assert body["causes"] == [
        {
            "reason": body["reason"],
            "holder": "compute1: stopped by the load check: mem=1100 < LoadStopMem=1200 "
            "(partition partition-U7KH5); now mem=1100 < LoadStopMem=1200; its memory, CPUs and "
            "nodes stay allocated to it",
            "level": "node load",
            "release": "It is continued when every LoadSched threshold is satisfied again "
            "(mem > 1300, ut < 80), the stopped jobs of a node one per check, the highest "
            "priority first (at equal priority the earliest started).",
        }
    ]
    assert explain(api, 1)["causes"] == []  # running: nothing holds it
    # A job suspended by scontrol is no load stop.
    Job.objects.filter(pk=1).update(state="SUSPENDED", paused_at=timezone.now() - timedelta(seconds=1))
    assert explain(api, 1)["causes"] == []


@pytest.mark.django_db
def test_beyond_eight_drained_nodes_the_rest_are_one_cause(users, api, tmp_path):
    up(tmp_path, THREE.replace("node[01-03]", "node[01-10]"))
    for n in range(1, 11):
        report(f"node{n:02d}", ut=95.0)
    load_check()
    job_id = submit(users["alice"])
    schedule_pass()
    load = [c["holder"] for c in explain(api, job_id)["causes"] if c["level"] == "node load"]
    assert load[:8] == [
        f"node{n:02d}: drained by the load check: ut=95 > LoadSchedUt=80 (partition p1)" for n in range(1, 9)
    ]
    assert load[8:] == ["node[09-10]: 2 more nodes drained by the load check"]
