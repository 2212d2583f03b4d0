"""A job's life through the services, with the clock moved by hand: register, schedule,
complete (exactly once), node failure and requeue, time limits, reconciliation."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from cluster.models import Event, Job, Node
from cluster.services import agents
from cluster.services.jobs import job_cancel, job_submit
from cluster.services.scheduling import health_pass, schedule_pass

pytestmark = pytest.mark.django_db

NODES = [f"node{i:02d}" for i in range(1, 33)]


def register(now=None, running=(), completions=(), nodes=NODES):
    return agents.agent_register(
        agent_id="test:1",
        nodes=[{"name": n, "cpus": 4, "real_memory": 2000, "boot_time": 1.0} for n in nodes],
        running=list(running),
        completions=list(completions),
        now=now,
    )


def submit(user, **spec):
    return job_submit(user=user, spec={"wrap": "true", "work_dir": "/tmp", **spec}).job_ids[0]


def done(job, *, exit_code=0, signal=0, run=None):
    body = {
        "job_id": job.id,
        "node": job.batch_host,
        "exit_code": exit_code,
        "signal": signal,
        "end_time": timezone.now().timestamp(),
    }
    if run is not None:
        body["run"] = run
    return agents.job_completed(completion=body)


def test_registration_brings_nodes_up(demo):
    assert Node.objects.get(name="node01").base_state == "UNKNOWN"
    result = register()
    assert result.accepted == NODES and not result.rejected
    node = Node.objects.get(name="node01")
    assert node.state == "IDLE" and node.reported_cpus == 4 and node.agent_id == "test:1"


def test_unknown_nodes_are_rejected(demo):
    result = register(nodes=["node01", "node99"])
    assert result.accepted == ["node01"]
    assert "node99" in result.rejected


def test_job_runs_on_lowest_weight_node_and_completes_once(demo, users):
    register()
    job_id = submit(users["alice"], partition="batch")
    schedule_pass()
    job = Job.objects.get(pk=job_id)
    assert job.state == "RUNNING" and job.batch_host == "node09" and job.alloc == {"node09": [1, 0]}
    assert Node.objects.get(name="node09").base_state == "MIXED"
    assert done(job) is True
    assert done(job) is False  # the agent resent it: nothing changes the second time
    job.refresh_from_db()
    assert job.state == "COMPLETED" and job.exit_code == 0
    assert Event.objects.filter(job_id=job_id, new_state="COMPLETED").count() == 1
    assert Node.objects.get(name="node09").base_state == "IDLE"


def test_a_failing_script_ends_failed_with_its_exit_code(demo, users):
    register()
    job_id = submit(users["alice"])
    schedule_pass()
    done(Job.objects.get(pk=job_id), exit_code=3)
    job = Job.objects.get(pk=job_id)
    assert (job.state, job.exit_code, job.reason) == ("FAILED", 3, "NonZeroExitCode")


def test_time_limit_above_partition_max_pends(demo, users):
    register()
    job_id = submit(users["alice"], partition="debug", time="2:00:00")
    schedule_pass()
    job = Job.objects.get(pk=job_id)
    assert (job.state, job.reason) == ("PENDING", "PartitionTimeLimit")


def test_time_limit_enforced(demo, users):
    register()
    job_id = submit(users["alice"], time="1")
    schedule_pass()
    schedule_pass(now=timezone.now() + timedelta(minutes=2))
    job = Job.objects.get(pk=job_id)
    assert job.final_state == "TIMEOUT" and job.kill_requested
    done(job, signal=15)
    job.refresh_from_db()
    assert (job.state, job.reason) == ("TIMEOUT", "TimeLimit")


def test_cancel_running_job_records_cancelled(demo, users):
    register()
    job_id = submit(users["alice"])
    schedule_pass()
    job_cancel(actor=users["alice"], job_id=job_id)
    job = Job.objects.get(pk=job_id)
    assert job.state == "RUNNING" and job.final_state == "CANCELLED"
    done(job, signal=15)
    assert Job.objects.get(pk=job_id).state == "CANCELLED"


def test_silent_node_goes_down_and_its_job_is_requeued_then_runs_again(demo, users):
    now = timezone.now()
    register(now=now)
    job_id = submit(users["alice"], nodelist="node01")
    schedule_pass(now=now)
    job = Job.objects.get(pk=job_id)
    agents.job_started(job_id=job_id, node="node01", run=0)
    agents.agent_disconnected(nodes=NODES, now=now)
    assert "NOT_RESPONDING" in Node.objects.get(name="node01").state
    assert health_pass(now=now + timedelta(seconds=5)) == []
    downed = health_pass(now=now + timedelta(seconds=21))
    assert "node01" in downed
    node = Node.objects.get(name="node01")
    assert node.state == "DOWN+NOT_RESPONDING" and node.reason == "Not responding"
    job.refresh_from_db()
    assert (job.state, job.restart_count, job.alloc) == ("PENDING", 1, {})
    # Not eligible again before its last run's credentials expire (batch_requeue_fini),
    # and submitted anew as accounting tells it.
    assert job.begin_time == now + timedelta(seconds=21 + 6)  # the demo's cred_expire=5
    assert job.submit_time == now + timedelta(seconds=21)
    # The agent comes back, still running the first run: it is told to kill it.
    later = now + timedelta(seconds=25)
    result = register(now=later, running=[{"job_id": job_id, "node": "node01", "run": 0}])
    assert result.kill == [job_id]
    assert Node.objects.get(name="node01").state == "IDLE"  # ReturnToService=1
    schedule_pass(now=later)
    job.refresh_from_db()
    assert (job.state, job.reason) == ("PENDING", "BeginTime")
    later = job.begin_time
    schedule_pass(now=later)
    job.refresh_from_db()
    assert (job.state, job.batch_host) == ("RUNNING", "node01")
    # A late completion of the first run is not taken for the second.
    assert done(job, run=0) is False
    assert done(job, run=1) is True
    assert Event.objects.filter(job_id=job_id, new_state="COMPLETED").count() == 1


def test_no_requeue_jobs_end_node_fail(demo, users):
    now = timezone.now()
    register(now=now)
    job_id = submit(users["alice"], requeue=False)
    schedule_pass(now=now)
    health_pass(now=now + timedelta(seconds=60))
    assert Job.objects.get(pk=job_id).state == "NODE_FAIL"


def test_reconnect_relaunches_unacknowledged_launch_and_reports_completions(demo, users):
    register()
    first = submit(users["alice"])
    second = submit(users["alice"])
    schedule_pass()
    a, b = Job.objects.get(pk=first), Job.objects.get(pk=second)
    completion = {"job_id": a.id, "node": a.batch_host, "exit_code": 0, "signal": 0, "run": 0}
    result = register(completions=[completion])
    assert result.acked == [a.id]
    assert [p["job"]["job_id"] for p in result.relaunch] == [b.id]
    assert Job.objects.get(pk=first).state == "COMPLETED"


def test_launch_failure_fails_the_job(demo, users):
    register()
    job_id = submit(users["alice"])
    schedule_pass()
    job = Job.objects.get(pk=job_id)
    agents.job_launch_failed(job_id=job_id, node=job.batch_host, error="user alice does not exist", run=0)
    job.refresh_from_db()
    assert (job.state, job.reason) == ("FAILED", "JobLaunchFailure")
    assert Node.objects.get(name=job.batch_host).alloc_cpus == 0


def test_array_throttle_limits_running_tasks(demo, users):
    register()
    job_job = job_submit(user=users["alice"], spec={"wrap": "true", "work_dir": "/tmp", "array": "0-5%2"})
    schedule_pass()
    running = Job.objects.filter(array_job_id=job_job.array_job_id, state="RUNNING").count()
    assert running == 2
    assert Job.objects.filter(array_job_id=job_job.array_job_id, reason="JobArrayTaskLimit").count() == 4


def test_licenses_hold_jobs_until_released(demo, users):
    register()
    first = submit(users["alice"], licenses="ansys:8")
    schedule_pass()
    second = submit(users["alice"], licenses="ansys:3")
    schedule_pass()
    assert Job.objects.get(pk=first).state == "RUNNING"
    job = Job.objects.get(pk=second)
    assert (job.state, job.reason) == ("PENDING", "Licenses")
    assert "ansys: 3 requested, 2 free" in job.reason_detail
    done(Job.objects.get(pk=first))
    schedule_pass()
    assert Job.objects.get(pk=second).state == "RUNNING"


def test_a_silent_agent_is_marked_not_responding_and_recovers_on_its_next_ping(demo):
    now = timezone.now()
    register(now=now)
    health_pass(now=now + timedelta(seconds=16))
    assert Node.objects.get(name="node01").state == "IDLE+NOT_RESPONDING"
    agents.agent_ping(nodes=["node01"], now=now + timedelta(seconds=17))
    assert Node.objects.get(name="node01").state == "IDLE"
