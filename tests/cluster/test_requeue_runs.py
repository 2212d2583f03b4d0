"""A requeued job's earlier runs (cluster/run_records.py, cluster/run_accounting.py): kept
when a requeue ends them, and listed by ``GET /api/accounting/jobs/?duplicates=1``."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from cluster.models import Job, JobRun
from cluster.services import agents
from cluster.services.jobs import job_requeue
from cluster.services.scheduling import health_pass, schedule_pass
from tests.cluster import test_lifecycle as lifecycle

pytestmark = pytest.mark.django_db

NODES = [f"node{i:02d}" for i in range(1, 5)]
URL = "/api/accounting/jobs/"


def register(now=None):
    return lifecycle.register(now=now, nodes=NODES)




def done(job, *, exit_code=0, signal=0, now=None):
    body = {
        "job_id": job.id,
        "node": job.batch_host,
        "exit_code": exit_code,
        "signal": signal,
        "run": job.restart_count,
        "end_time": (now or timezone.now()).timestamp(),
    }
    return agents.job_completed(completion=body, now=now)


def running(job_id, now):
    schedule_pass(now=now)
    job = Job.objects.get(pk=job_id)
    assert job.state == "RUNNING", job.reason
    agents.job_started(job_id=job_id, node=job.batch_host, run=job.restart_count)
    job.refresh_from_db()
    return job


def records(api, who="alice", **params):
    answer = api(who).get(URL, {"all_users": "1", **{k: str(v) for k, v in params.items()}})
    assert answer.status_code == 200, answer.content
    return answer.json()["jobs"]


def test_scontrol_requeue_of_a_running_job_keeps_its_run_as_requeued(demo, users, api):
    now = timezone.now()
    register(now=now)
    job_id = lifecycle.submit(users["alice"], nodelist="node02", requeue=True)
    job = running(job_id, now)
    first_start, first_submit = job.start_time, job.submit_time
    job_requeue(actor=users["alice"], job_id=job_id)
    asked = Job.objects.get(pk=job_id).kill_requested
    assert not JobRun.objects.exists()  # kept once its processes are gone
    done(job, signal=15)

    run = JobRun.objects.get(job_id=job_id)
    assert (run.run, run.state, run.exit_code, run.exit_signal) == (0, "REQUEUED", 0, 0)
    assert (run.start_time, run.end_time, run.submit_time) == (first_start, asked, first_submit)
    assert (run.node_list, run.nnodes, run.alloc_cpus) == ("node02", 1, 1)
    assert run.alloc_tres.startswith("billing=1,cpu=1,")
    [batch] = run.steps
    assert (batch["step_id"], batch["state"], batch["exit_code"], batch["exit_signal"]) == (
        "batch", "CANCELLED", 0, 15
    )  # fmt: skip
    assert batch["node_list"] == "node02"

    # The next run: the job row, listed after the kept one with -D, alone without.
    later = Job.objects.get(pk=job_id).begin_time
    job = running(job_id, later)
    done(job, now=later + timedelta(seconds=3))
    assert [(r["state"], r["restarts"]) for r in records(api, job_id=job_id)] == [("COMPLETED", 1)]
    first, last = records(api, job_id=job_id, duplicates=1)
    assert (first["job_id"], first["state"], first["restarts"], first["node_list"]) == (
        job_id, "REQUEUED", 0, "node02"
    )  # fmt: skip
    assert first["start_time"] == first_start.isoformat() and first["end_time"] == asked.isoformat()
    assert [s["state"] for s in first["steps"]] == ["CANCELLED"]
    assert (last["state"], last["restarts"], [s["state"] for s in last["steps"]]) == (
        "COMPLETED", 1, ["COMPLETED"]
    )  # fmt: skip


def test_a_node_failure_keeps_the_run_as_node_fail(demo, users, api):
    now = timezone.now() - timedelta(hours=1)  # the failure is in the past of the API's now
    register(now=now)
    job_id = lifecycle.submit(users["alice"], nodelist="node01", requeue=True)
    job = running(job_id, now)
    agents.agent_disconnected(nodes=NODES, now=now)
    assert "node01" in health_pass(now=now + timedelta(seconds=21))
    assert Job.objects.get(pk=job_id).state == "PENDING"
    run = JobRun.objects.get(job_id=job_id)
    failed = now + timedelta(seconds=21)
    assert (run.state, run.start_time, run.end_time) == ("NODE_FAIL", job.start_time, failed)
    assert [(s["step_id"], s["state"]) for s in run.steps] == [("batch", "NODE_FAIL")]
    # Pending again: -D lists the failed run, then the job's pending record.
    assert [r["state"] for r in records(api, job_id=job_id, duplicates=1)] == ["NODE_FAIL", "PENDING"]
    # Matched on its own state and times, as slurmdbd matches each record.
    found = records(api, job_id=job_id, duplicates=1, state="NF")
    assert [r["state"] for r in found] == ["NODE_FAIL"]
    assert records(api, job_id=job_id, state="NF") == []


def test_a_finished_job_requeued_keeps_its_run_with_the_step_it_ended_with(demo, users):
    now = timezone.now()
    register(now=now)
    job_id = lifecycle.submit(users["alice"], requeue=True)
    job = running(job_id, now)
    done(job, exit_code=3)
    ended = Job.objects.get(pk=job_id).end_time
    job_requeue(actor=users["alice"], job_id=job_id)
    run = JobRun.objects.get(job_id=job_id)
    # slurmctld rewrites the finished record: REQUEUED, ended at the requeue.
    assert (run.state, run.exit_code) == ("REQUEUED", 3)
    assert run.end_time >= ended
    [batch] = run.steps
    assert (batch["state"], batch["exit_code"], batch["end_time"]) == ("FAILED", 3, ended.isoformat())


def test_the_duplicates_parameter_is_checked_and_runs_are_matched_by_their_job_s_user(demo, users, api):
    now = timezone.now()
    register(now=now)
    job_id = lifecycle.submit(users["alice"], requeue=True)
    job = running(job_id, now)
    job_requeue(actor=users["alice"], job_id=job_id)
    done(job, signal=15)
    answer = api("alice").get(URL, {"job_id": str(job_id), "duplicates": "yes"})
    assert answer.status_code == 400 and b"duplicates" in answer.content
    assert [r["state"] for r in records(api, "alice", job_id=job_id, duplicates=1)] == ["REQUEUED", "PENDING"]
    assert records(api, "alice", user="bob", duplicates=1) == []


def test_the_run_s_suspended_time_and_samples_go_with_its_record(demo, users, api):
    from cluster import clock
    from cluster.services.jobs import job_resume, job_suspend

    t0 = (timezone.now() - timedelta(hours=1)).replace(microsecond=0)
    moment = [t0]
    clock.install(lambda: moment[0])
    try:
        register(now=t0)
        job_id = lifecycle.submit(users["alice"], requeue=True)
        job = running(job_id, t0)
        moment[0] = t0 + timedelta(seconds=10)
        job_suspend(actor=users["admin"], job_id=job_id)
        moment[0] = t0 + timedelta(seconds=40)
        job_resume(actor=users["admin"], job_id=job_id)
        moment[0] = t0 + timedelta(seconds=100)
        job_requeue(actor=users["alice"], job_id=job_id)
        body = {"job_id": job_id, "node": job.batch_host, "exit_code": 0, "signal": 15, "run": 0,
                "end_time": moment[0].timestamp(), "max_rss_kb": 2048, "total_cpu_secs": 1.5}  # fmt: skip
        assert agents.job_completed(completion=body, now=moment[0] + timedelta(seconds=1))
    finally:
        clock.uninstall()
    run = JobRun.objects.get(job_id=job_id)
    assert (run.paused_seconds, run.max_rss_kb, run.total_cpu_secs) == (30, 2048, 1.5)
    job = Job.objects.get(pk=job_id)
    # The next run starts without them, as Slurm's next record does.
    assert (job.paused_seconds, job.paused_at, job.max_rss_kb, job.total_cpu_secs) == (0, None, None, None)
    first, _pending = records(api, job_id=job_id, duplicates=1)
    assert (first["elapsed"], first["suspended"], first["max_rss_kb"]) == (70, 30, 2048)
    assert first["steps"][0]["max_rss_kb"] == 2048


def test_a_failed_prolog_keeps_a_run_without_a_batch_step(demo, users):
    from cluster.services import prolog_epilog

    now = timezone.now()
    register(now=now)
    job_id = lifecycle.submit(users["alice"], requeue=True)
    schedule_pass(now=now)
    job = Job.objects.get(pk=job_id)
    # Its Prolog failed on the node: the script never started (no "started" report).
    prolog_epilog.prolog_failed(job_id=job_id, node=job.batch_host, run=0, error="exited with status 1")
    assert Job.objects.get(pk=job_id).hold == "user"
    run = JobRun.objects.get(job_id=job_id)
    assert (run.state, run.node_list, run.start_time) == ("REQUEUED", job.node_list, job.start_time)
    assert run.steps == []
