"""sstat against the real controller's API, fed by a real agent's report: a real job that
fills 64 MiB and burns CPU is stat'd with its MaxRSS and AveCPU; another user is refused
its figures with slurmd's words; jobs and steps not running get sstat's messages."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cluster.models import Job, StepUsage
from cluster.services.step_usage import usage_reported
from slurmwords import agent_messages as am
from tests.agent.test_step_usage import real_report

pytestmark = pytest.mark.django_db(transaction=True)

FIELDS = "JobID,AveCPU,MaxRSS,MaxRSSNode,MaxRSSTask,NTasks"


def running_job(job_id: int, user: str = "alice", state: str = "RUNNING") -> Job:
    now = datetime.now(tz=UTC)
    return Job.objects.create(
        id=job_id, user=user, partition="debug", state=state, submit_time=now, start_time=now,
        node_list="node01", batch_host="node01",
    )  # fmt: skip


def size_kib(text: str) -> float:
    units = {"": 1 / 1024, "K": 1, "M": 1024, "G": 1024**2}
    suffix = text[-1] if text[-1] in "KMG" else ""
    return float(text[: len(text) - len(suffix)]) * units[suffix]


def test_sstat_prints_a_real_jobs_memory_and_cpu(demo, live_cli, tmp_path) -> None:
    running_job(81)
    msg = real_report(tmp_path, 81)
    usage_reported(nodes=["node01", "node02"], msg=am.decode(msg, am.AGENT_MESSAGES))

    status, out, err = live_cli("alice", "sstat", "-j", "81.batch", "-P", "-o", FIELDS)
    assert (status, err) == (0, ""), err
    head, row = out.splitlines()
    assert head == "JobID|AveCPU|MaxRSS|MaxRSSNode|MaxRSSTask|NTasks"
    job_step, ave_cpu, max_rss, node, task, ntasks = row.split("|")
    assert (job_step, node, task, ntasks) == ("81.batch", "node01", "0", "1")
    assert ave_cpu.startswith("00:00:") and ave_cpu != "00:00:00"
    assert size_kib(max_rss) >= 64 * 1024

    # The fixed columns, sstat's defaults (JobID left, the rest right, a dash line).
    status, out, err = live_cli("alice", "sstat", "-j", "81.batch", "-o", "jobid,maxrss%12,ntasks")
    lines = out.splitlines()
    assert lines[0] == "JobID              MaxRSS   NTasks "
    assert lines[1] == "------------ ------------ -------- "
    assert lines[2].startswith("81.batch     ") and lines[2].endswith("        1 ")

    # The default fields: all of sstat's, TRES lists sorted by name.
    status, out, err = live_cli("alice", "sstat", "-a", "-j", "81", "-p", "-n")
    cells = out.rstrip("\n").split("|")
    assert status == 0 and len(cells) == 48 and cells[-1] == ""
    assert cells[0] == "81.batch"
    assert cells[31].startswith("cpu=00:00:0") and ",energy=0,fs/disk=" in cells[31]
    assert cells[34] == "cpu=00:00:00,fs/disk=0,mem=0,pages=0,vmem=0"  # TRESUsageInMaxTask, as Slurm's

    # Job 81 alone: its lowest srun step, and it has none (sstat prints no line for a batch step).
    assert live_cli("alice", "sstat", "-n", "-j", "81") == (0, "", "")


def test_another_users_job_is_refused_and_an_operator_sees_it(demo, live_cli) -> None:
    running_job(82)
    tasks = [
        am.TaskUsage(task=0, pids=[4242], rss_kb=2048, max_rss_kb=4096, vmem_kb=8192, max_vmem_kb=8192,
                     pages=0, max_pages=0, cpu_secs=65.4, read_bytes=None, max_read_bytes=None,
                     write_bytes=None, max_write_bytes=None),
    ]  # fmt: skip
    usage_reported(nodes=["node01"], msg=am.StepUsage(time=0.0, nodes=["node01"], steps=[
        am.StepUsageRecord(job_id=82, step="batch", node="node01", tasks=tasks),
    ]))  # fmt: skip

    status, out, err = live_cli("bob", "sstat", "-n", "-P", "-j", "82.batch", "-o", "jobid,maxrss")
    assert (status, out) == (0, "")
    assert err == (
        "sstat: error: slurm_job_step_stat: there was an error with the request to node01 "
        "rc = Invalid user id\n"
        "sstat: error: problem getting step_layout for StepId=82.batch: Invalid user id\n"
    )
    fields = "jobid,maxrss,avecpu,averss"
    status, out, err = live_cli("admin", "sstat", "-n", "-P", "-j", "82.batch", "-o", fields)
    assert (status, out, err) == (0, "82.batch|4M|00:01:05|2M\n", "")


def test_jobs_and_steps_not_running_get_sstats_messages(demo, live_cli) -> None:
    running_job(83, state="COMPLETED")
    running_job(84)
    status, out, err = live_cli("alice", "sstat", "-j", "83,84.7,99999,84.batch", "-n", "-P", "-o", "jobid")
    assert status == 0
    assert out == "84.batch\n"  # no report yet: the step's line, its figures empty
    assert err == (
        "sstat: error: No steps running for job 83\n"
        "sstat: error: StepId=84.7 not found running.\n"
        "sstat: error: couldn't get steps for job 99999\n"
    )
    assert live_cli("alice", "sstat", "-j", "83.batch", "-o", "jobid") == (
        0,
        "JobID        \n------------ \n",
        "sstat: error: StepId=83.batch not found running.\n",
    )


def test_a_report_replaces_its_nodes_rows_and_drops_ended_steps(demo) -> None:
    running_job(85)
    one = am.TaskUsage(task=0, pids=[1], rss_kb=1, max_rss_kb=1, vmem_kb=1, max_vmem_kb=1, pages=0,
                       max_pages=0, cpu_secs=0.0, read_bytes=0, max_read_bytes=0, write_bytes=0,
                       max_write_bytes=0)  # fmt: skip
    batch = am.StepUsageRecord(job_id=85, step="batch", node="node01", tasks=[one])
    stranger = am.StepUsageRecord(job_id=85, step="0", node="node09", tasks=[one])  # not its node
    unknown = am.StepUsageRecord(job_id=999, step="batch", node="node01", tasks=[one])
    report = am.StepUsage(time=0.0, nodes=["node01"], steps=[batch, stranger, unknown])
    usage_reported(nodes=["node01"], msg=report)
    assert list(StepUsage.objects.values_list("job_id", "step", "node")) == [(85, "batch", "node01")]
    usage_reported(nodes=["node01"], msg=am.StepUsage(time=1.0, nodes=["node01"], steps=[]))
    assert not StepUsage.objects.exists()


def test_the_usage_endpoint_refuses_bad_requests_with_4xx(demo, users) -> None:
    from rest_framework.test import APIClient

    from cluster.services.api_tokens import token_issue

    running_job(86)
    anonymous = APIClient()
    assert anonymous.get("/api/jobs/86/usage/").status_code == 401
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(users['alice'])[1]}")
    huge = client.get(f"/api/jobs/{2**70}/usage/")
    assert huge.status_code in (400, 404), huge.content
    missing = client.get("/api/jobs/999/usage/")
    assert missing.status_code == 404
    assert missing.json() == {"error": "Invalid job id specified", "field": "job_id"}
    ok = client.get("/api/jobs/86/usage/")
    batch = {"step": "batch", "node_list": "node01", "ntasks": 1, "nodes": []}
    assert ok.json() == {"job_id": 86, "state": "RUNNING", "steps": [batch]}
