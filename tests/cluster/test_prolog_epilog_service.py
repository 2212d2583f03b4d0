"""The controller's side of Prolog and Epilog (cluster/services/prolog_epilog.py and the
completion path): a job that ends goes COMPLETING, its nodes held, while slurm.conf names
an Epilog; a failed Prolog drains the node and requeues the job held, or cancels it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from cluster.core.states import NodeFlag
from cluster.models import ClusterConfig, Event, Job, Node
from cluster.services import agents, prolog_epilog
from cluster.services.errors import ServiceError
from cluster.services.jobs import job_cancel, job_release, job_submit
from cluster.services.launch_watch import launch_watch_pass
from cluster.services.scheduling import schedule_pass
from slurmwords.reasons import slurm_reason

pytestmark = pytest.mark.django_db

NODES = [f"node{i:02d}" for i in range(1, 33)]


def register(now):
    agents.agent_register(
        agent_id="test:1",
        nodes=[{"name": n, "cpus": 4, "real_memory": 2000, "boot_time": 1.0} for n in NODES],
        running=[],
        completions=[],
        now=now,
    )


def set_option(key: str, value: str) -> None:
    # Saved as an administrator's change is: a new revision, so no process keeps the old
    # options (a counter on the revision could meet a revision kept from an earlier test).
    cfg = ClusterConfig.for_update()
    cfg.options = {**cfg.options, key: value}
    cfg.save(update_fields=["options"])


def running_job(user, **spec) -> Job:
    spec = {"wrap": "true", "work_dir": "/tmp", "partition": "batch", **spec}
    job_id = job_submit(user=user, spec=spec).job_ids[0]
    schedule_pass()
    job = Job.objects.get(pk=job_id)
    assert job.state == "RUNNING"
    agents.job_started(job_id=job.id, node=job.batch_host, run=job.restart_count)
    return job


def completion(job: Job, exit_code: int = 0, signal: int = 0) -> dict:
    return {"job_id": job.id, "node": job.batch_host, "exit_code": exit_code, "signal": signal,
            "end_time": timezone.now().timestamp(), "run": job.restart_count}  # fmt: skip


def test_with_an_epilog_an_ended_job_is_completing_until_the_epilog_is_done(demo, users):
    set_option("Epilog", "/etc/slurm/epilog")
    register(timezone.now() - timedelta(minutes=1))
    job = running_job(users["alice"])
    host = job.batch_host
    assert agents.job_completed(completion=completion(job, exit_code=3))
    job.refresh_from_db()
    assert (job.state, job.final_state, job.exit_code) == ("COMPLETING", "FAILED", 3)
    assert job.alloc  # its nodes stay held
    assert Node.objects.get(name=host).alloc_cpus > 0
    # A completion sent again changes nothing; a cancel now is Slurm's refusal.
    assert not agents.job_completed(completion=completion(job, exit_code=3))
    with pytest.raises(ServiceError, match="already completing or completed"):
        job_cancel(actor=users["alice"], job_id=job.id)
    # However long the epilog takes, the job is not an unkillable one.
    assert launch_watch_pass(now=timezone.now() + timedelta(hours=1)).endswith("kill_failed=0 drained=0")
    prolog_epilog.epilog_done(job_id=job.id, node=host, run=job.restart_count)
    job.refresh_from_db()
    assert (job.state, job.reason, job.alloc, job.final_state) == ("FAILED", "NonZeroExitCode", {}, "")
    assert Node.objects.get(name=host).alloc_cpus == 0
    assert Event.objects.filter(job_id=job.id, old_state="COMPLETING", new_state="FAILED").exists()


def test_without_an_epilog_a_job_ends_at_once(demo, users):
    register(timezone.now() - timedelta(minutes=1))
    job = running_job(users["alice"])
    assert agents.job_completed(completion=completion(job))
    job.refresh_from_db()
    assert (job.state, job.alloc) == ("COMPLETED", {})


def test_a_failed_epilog_drains_the_node_and_ends_the_job(demo, users):
    set_option("Epilog", "/etc/slurm/epilog")
    register(timezone.now() - timedelta(minutes=1))
    job = running_job(users["alice"])
    agents.job_completed(completion=completion(job))
    prolog_epilog.epilog_failed(job_id=job.id, node=job.batch_host, run=job.restart_count, error="exit 1")
    node = Node.objects.get(name=job.batch_host)
    assert node.flags & NodeFlag.DRAIN
    assert (node.reason, node.reason_user) == ("Epilog error", "slurm")
    job.refresh_from_db()
    assert job.state == "COMPLETED"


def test_a_failed_prolog_drains_the_node_and_requeues_the_job_held(demo, users):
    register(timezone.now() - timedelta(minutes=1))
    job = running_job(users["alice"])
    host, run = job.batch_host, job.restart_count
    prolog_epilog.prolog_failed(job_id=job.id, node=host, run=run, error="exited with status 1")
    node = Node.objects.get(name=host)
    assert (bool(node.flags & NodeFlag.DRAIN), node.reason) == (True, "Prolog error")
    assert node.alloc_cpus == 0
    job.refresh_from_db()
    assert (job.state, job.hold, job.priority, job.alloc) == ("PENDING", "user", 0, {})
    assert job.restart_count == run + 1
    assert slurm_reason(job.reason, job.reason_detail) == "launch failed requeued held"
    # A second copy of the report is about a run that is over: nothing changes.
    prolog_epilog.prolog_failed(job_id=job.id, node=host, run=run)
    assert Job.objects.get(pk=job.id).restart_count == run + 1
    job_release(actor=users["alice"], job_id=job.id)  # the user's hold: the user may release it
    assert Job.objects.get(pk=job.id).hold == ""


def test_a_failed_prolog_cancels_a_job_that_may_not_be_requeued(demo, users):
    register(timezone.now() - timedelta(minutes=1))
    job = running_job(users["alice"], requeue=False)
    prolog_epilog.prolog_failed(job_id=job.id, node=job.batch_host, run=job.restart_count)
    job.refresh_from_db()
    assert (job.state, job.alloc) == ("CANCELLED", {})


def test_force_requeue_on_fail_and_nohold_on_prolog_fail(demo, users):
    set_option("PrologFlags", "ForceRequeueOnFail")
    set_option("SchedulerParameters", "nohold_on_prolog_fail")
    register(timezone.now() - timedelta(minutes=1))
    job = running_job(users["alice"], requeue=False)
    prolog_epilog.prolog_failed(job_id=job.id, node=job.batch_host, run=job.restart_count)
    job.refresh_from_db()
    assert (job.state, job.hold, job.restart_count) == ("PENDING", "", 1)


def test_a_multi_node_job_is_completing_until_every_nodes_epilog_is_done(demo, users, monkeypatch):
    sent = []
    # What the controller sends the agents, caught on its way out (the e2e test runs it for real).
    monkeypatch.setattr("cluster.publish.to_agents", sent.extend)
    set_option("Epilog", "/etc/slurm/epilog")
    register(timezone.now() - timedelta(minutes=1))
    job = running_job(users["alice"], nodes="2", nodelist="node09,node10")
    assert (job.batch_host, sorted(job.alloc)) == ("node09", ["node09", "node10"])
    agents.job_completed(completion=completion(job, signal=9))
    # The other node, which saw no launch, is told to run its Epilog.
    [(node, payload)] = [(n, p) for n, p in sent if p["type"] == "run_epilog"]
    assert node == "node10"
    assert (payload["job_id"], payload["node"]) == (job.id, "node10")
    assert (payload["exit_code"], payload["signal"]) == (0, 9)
    assert payload["job"]["user"] == "alice"
    prolog_epilog.epilog_done(job_id=job.id, node="node09", run=job.restart_count)
    job.refresh_from_db()
    assert (job.state, sorted(job.alloc)) == ("COMPLETING", ["node10"])  # node09 released
    assert Node.objects.get(name="node09").alloc_cpus == 0
    assert Node.objects.get(name="node10").alloc_cpus > 0
    prolog_epilog.epilog_done(job_id=job.id, node="node09", run=job.restart_count)  # again: nothing
    prolog_epilog.epilog_done(job_id=job.id, node="node10", run=job.restart_count)
    job.refresh_from_db()
    assert (job.state, job.alloc) == ("FAILED", {})
