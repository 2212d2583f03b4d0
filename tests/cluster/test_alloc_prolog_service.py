"""PrologFlags=Alloc at the controller (#16 point 3): a multi-node job waits CONFIGURING
while its other nodes run their Prolog, the last success launches it on its batch host,
and a failure on any node drains that node and requeues the job held. And a COMPLETING
job's nodes carry COMPLETING until their Epilog is done."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from cluster.core.states import NodeFlag, long_state, sinfo_short
from cluster.models import Job, Node
from cluster.services import agents, prolog_epilog
from cluster.services.jobs import job_cancel, job_requeue, job_submit
from cluster.services.scheduling import schedule_pass
from slurmwords.reasons import slurm_reason
from tests.cluster.test_prolog_epilog_service import completion, register, running_job, set_option

pytestmark = pytest.mark.django_db


def started_with_alloc(users, monkeypatch, *, nodes: int = 3) -> tuple[Job, list]:
    set_option("PrologFlags", "Alloc")
    register(timezone.now() - timedelta(minutes=1))
    sent: list = []
    monkeypatch.setattr("cluster.publish.to_agents", sent.extend)
    spec = {"wrap": "true", "work_dir": "/tmp", "partition": "batch", "nodes": str(nodes)}
    job_id = job_submit(user=users["alice"], spec=spec).job_ids[0]
    schedule_pass()
    return Job.objects.get(pk=job_id), sent


def kinds(sent: list) -> list[tuple[str, str]]:
    return [(node, payload["type"]) for node, payload in sent]


def test_alloc_runs_the_prolog_on_the_other_nodes_before_the_launch(demo, users, monkeypatch):
    job, sent = started_with_alloc(users, monkeypatch)
    others = sorted(n for n in job.alloc if n != job.batch_host)
    assert job.state == "CONFIGURING" and job.prolog_nodes == others
    assert sorted(kinds(sent)) == [(n, "run_prolog") for n in others]
    assert sent[0][1]["job"]["node_list"] == job.node_list and sent[0][1]["run"] == 0
    sent.clear()
    prolog_epilog.prolog_done(job_id=job.id, node=others[0], run=0)
    prolog_epilog.prolog_done(job_id=job.id, node=others[0], run=0)  # a repeat changes nothing
    job.refresh_from_db()
    assert job.state == "CONFIGURING" and job.prolog_nodes == others[1:] and not sent
    prolog_epilog.prolog_done(job_id=job.id, node=others[1], run=0)
    job.refresh_from_db()
    assert (job.state, job.prolog_nodes) == ("RUNNING", [])
    assert kinds(sent) == [(job.batch_host, "launch")]


def test_a_failed_alloc_prolog_drains_that_node_and_requeues_the_job_held(demo, users, monkeypatch):
    job, sent = started_with_alloc(users, monkeypatch)
    failing = job.prolog_nodes[-1]
    others = list(job.prolog_nodes)
    sent.clear()
    prolog_epilog.prolog_failed(job_id=job.id, node=failing, run=0, error="exited with status 1")
    # The nodes that ran (or run) the Prolog run the Epilog, as Slurm ends an allocation.
    assert sorted(kinds(sent)) == [(n, "run_epilog") for n in others]
    assert sent[0][1]["run"] == 0
    node = Node.objects.get(name=failing)
    assert (bool(node.flags & NodeFlag.DRAIN), node.reason) == (True, "Prolog error")
    assert not Node.objects.get(name=job.batch_host).flags & NodeFlag.DRAIN
    job.refresh_from_db()
    assert (job.state, job.hold, job.alloc, job.restart_count) == ("PENDING", "user", {}, 1)
    assert job.prolog_nodes == []
    assert slurm_reason(job.reason, job.reason_detail) == "launch failed requeued held"
    # The other node's late success is about a run that is over.
    prolog_epilog.prolog_done(job_id=job.id, node=job.prolog_nodes[0] if job.prolog_nodes else failing, run=0)
    assert Job.objects.get(pk=job.id).state == "PENDING"


def test_a_failed_alloc_prolog_cancels_a_job_that_may_not_be_requeued(demo, users, monkeypatch):
    set_option("PrologFlags", "Alloc")
    register(timezone.now() - timedelta(minutes=1))
    spec = {"wrap": "true", "work_dir": "/tmp", "partition": "batch", "nodes": "2", "requeue": False}
    job_id = job_submit(user=users["alice"], spec=spec).job_ids[0]
    schedule_pass()
    job = Job.objects.get(pk=job_id)
    prolog_epilog.prolog_failed(job_id=job.id, node=job.prolog_nodes[0], run=0, error="exited with status 1")
    job.refresh_from_db()
    assert (job.state, job.reason) == ("CANCELLED", "JobLaunchFailure")


def test_without_alloc_a_multi_node_job_launches_at_once(demo, users, monkeypatch):
    register(timezone.now() - timedelta(minutes=1))
    sent: list = []
    monkeypatch.setattr("cluster.publish.to_agents", sent.extend)
    job_id = job_submit(user=users["alice"], spec={"wrap": "true", "work_dir": "/tmp", "partition": "batch",
                                                   "nodes": "2"}).job_ids[0]  # fmt: skip
    schedule_pass()
    job = Job.objects.get(pk=job_id)
    assert (job.state, job.prolog_nodes) == ("RUNNING", [])
    assert kinds(sent) == [(job.batch_host, "launch")]


def test_a_reregistering_agent_is_sent_the_alloc_prologs_it_missed(demo, users, monkeypatch):
    job, _ = started_with_alloc(users, monkeypatch, nodes=2)
    result = agents.agent_register(
        agent_id="test:1",
        nodes=[{"name": n, "cpus": 4, "real_memory": 2000, "boot_time": 1.0} for n in job.alloc],
        running=[], completions=[], now=timezone.now(),
    )  # fmt: skip
    assert [(p["type"], p["node"]) for p in result.relaunch] == [("run_prolog", job.prolog_nodes[0])]


def state_of(name: str) -> tuple[str, str]:
    node = Node.objects.get(name=name)
    return long_state(node.base_state, node.flags), sinfo_short(node.base_state, node.flags)


def test_a_completing_jobs_nodes_are_completing_until_their_epilog_is_done(demo, users):
    set_option("Epilog", "/etc/slurm/epilog")
    register(timezone.now() - timedelta(minutes=1))
    job = running_job(users["alice"], nodes="2", ntasks="2")
    first, second = sorted(job.alloc)
    # Another job beside it on the second node keeps that one MIXED.
    other = running_job(users["alice"], nodelist=second)
    assert state_of(first) == ("MIXED", "mix")
    agents.job_completed(completion=completion(job))
    assert state_of(first) == ("IDLE+COMPLETING", "comp")
    assert state_of(second) == ("MIXED+COMPLETING", "comp")
    assert Node.objects.get(name=first).alloc_cpus > 0  # held until its Epilog is done
    prolog_epilog.epilog_done(job_id=job.id, node=first, run=0)
    assert state_of(first) == ("IDLE", "idle")
    assert state_of(second) == ("MIXED+COMPLETING", "comp")
    prolog_epilog.epilog_done(job_id=job.id, node=second, run=0)
    assert state_of(second) == ("MIXED", "mix")
    assert Job.objects.get(pk=job.id).state == "COMPLETED"
    assert Job.objects.get(pk=other.id).state == "RUNNING"


def test_contain_implies_alloc(demo, users, monkeypatch):
    set_option("PrologFlags", "Contain")
    register(timezone.now() - timedelta(minutes=1))
    sent: list = []
    monkeypatch.setattr("cluster.publish.to_agents", sent.extend)
    spec = {"wrap": "true", "work_dir": "/tmp", "partition": "batch", "nodes": "2"}
    job_id = job_submit(user=users["alice"], spec=spec).job_ids[0]
    schedule_pass()
    job = Job.objects.get(pk=job_id)
    assert job.state == "CONFIGURING" and len(job.prolog_nodes) == 1
    assert kinds(sent) == [(job.prolog_nodes[0], "run_prolog")]


def test_a_job_requeued_while_its_alloc_prologs_run_goes_back_at_once(demo, users, monkeypatch):
    job, _ = started_with_alloc(users, monkeypatch, nodes=2)
    [other] = job.prolog_nodes
    sent = []
    monkeypatch.setattr("cluster.publish.to_agents", sent.extend)
    job_requeue(actor=users["alice"], job_id=job.id)
    assert kinds(sent) == [(other, "run_epilog")]
    job.refresh_from_db()
    assert (job.state, job.alloc, job.prolog_nodes, job.restart_count) == ("PENDING", {}, [], 1)
    # The node's late answer is about a run that is over.
    prolog_epilog.prolog_done(job_id=job.id, node=other, run=0)
    assert Job.objects.get(pk=job.id).state == "PENDING"


def test_a_job_cancelled_while_its_alloc_prologs_run_ends_at_once(demo, users, monkeypatch):
    job, sent = started_with_alloc(users, monkeypatch, nodes=2)
    [other] = job.prolog_nodes
    sent.clear()
    job_cancel(actor=users["alice"], job_id=job.id)
    job.refresh_from_db()
    assert (job.state, job.alloc, job.prolog_nodes) == ("CANCELLED", {}, [])
    assert kinds(sent) == [(other, "run_epilog")]
