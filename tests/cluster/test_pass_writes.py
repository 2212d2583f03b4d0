"""A pass reads a snapshot, decides, then writes: each write holds only if the job is still
as the snapshot saw it. A hold or a cancel landing in between wins, and the pass's decision
for that job is dropped (the next pass decides again)."""

from __future__ import annotations

import os

import pytest
from django.db import connections

from cluster.core import scheduler
from cluster.models import Event, Job
from cluster.services import agents
from cluster.services.jobs import job_hold, job_submit
from cluster.services.scheduling import schedule_pass
from tests.cluster.pg_locks import in_thread, until, waiting_on_locks

NODES = [f"node{i:02d}" for i in range(1, 33)]


def register():
    agents.agent_register(
        agent_id="test:1",
        nodes=[{"name": n, "cpus": 4, "real_memory": 2000, "boot_time": 1.0} for n in NODES],
        running=[],
        completions=[],
    )


def submit(user, **spec):
    return job_submit(user=user, spec={"wrap": "true", "work_dir": "/tmp", **spec}).job_ids[0]


def hold_after_the_decision(monkeypatch, actor, job_id):
    """``scontrol hold`` committed after the core decided, before the pass writes."""
    decide = scheduler.schedule

    def deciding_then_held(*args, **kwargs):
        result = decide(*args, **kwargs)
        job_hold(actor=actor, job_id=job_id)
        return result

    monkeypatch.setattr(scheduler, "schedule", deciding_then_held)


def test_a_hold_after_the_decision_keeps_its_reason_and_priority(demo, users, monkeypatch):
    register()
    submit(users["alice"], nodelist="node01", cpus_per_task=4)
    schedule_pass()
    # node01 is full: the pass finds the job waiting for resources, and would say so.
    job_id = submit(users["alice"], nodelist="node01", cpus_per_task=4)
    hold_after_the_decision(monkeypatch, users["alice"], job_id)
    schedule_pass()
    job = Job.objects.get(pk=job_id)
    assert (job.state, job.hold, job.reason, job.priority) == ("PENDING", "user", "JobHeldUser", 0)
    monkeypatch.undo()
    schedule_pass()  # and the next pass leaves the held job alone too
    job = Job.objects.get(pk=job_id)
    assert (job.reason, job.priority) == ("JobHeldUser", 0)


def test_a_hold_after_the_decision_to_start_keeps_the_job_waiting(demo, users, monkeypatch):
    register()
    job_id = submit(users["alice"])
    hold_after_the_decision(monkeypatch, users["alice"], job_id)
    summary = schedule_pass()
    job = Job.objects.get(pk=job_id)
    assert (job.state, job.hold, job.reason, job.priority) == ("PENDING", "user", "JobHeldUser", 0)
    assert job.batch_host == "" and not Event.objects.filter(job_id=job_id, new_state="RUNNING").exists()
    assert summary.started == 1  # decided, then dropped at the write


@pytest.mark.distributed
@pytest.mark.skipif(not os.environ.get("FSCHED_DATABASE_URL"), reason="needs FSCHED_DATABASE_URL")
@pytest.mark.django_db(transaction=True)
def test_a_cancel_committed_while_the_pass_writes_is_not_overwritten(demo, users):
    register()
    job_id = submit(users["alice"])
    canceller = connections.create_connection("default")
    errors: list[BaseException] = []
    try:
        with canceller.cursor() as cursor:
            # scancel's write, its transaction not yet committed when the pass reaches the job
            cursor.execute("BEGIN")
            cancel = "UPDATE cluster_job SET state = 'CANCELLED', end_time = now() WHERE id = %s"
            cursor.execute(cancel, [job_id])
        worker = in_thread(schedule_pass, errors)
        until(lambda: waiting_on_locks() >= 1 or not worker.is_alive(), "the pass to reach the job")
        assert worker.is_alive(), errors
        with canceller.cursor() as cursor:
            cursor.execute("COMMIT")
    finally:
        canceller.close()
    worker.join(30)
    assert not errors, errors
    job = Job.objects.get(pk=job_id)
    assert (job.state, job.batch_host) == ("CANCELLED", "")
    assert not Event.objects.filter(job_id=job_id, new_state="RUNNING").exists()
