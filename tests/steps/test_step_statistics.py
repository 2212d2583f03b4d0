"""An ended step's statistics in the accounting (cluster/services/step_usage.py's
StepStatistics): kept from its agents' last reports, even once a report no longer holds
the step (the report after its end may come before the end itself), completed by each
task's figures from its reaping (``step_done``'s ``tasks``), added up over the nodes."""

from __future__ import annotations

import pytest
from django.db.models import Q
from django.utils import timezone

from cluster import accounting
from cluster.services import step_usage
from slurmwords import agent_messages as am
from steps import services
from tests.steps.test_step_services import body, running_job

pytestmark = pytest.mark.django_db


def task(n: int, rss_kb: int, cpu: float, *, read: int | None = 4096) -> am.TaskUsage:
    return am.TaskUsage(
        task=n, pids=[100 + n], rss_kb=rss_kb // 2, max_rss_kb=rss_kb, vmem_kb=rss_kb * 2,
        max_vmem_kb=rss_kb * 2, pages=1, max_pages=2, cpu_secs=cpu, read_bytes=read,
        max_read_bytes=read, write_bytes=None, max_write_bytes=None, cpu_freq=2000,
    )  # fmt: skip


def report(node: str, *records: am.StepUsageRecord) -> am.StepUsage:
    return am.StepUsage(time=1.0, nodes=[node], steps=list(records))


def done(job_id: int, node: str, ends: list[dict] | None) -> None:
    msg = {"type": "step_done", "job_id": job_id, "step_id": 0, "node": node, "exit_code": 0, "signal": 0,
           "time": 2.0, **({"tasks": ends} if ends is not None else {})}  # fmt: skip
    services.step_done(nodes=[node], msg=msg)


def steps_of(job_id: int, viewer) -> dict[str, dict]:
    rows, _ = accounting.accounting_jobs(
        viewer=viewer, filters=accounting.Filters(job_ids=Q(pk=job_id)), after=0, limit=10, now=timezone.now()
    )
    return {s["step_id"]: s for s in rows[0]["steps"]}


def test_a_step_keeps_its_last_reports_and_its_reaping_figures_over_its_nodes(demo, users) -> None:
    job = running_job(users["alice"])
    services.create_step(actor=users["alice"], job_id=job.id, data=body())
    (n1, _t1, _c1), (n2, _t2, _c2) = services.Step.objects.get(job=job, step_id=0).layout
    step_usage.usage_reported(nodes=[n1], msg=report(n1, am.StepUsageRecord(job.id, "0", n1, [
        task(0, 4096, 3.0), task(1, 8192, 1.5)])))  # fmt: skip
    step_usage.usage_reported(nodes=[n2], msg=report(n2, am.StepUsageRecord(job.id, "0", n2, [
        task(2, 1024, 2.0), task(3, 2048, 2.5)])))  # fmt: skip
    assert steps_of(job.id, users["alice"])["0"]["stats"] is None  # running: none yet
    # The tasks have ended on n1: its next report has no step 0, before step_done is heard.
    step_usage.usage_reported(nodes=[n1], msg=report(n1))
    ends = [{"task": t, "user_cpu_secs": 3.5, "system_cpu_secs": 0.25, "max_rss_kb": 1, "pages": 7}
            for t in (0, 1)]  # fmt: skip
    done(job.id, n1, ends)
    done(job.id, n2, None)  # an agent that sends no end figures
    step = steps_of(job.id, users["alice"])["0"]
    stats = step["stats"]
    assert stats["ntasks"] == 4 and stats["nodes"] == [n1, n2]
    assert stats["in_max"]["mem"] == [8192 * 1024, n1, 1]  # the reports' largest, not rusage's
    assert stats["in_min"]["cpu"] == [2000, n2, 2]
    assert stats["in_max"]["cpu"] == [3750, n1, 0]  # rusage's CPU time, over the last sample
    assert stats["in_max"]["pages"] == [7, n1, 0]
    assert stats["in_tot"]["fs/disk"] == 4 * 4096
    # UserCPU and SystemCPU only when every task has its reaping's figures.
    assert stats["user_cpu_secs"] is None and step["total_cpu_secs"] == (3750 + 3750 + 2000 + 2500) / 1000
    assert step["max_rss_kb"] == 8192


def test_a_step_shorter_than_a_sample_has_its_reaping_figures(demo, users) -> None:
    job = running_job(users["alice"], nodes=1, ntasks=1)
    services.create_step(actor=users["alice"], job_id=job.id, data=body(ntasks=1))
    node = services.Step.objects.get(job=job, step_id=0).layout[0][0]
    done(job.id, node, [{"task": 0, "user_cpu_secs": 0.01, "system_cpu_secs": 0.02, "max_rss_kb": 9000,
                         "pages": 3}])  # fmt: skip
    step = steps_of(job.id, users["alice"])["0"]
    assert step["stats"]["in_max"]["mem"] == [9000 * 1024, node, 0]
    assert step["stats"]["in_tot"]["mem"] == 9000 * 1024  # AveRSS: its largest, no sample said less
    assert (step["stats"]["user_cpu_secs"], step["stats"]["system_cpu_secs"]) == (0.01, 0.02)
    assert step["total_cpu_secs"] == 0.03 and step["max_rss_kb"] == 9000


def test_the_batch_step_s_statistics_are_its_run_s(demo, users) -> None:
    job = running_job(users["alice"], nodes=1, ntasks=1)
    host = job.batch_host
    step_usage.usage_reported(nodes=[host], msg=report(host, am.StepUsageRecord(job.id, "batch", host, [
        task(0, 2048, 1.0)])))  # fmt: skip
    type(job).objects.filter(pk=job.id).update(state="COMPLETED", max_rss_kb=4096, total_cpu_secs=1.25)
    batch = steps_of(job.id, users["alice"])["batch"]
    assert batch["stats"]["in_max"]["mem"] == [4096 * 1024, host, 0]  # the end report's, larger
    assert batch["total_cpu_secs"] == 1.25 and batch["max_rss_kb"] == 4096
    # The next run's batch step has none of this run's figures.
    type(job).objects.filter(pk=job.id).update(restart_count=1, max_rss_kb=None, total_cpu_secs=None)
    assert steps_of(job.id, users["alice"])["batch"]["stats"] is None


def test_the_interactive_step_s_statistics_are_n_interactive_s(demo, users) -> None:
    job = running_job(users["alice"], nodes=1, ntasks=1)
    step = services.create_step(actor=users["alice"], job_id=job.id, data=body(interactive=True))
    node = step.layout[0][0]
    msg = {"type": "step_done", "job_id": job.id, "step_id": step.step_id, "node": node, "exit_code": 0,
           "signal": 0, "time": 2.0, "tasks": [{"task": 0, "user_cpu_secs": 1.0, "system_cpu_secs": 0.5,
                                                "max_rss_kb": None, "pages": 0}]}  # fmt: skip
    services.step_done(nodes=[node], msg=msg)
    shell = steps_of(job.id, users["alice"])["interactive"]
    assert shell["total_cpu_secs"] == 1.5 and shell["stats"]["in_max"]["cpu"] == [1500, node, 0]
