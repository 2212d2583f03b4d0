"""Fifty real jobs through the CLI, in each mode: outputs, exit codes and states recorded."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e

SCRIPT = """#!/bin/bash
#SBATCH -J e2e-{i}
#SBATCH -o {out}/job-%j.out
echo "hello from job $SLURM_JOB_ID task {i} on $SLURMD_NODENAME"
echo "nodes=$SLURM_JOB_NODELIST partition=$SLURM_JOB_PARTITION"
exit {code}
"""


def test_fifty_jobs_complete_with_outputs_and_exit_codes(cluster, tmp_path):
    ids = {}
    for i in range(50):
        code = 7 if i % 10 == 9 else 0  # every tenth script fails with exit code 7
        script = tmp_path / f"job{i}.sh"
        script.write_text(SCRIPT.format(i=i, out=tmp_path, code=code))
        out = cluster.cli("sbatch", "-p", "batch" if i % 2 else "debug", str(script), cwd=tmp_path).stdout
        assert out.startswith("Submitted batch job ")
        ids[int(out.split()[-1])] = (i, code)

    def finished():
        jobs = cluster.jobs(*ids)
        return jobs if all(j["state"] in ("COMPLETED", "FAILED") for j in jobs.values()) else None

    jobs = cluster.wait_for("50 jobs to finish", finished, timeout=120)
    for job_id, (i, code) in ids.items():
        job = jobs[job_id]
        assert job["state"] == ("FAILED" if code else "COMPLETED"), job
        assert job["exit_code"] == f"{code}:0"
        text = (tmp_path / f"job-{job_id}.out").read_text()
        assert f"hello from job {job_id} task {i} on {job['batch_host']}\n" in text
        assert f"nodes={job['node_list']} partition={job['partition']}" in text


def test_wrap_array_and_default_output_names(cluster, tmp_path):
    out = cluster.cli(
        "sbatch", "-a", "1-3", "--wrap", "echo task $SLURM_ARRAY_TASK_ID of $SLURM_ARRAY_JOB_ID", cwd=tmp_path
    ).stdout
    array_id = int(out.split()[-1])
    cluster.wait_for(
        "array tasks to complete",
        lambda: (
            all(j["state"] == "COMPLETED" for j in cluster.jobs(array_id).values())
            and len(cluster.jobs(array_id)) == 3
        ),
    )
    for task in (1, 2, 3):
        assert (tmp_path / f"slurm-{array_id}_{task}.out").read_text() == f"task {task} of {array_id}\n"


def test_a_workflow_tool_s_submission_and_status_poll(cluster, tmp_path):
    """Two jobs with ``-e run-%J.err`` write two files (``%J`` was left literal, and both wrote
    ``run-%J.err``); the tool polls with a shortened long option, as Slurm's getopt allows."""
    ids = []
    for _ in range(2):
        out = cluster.cli(
            "sbatch",
            "--parsable",
            "-o",
            "run-%J.%s.out",
            "-e",
            "run-%J.err",
            "--wrap",
            "echo out; echo err >&2",
            cwd=tmp_path,
        ).stdout
        ids.append(int(out))

    def states():
        got = {}
        for job_id in ids:
            line = cluster.cli("squeue", "--noheader", "--format=%i %t", "--job", str(job_id)).stdout.split()
            got[int(line[0])] = line[1]
        return got if set(got.values()) <= {"CD"} else None

    assert cluster.wait_for("both jobs to complete", states) == dict.fromkeys(ids, "CD")
    for job_id in ids:
        assert (tmp_path / f"run-{job_id}.batch.out").read_text() == "out\n"
        assert (tmp_path / f"run-{job_id}.err").read_text() == "err\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-w", "node[01-"], "Invalid nodelist"),
        (["-p", "nosuch"], "Invalid partition name specified"),
        (["--mem=-1"], "mem"),
        (["-N", "0"], "Invalid node count specification"),
    ],
)
def test_bad_submissions_fail_cleanly(cluster, tmp_path, args, message):
    before = cluster.jobs()
    result = cluster.cli("sbatch", *args, "--wrap", "true", check=False, cwd=tmp_path)
    assert result.returncode != 0
    assert message in result.stderr
    assert result.stdout == ""
    assert cluster.jobs() == before


@pytest.mark.parametrize(
    ("args", "stderr"),
    [
        (["-N", "20"], "sbatch: error: Batch job submission failed: Node count specification invalid\n"),
        (
            ["--mem=3G"],
            "sbatch: error: Memory specification can not be satisfied\n"
            "sbatch: error: Batch job submission failed: Requested node configuration is not available\n",
        ),
    ],
)
def test_a_job_that_can_never_run_is_refused_as_slurm_refuses_it(cluster, tmp_path, args, stderr):
    # debug is node[01-08], 4 CPUs and 2000 MB each (#13 point 2).
    before = cluster.jobs()
    result = cluster.cli("sbatch", "-p", "debug", *args, "--wrap", "true", check=False, cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (1, "", stderr)
    assert cluster.jobs() == before


def test_time_limit_above_partition_max_pends_with_reason(cluster, tmp_path):
    job_id = int(
        cluster.cli("sbatch", "-p", "debug", "-t", "2:00:00", "--wrap", "true", cwd=tmp_path).stdout.split()[
            -1
        ]
    )
    job = cluster.wait_for(
        "PartitionTimeLimit",
        lambda: (j := cluster.jobs(job_id)[job_id])["reason"] == "PartitionTimeLimit" and j,
    )
    assert job["state"] == "PENDING"
    squeue = cluster.cli("squeue", "-j", str(job_id), "-h", "-o", "%i %t %r").stdout.split()
    assert squeue == [str(job_id), "PD", "PartitionTimeLimit"]
    cluster.cli("scancel", str(job_id))


def test_users_cannot_cancel_other_users_jobs(cluster, tmp_path):
    cluster.manage(
        "shell",
        "-c",
        "from django.contrib.auth.models import User; "
        "User.objects.filter(username='mallory').exists() or "
        "User.objects.create_user('mallory', password='m-pw')",
    )
    token = cluster.manage("fsched_token", "create", "mallory").strip()
    job_id = int(cluster.cli("sbatch", "--hold", "--wrap", "true", cwd=tmp_path).stdout.split()[-1])
    result = cluster.cli("scancel", str(job_id), check=False, env={"FSCHED_TOKEN": token})
    assert result.returncode != 0
    assert "Access/permission denied" in result.stderr
    assert cluster.jobs(job_id)[job_id]["state"] == "PENDING"
    cluster.cli("scancel", str(job_id))
    assert cluster.jobs(job_id)[job_id]["state"] == "CANCELLED"


def test_unauthenticated_cli_is_refused(cluster):
    result = cluster.cli(
        "squeue", check=False, env={"FSCHED_TOKEN": "wrong", "FSCHED_CLI_CONFIG": "/nonexistent"}
    )
    assert result.returncode != 0
    assert result.stderr
