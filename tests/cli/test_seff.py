"""seff against the real controller (cli.main against a live server): a job the agent
reported usage for (agents.job_completed with max_rss_kb and total_cpu_secs) prints seff's
lines with seff's figures; its options, errors and exit statuses are seff's."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cluster.models import Job
from cluster.services import agents
from cluster.services.scheduling import schedule_pass
from slurmwords import efficiency
from tests.cli.test_nice import submitted
from tests.cluster.test_nice import register

pytestmark = pytest.mark.django_db(transaction=True)

START = datetime(2026, 3, 1, 10, 0, 0, tzinfo=UTC)


def _finished(live_cli, *sbatch: str, rss_kb: int, cpu_secs: float, run_secs: int, exit_code: int = 0) -> int:
    job_id = submitted(live_cli("alice", "sbatch", *sbatch, "--wrap", "sleep 100"))
    schedule_pass()
    Job.objects.filter(pk=job_id).update(start_time=START)
    job = Job.objects.get(pk=job_id)
    assert job.state == "RUNNING"
    agents.job_completed(completion={
        "job_id": job_id, "node": job.batch_host, "exit_code": exit_code, "signal": 0,
        "end_time": START.timestamp() + run_secs, "run": job.restart_count,
        "max_rss_kb": rss_kb, "total_cpu_secs": cpu_secs,
    })  # fmt: skip
    return job_id


def test_a_finished_job_prints_seffs_lines(demo, users, live_cli):
    register()
    job_id = _finished(
        live_cli, "-c", "4", "--mem=1000", rss_kb=307200, cpu_secs=5400.6, run_secs=3725, exit_code=3
    )
    status, out, err = live_cli("alice", "seff", str(job_id))
    assert (status, err) == (0, "")
    assert out.splitlines() == [
        f"Job ID: {job_id}",
        "Cluster: demo",
        "User/Group: alice/",  # alice has no account on this host: seff's getgrgid finds no group
        "State: FAILED (exit code 3)",
        "Nodes: 1",
        "Cores per node: 4",
        "CPU Utilized: 01:30:01",
        "CPU Efficiency: 36.25% of 04:08:20 core-walltime",
        "Job Wall-clock time: 01:02:05",
        "Memory Utilized: 300.00 MB",
        "Memory Efficiency: 30.00% of 1000.00 MB",
    ]


def test_one_core_and_debug_figures(demo, users, live_cli):
    register()
    job_id = _finished(live_cli, "--mem=2000", rss_kb=2_097_152, cpu_secs=59.4, run_secs=90061)
    status, out, _ = live_cli("alice", "seff", "-d", str(job_id))
    assert status == 0
    assert out.splitlines() == [
        "Slurm data: JobID ArrayJobID User Group State Clustername Ncpus Nnodes Ntasks Reqmem PerNode "
        "Cput Walltime Mem ExitStatus",
        f"Slurm data: {job_id}  alice  COMPLETED demo 1 1 1 2048000 1 59 90061 2097152 0",
        "",
        f"Job ID: {job_id}",
        "Cluster: demo",
        "User/Group: alice/",
        "State: COMPLETED (exit code 0)",
        "Cores: 1",
        "CPU Utilized: 00:00:59",
        "CPU Efficiency: 0.07% of 1-01:01:01 core-walltime",
        "Job Wall-clock time: 1-01:01:01",
        "Memory Utilized: 2.00 GB",
        "Memory Efficiency: 102.40% of 1.95 GB",
    ]


def test_running_and_pending_jobs(demo, users, live_cli):
    register()
    running = submitted(live_cli("alice", "sbatch", "-c", "2", "--wrap", "sleep 100"))
    held = submitted(live_cli("alice", "sbatch", "--hold", "--wrap", "true"))
    schedule_pass()
    status, out, _ = live_cli("alice", "seff", str(running))
    lines = out.splitlines()
    assert status == 0
    assert lines[3] == "State: RUNNING"
    # No step has reported memory yet: seff's estimate of 0 tasks.
    assert "Memory Utilized: 0.00 MB (estimated maximum)" in lines
    assert lines[-1] == "WARNING: Efficiency statistics may be misleading for RUNNING jobs."
    status, out, _ = live_cli("alice", "seff", str(held))
    assert (status, out.splitlines()[3:]) == (
        0,
        ["State: PENDING", "Cores: 1", "Efficiency not available for jobs in the PENDING state."],
    )


def test_errors_and_options_as_seffs(demo, users, live_cli):
    assert live_cli("alice", "seff", "999999") == (2, "", "Job not found.\n")
    assert live_cli("alice", "seff", "99999999999999") == (2, "", "Job not found.\n")
    status, out, err = live_cli("alice", "seff")
    assert (status, out.splitlines()[0], err) == (1, "Usage: seff [Options] <Jobid>", "")
    assert live_cli("alice", "seff", "-h", "12")[0:2] == (1, live_cli("alice", "seff")[1])
    assert live_cli("alice", "seff", "-v") == (1, "seff Version 2.1\n", "")
    assert live_cli("alice", "seff", "abc") == (1, "", "fatal: Bad job/step specified: abc\n")
    # Getopt::Std's --help goes on to seff's own usage (its Perl text is left out).
    assert live_cli("alice", "seff", "--help")[0:2] == (1, live_cli("alice", "seff")[1])
    status, _, err = live_cli("alice", "seff", "-x", "999999")
    assert (status, err) == (2, "Unknown option: x\nJob not found.\n")


def test_another_users_private_job_is_not_found(users, live_cli, private_data):
    private_data("jobs")
    register()
    job_id = submitted(live_cli("alice", "sbatch", "--wrap", "true"))
    assert live_cli("bob", "seff", str(job_id)) == (2, "", "Job not found.\n")


@pytest.mark.parametrize(
    ("kb", "text"),
    [(0, "0.00 MB"), (0.5, "0.50 KB"), (1023, "1023.00 KB"), (1024, "1.00 MB"), (1536 * 1024**2, "1.50 TB")],
)
def test_kbytes_as_seff_words_them(kb, text):
    assert efficiency.kb_text(kb) == text


def test_time_as_seff_words_it():
    texts = [efficiency.time_text(s) for s in (0, 59, 3600 * 25 + 61)]
    assert texts == ["00:00:00", "00:00:59", "1-01:01:01"]


def test_memory_per_core_and_per_node():
    job = {
        "job_id": 5, "array_job_id": 4, "array_task_id": 1, "state": "COMPLETED", "alloc_cpus": 8,
        "nnodes": 2, "start_time": "x", "elapsed": 100, "alloc_tres": "cpu=8,mem=8G,node=2",
        "request": {"mem_per_cpu": 1024},
        "steps": [
            {"ntasks": 1, "max_rss_kb": 100, "total_cpu_secs": 0.4},
            {"ntasks": 8, "max_rss_kb": 1024, "total_cpu_secs": 0.4},
            {"ntasks": 2, "max_rss_kb": 1024, "total_cpu_secs": None},
        ],
    }  # fmt: skip
    lines = efficiency.report(efficiency.of_job(job, "staff"))
    assert lines[1] == "Array Job ID: 4_1"
    assert "CPU Utilized: 00:00:01" in lines  # the microseconds added, then rounded once
    assert lines[-2:] == [
        "Memory Utilized: 8.00 MB (estimated maximum)",
        "Memory Efficiency: 0.10% of 8.00 GB (1.00 GB/core)",
    ]
    per_node = efficiency.of_job({**job, "request": {}})
    assert efficiency.report(per_node)[-1] == "Memory Efficiency: 0.10% of 8.00 GB (4.00 GB/node)"


def test_primary_group_of_a_known_user():
    assert efficiency.primary_group("root") == "root"
    assert efficiency.primary_group("no-such-user-here") == ""
