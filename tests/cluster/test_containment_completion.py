"""The controller's side of containment (#16 point 4): the launch carries the job's memory
on its node, a completion that says ``out_of_memory`` ends the job OUT_OF_MEMORY with
Slurm's ExitCode 0:125, and the agent's samples land on the job and in the API."""

from __future__ import annotations

import pytest
from django.utils import timezone

from cluster.models import Event, Job
from cluster.services import agents
from cluster.services.jobs import job_cancel
from cluster.services.scheduling import schedule_pass
from cluster.services.state import launch_payload
from tests.cluster.test_lifecycle import register, submit

pytestmark = pytest.mark.django_db


def _complete(job: Job, **extra: object) -> bool:
    body = {
        "job_id": job.id,
        "node": job.batch_host,
        "exit_code": 0,
        "signal": 9,
        "end_time": timezone.now().timestamp(),
        "run": job.restart_count,
        **extra,
    }
    return agents.jobs_completed(completions=[body]) == 1


def _running(user, **spec) -> Job:
    register()
    job_id = submit(user, **spec)
    schedule_pass()
    job = Job.objects.get(pk=job_id)
    assert job.state == "RUNNING"
    return job


def test_the_launch_carries_the_memory_the_job_holds_on_its_node(demo, users):
    job = _running(users["alice"], mem="300", cpus_per_task=2)
    launch = launch_payload(job)["job"]
    assert (launch["cpus_on_node"], launch["mem_on_node"]) == (2, 300)


def test_a_job_over_its_memory_ends_out_of_memory_with_slurms_exit_code(demo, users, api):
    job = _running(users["alice"], mem="100")
    assert _complete(job, out_of_memory=True, max_rss_kb=150_000, total_cpu_secs=2.5)
    job.refresh_from_db()
    assert (job.state, job.reason, job.exit_code, job.exit_signal) == ("OUT_OF_MEMORY", "OutOfMemory", 0, 125)
    assert (job.max_rss_kb, job.total_cpu_secs) == (150_000, 2.5)
    assert Event.objects.filter(job_id=job.id, new_state="OUT_OF_MEMORY").count() == 1
    shown = api("alice").get(f"/api/jobs/{job.id}/").json()
    assert (shown["state"], shown["exit_code"]) == ("OUT_OF_MEMORY", "0:125")
    assert (shown["max_rss_kb"], shown["total_cpu_secs"]) == (150_000, 2.5)


def test_a_completion_of_an_earlier_agent_records_no_samples(demo, users, api):
    job = _running(users["alice"])
    assert _complete(job, signal=0)
    job.refresh_from_db()
    assert (job.state, job.max_rss_kb, job.total_cpu_secs) == ("COMPLETED", None, None)
    shown = api("alice").get(f"/api/jobs/{job.id}/").json()
    assert (shown["max_rss_kb"], shown["total_cpu_secs"]) == (None, None)


def test_samples_that_are_not_numbers_are_not_recorded(demo, users):
    job = _running(users["alice"])
    assert _complete(job, signal=0, max_rss_kb=True, total_cpu_secs=-1)
    job.refresh_from_db()
    assert (job.state, job.max_rss_kb, job.total_cpu_secs) == ("COMPLETED", None, None)


def test_a_job_cancelled_before_it_went_over_its_memory_stays_cancelled(demo, users):
    job = _running(users["alice"], mem="100")
    job_cancel(actor=users["alice"], job_id=job.id)
    job.refresh_from_db()
    assert _complete(job, out_of_memory=True, max_rss_kb=200_000, total_cpu_secs=1.0)
    job.refresh_from_db()
    assert (job.state, job.max_rss_kb) == ("CANCELLED", 200_000)
