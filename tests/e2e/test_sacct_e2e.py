"""``fsched sacct`` against a real controller and agent (#16 point 7): a job that ran shows
its own line and its batch step's, as Slurm's sacct shows ``N`` and ``N.batch``."""

from __future__ import annotations

import os

import pytest

pytestmark = pytest.mark.e2e

FINAL = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT")


def submit(cluster, tmp_path, command: str) -> int:
    return int(cluster.cli("sbatch", "--parsable", "-o", "/dev/null", "--wrap", command, cwd=tmp_path).stdout)


def sacct(cluster, *args: str) -> list[str]:
    return cluster.cli("sacct", "-P", "-n", *args).stdout.splitlines()


def test_sacct_shows_the_job_and_its_batch_step_with_state_and_exit_code(cluster, tmp_path):
    ok = submit(cluster, tmp_path, "true")
    bad = submit(cluster, tmp_path, "exit 1")
    cluster.wait_for(
        "both jobs to end", lambda: all(j["state"] in FINAL for j in cluster.jobs(ok, bad).values())
    )
    assert sacct(cluster, "-j", str(ok), "-o", "jobid,state,exitcode") == [
        f"{ok}|COMPLETED|0:0",
        f"{ok}.batch|COMPLETED|0:0",
    ]
    # -j repeated and a comma list add up; -o and widths as sacct reads them.
    lines = sacct(cluster, "-j", str(bad), "-j", f"{ok},{bad}", "-o", "jobid,jobname,state,exitcode,nodelist")
    node = cluster.jobs(bad)[bad]["batch_host"]
    assert f"{bad}|wrap|FAILED|1:0|{node}" in lines
    assert f"{bad}.batch|batch|FAILED|1:0|{node}" in lines
    # -X alone: the caller's jobs of today, no steps, exit 0.
    mine = cluster.cli("sacct", "-X", "-n", "-P", "-o", "jobid").stdout.split()
    assert str(ok) in mine and str(bad) in mine and f"{ok}.batch" not in mine
    # The fixed columns: Slurm's default ones.
    header = cluster.cli("sacct", "-j", str(ok)).stdout.splitlines()[0].split()
    assert header == ["JobID", "JobName", "Partition", "Account", "AllocCPUS", "State", "ExitCode"]


def test_a_cancelled_running_job_says_who_cancelled_it(cluster, tmp_path):
    job = submit(cluster, tmp_path, "sleep 120")
    cluster.wait_for("the job to run", lambda: cluster.jobs(job)[job]["state"] == "RUNNING")
    cluster.cli("scancel", str(job))
    cluster.wait_for("the job to end", lambda: cluster.jobs(job)[job]["state"] == "CANCELLED")
    lines = sacct(cluster, "-j", str(job), "-o", "jobid,state,exitcode")
    assert lines[0] == f"{job}|CANCELLED by {os.getuid()}|0:0"
    assert lines[1].startswith(f"{job}.batch|CANCELLED|")
