"""The job page's Efficiency and Usage panels (cluster/job_page_usage.py) as the server
renders them: a finished job's seff figures from what its agent recorded, a running job's
sstat figures from its agent's report, only for those sstat shows them to, and a job name
with HTML in it escaped."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cluster.models import Job
from cluster.services import agents
from cluster.services.scheduling import schedule_pass
from cluster.services.step_usage import usage_reported
from slurmwords import agent_messages as am
from tests.cluster.test_nice import register, submit

pytestmark = pytest.mark.django_db

START = datetime(2026, 3, 1, 10, 0, 0, tzinfo=UTC)
NAME = "<script>alert(1)</script>"


def _running(user, **spec) -> Job:
    register()
    job_id = submit(user, **spec)
    schedule_pass()
    Job.objects.filter(pk=job_id).update(start_time=START)
    job = Job.objects.get(pk=job_id)
    assert job.state == "RUNNING"
    return job


def _page(client, user, job_id: int, suffix: str = "") -> tuple[int, str]:
    client.force_login(user)
    answer = client.get(f"/jobs/{job_id}/{suffix}")
    return answer.status_code, answer.content.decode()


def test_a_finished_jobs_efficiency_panel(demo, users, client):
    job = _running(users["alice"], name=NAME, cpus_per_task=4, mem="1000")
    agents.job_completed(completion={
        "job_id": job.pk, "node": job.batch_host, "exit_code": 0, "signal": 0,
        "end_time": START.timestamp() + 3725, "run": job.restart_count,
        "max_rss_kb": 307200, "total_cpu_secs": 5400.6,
    })  # fmt: skip
    status, html = _page(client, users["alice"], job.pk)
    assert status == 200
    assert '<span id="eff-cpu">36.25% of 04:08:20 core-walltime</span>' in html
    assert 'id="eff-cpu-bar" min="0" max="100" low="50" high="100" optimum="100" value="36.25"' in html
    assert '<span id="eff-mem">30.00% of 1000.00 MB</span>' in html
    assert '<td id="eff-cpu-used">01:30:01</td>' in html
    assert '<td id="eff-wall">01:02:05</td>' in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and NAME not in html
    assert 'id="h-usage"' not in html  # nothing runs
    # Another user who may see the job sees its efficiency, as sacct and seff show it them.
    assert '<span id="eff-mem">30.00% of 1000.00 MB</span>' in _page(client, users["bob"], job.pk)[1]


def _report(job: Job) -> None:
    tasks = [
        am.TaskUsage(task=0, pids=[4242], rss_kb=2048, max_rss_kb=4096, vmem_kb=8192, max_vmem_kb=8192,
                     pages=0, max_pages=0, cpu_secs=65.4, read_bytes=None, max_read_bytes=None,
                     write_bytes=None, max_write_bytes=None),
    ]  # fmt: skip
    usage_reported(nodes=[job.batch_host], msg=am.StepUsage(time=0.0, nodes=[job.batch_host], steps=[
        am.StepUsageRecord(job_id=job.pk, step="batch", node=job.batch_host, tasks=tasks),
    ]))  # fmt: skip


def test_a_running_jobs_usage_panel_and_who_sees_it(demo, users, client):
    job = _running(users["alice"], name=NAME)
    status, html = _page(client, users["alice"], job.pk)
    assert f'<tr data-step="{job.pk}.batch">' in html  # the step, before any report
    assert 'id="job-efficiency"' not in html
    _report(job)
    status, html = _page(client, users["alice"], job.pk, "_usage")
    assert status == 200 and html.lstrip().startswith(f'<div id="job-usage" data-live-topic="usage-{job.pk}"')
    cells = [f'<td data-field="{f}">{v}</td>' for f, v in (
        ("JobID", f"{job.pk}.batch"), ("NTasks", "1"), ("MaxRSS", "4M"), ("MaxRSSNode", job.batch_host),
        ("AveRSS", "2M"), ("AveCPU", "00:01:05"),
    )]  # fmt: skip
    assert "".join(cells) in html
    # Another user sees that it runs, not its figures (sstat's Invalid user id).
    status, html = _page(client, users["bob"], job.pk)
    assert status == 200 and 'id="job-usage-refused"' in html and "(sstat: Invalid user id)" in html
    assert 'data-field="MaxRSS"' not in html
    assert 'data-field="MaxRSS">4M<' in _page(client, users["admin"], job.pk, "_usage")[1]
    # Once it has ended, the fragment is empty: the live refresh takes the panel away.
    agents.job_completed(completion={"job_id": job.pk, "node": job.batch_host, "exit_code": 0, "signal": 0})
    status, html = _page(client, users["alice"], job.pk, "_usage")
    assert (status, html.strip()) == (200, "")


def test_usage_fragment_of_a_hidden_or_missing_job_is_not_found(users, client, private_data):
    private_data("jobs")
    job = _running(users["alice"])
    assert _page(client, users["bob"], job.pk, "_usage")[0] == 404
    assert _page(client, users["bob"], 999999, "_usage")[0] == 404
    client.logout()
    assert client.get(f"/jobs/{job.pk}/_usage").status_code == 302  # to the login page
