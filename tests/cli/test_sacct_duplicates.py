"""``sacct -D`` (--duplicates) against a live controller: a requeued job's earlier runs,
each its own record with its own steps, before the job's last run; without -D the last
run alone (src/sacct, slurmdbd's as_mysql_jobacct_process.c)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from cluster.models import Job
from cluster.services import agents
from cluster.services.scheduling import health_pass, schedule_pass
from tests.cluster import test_lifecycle as lifecycle

pytestmark = pytest.mark.django_db(transaction=True)

NODES = [f"node{i:02d}" for i in range(1, 5)]


def register(now=None):
    return lifecycle.register(now=now, nodes=NODES)


def ok(result: tuple[int, str, str]) -> str:
    status, out, err = result
    assert (status, err) == (0, ""), err
    return out


def run(job_id: int, now) -> Job:
    schedule_pass(now=now)
    job = Job.objects.get(pk=job_id)
    assert job.state == "RUNNING", job.reason
    agents.job_started(job_id=job_id, node=job.batch_host, run=job.restart_count)
    return Job.objects.get(pk=job_id)


def finish(job: Job, now, *, signal: int = 0) -> None:
    body = {"job_id": job.id, "node": job.batch_host, "exit_code": 0, "signal": signal,
            "run": job.restart_count, "end_time": now.timestamp()}  # fmt: skip
    assert agents.job_completed(completion=body, now=now)


def stamp(when) -> str:
    return timezone.localtime(when).strftime("%Y-%m-%dT%H:%M:%S")


def test_scontrol_requeue_then_a_second_run(users, demo, live_cli):
    t0 = (timezone.now() - timedelta(hours=1)).replace(microsecond=0)
    register(t0)
    out = ok(live_cli("alice", "sbatch", "--requeue", "-w", "node02", "-J", "twice", "--wrap", "true"))
    job_id = int(out.split()[-1])
    first = run(job_id, t0)
    ok(live_cli("alice", "scontrol", "requeue", str(job_id)))
    asked = Job.objects.get(pk=job_id).kill_requested
    finish(first, asked + timedelta(seconds=1), signal=15)
    again = Job.objects.get(pk=job_id).begin_time
    second = run(job_id, again)
    finish(second, again + timedelta(seconds=30))

    batch = f"{job_id}.batch"
    plain = ok(live_cli("alice", "sacct", "-j", str(job_id), "-n"))
    assert plain.splitlines() == [
        f"{job_id:<12}      twice      debug                     1  COMPLETED      0:0 ",
        f"{batch:<12}      batch                                1  COMPLETED      0:0 ",
    ]
    dup = ok(live_cli("alice", "sacct", "-D", "-j", str(job_id)))
    assert dup.splitlines() == [
        "JobID           JobName  Partition    Account  AllocCPUS      State ExitCode ",
        "------------ ---------- ---------- ---------- ---------- ---------- -------- ",
        f"{job_id:<12}      twice      debug                     1   REQUEUED      0:0 ",
        f"{batch:<12}      batch                                1  CANCELLED     0:15 ",
        f"{job_id:<12}      twice      debug                     1  COMPLETED      0:0 ",
        f"{batch:<12}      batch                                1  COMPLETED      0:0 ",
    ]
    fields = "JobID,State,ExitCode,Start,End,NodeList,Restarts"
    parsed = ok(live_cli("alice", "sacct", "--duplicates", "-j", str(job_id), "-nP", "-o", fields))
    assert parsed.splitlines() == [
        f"{job_id}|REQUEUED|0:0|{stamp(t0)}|{stamp(asked)}|node02|0",
        f"{job_id}.batch|CANCELLED|0:15|{stamp(t0)}|{stamp(asked + timedelta(seconds=1))}|node02|",
        f"{job_id}|COMPLETED|0:0|{stamp(again)}|{stamp(again + timedelta(seconds=30))}|node02|1",
        f"{job_id}.batch|COMPLETED|0:0|{stamp(again)}|{stamp(again + timedelta(seconds=30))}|node02|",
    ]
    # The earlier run is a record of its own: -X keeps it, without its step.
    alloc = ok(live_cli("alice", "sacct", "-DX", "-j", str(job_id), "-nP", "-o", "JobID,State"))
    assert alloc.splitlines() == [f"{job_id}|REQUEUED", f"{job_id}|COMPLETED"]


def test_a_node_failure_s_run_is_node_fail_and_matched_by_its_state(users, demo, live_cli):
    t0 = (timezone.now() - timedelta(hours=1)).replace(microsecond=0)
    register(t0)
    out = ok(live_cli("alice", "sbatch", "--requeue", "-w", "node01", "-J", "lost", "--wrap", "true"))
    job_id = int(out.split()[-1])
    run(job_id, t0)
    agents.agent_disconnected(nodes=NODES, now=t0)
    failed = t0 + timedelta(seconds=21)
    assert "node01" in health_pass(now=failed)
    fields = "JobID,JobName,State,ExitCode,Start,End,Elapsed,NodeList"
    parsed = ok(live_cli("alice", "sacct", "-D", "-j", str(job_id), "-nP", "-o", fields))
    assert parsed.splitlines() == [
        f"{job_id}|lost|NODE_FAIL|0:0|{stamp(t0)}|{stamp(failed)}|00:00:21|node01",
        f"{job_id}.batch|batch|NODE_FAIL|0:0|{stamp(t0)}|{stamp(failed)}|00:00:21|node01",
        f"{job_id}|lost|PENDING|0:0|Unknown|Unknown|00:00:00|None assigned",
    ]
    # -s matches each record by its own state: the failed run alone, and only with -D.
    by_state = ["-j", str(job_id), "-s", "NF", "-nP", "-o", "JobID,State"]
    assert ok(live_cli("alice", "sacct", "-D", *by_state)).splitlines() == [
        f"{job_id}|NODE_FAIL",
        f"{job_id}.batch|NODE_FAIL",
    ]
    assert ok(live_cli("alice", "sacct", *by_state)) == ""
