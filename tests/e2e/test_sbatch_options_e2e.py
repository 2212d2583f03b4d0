"""sbatch's --open-mode, --signal and --comment with a real controller and agent (#16
point 6): two runs appending to one output file, a signal the script traps before its
time limit, and the comment as ``scontrol show job`` and ``squeue %k`` print it."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e

DONE = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT")


def _submit(cluster, tmp_path, *args: str) -> int:
    return int(cluster.cli("sbatch", "--parsable", *args, cwd=tmp_path).stdout.strip())


def _finished(cluster, job_id: int) -> dict:
    return cluster.wait_for(
        f"job {job_id} to end",
        lambda: (j := cluster.jobs(job_id).get(job_id)) and j["state"] in DONE and j,
        timeout=120,
    )


def test_open_mode_append_keeps_both_runs_in_one_file(cluster, tmp_path):
    out = tmp_path / "shared.out"
    for run in ("first", "second"):
        job_id = _submit(cluster, tmp_path, "-o", str(out), "--open-mode=append", "--wrap", f"echo {run}")
        assert _finished(cluster, job_id)["state"] == "COMPLETED"
    assert out.read_text() == "first\nsecond\n"
    # Without it the file is emptied first, as before.
    job_id = _submit(cluster, tmp_path, "-o", str(out), "--wrap", "echo third")
    assert _finished(cluster, job_id)["state"] == "COMPLETED"
    assert out.read_text() == "third\n"


TRAP = """#!/bin/bash
#SBATCH -t 1
#SBATCH --signal=B:USR1@57
trap 'echo "caught USR1 at $SECONDS"; exit 0' USR1
for i in $(seq 1 300); do sleep 0.1; done
echo "no signal"
exit 3
"""


def test_signal_is_trapped_before_the_time_limit(cluster, tmp_path):
    script = tmp_path / "trap.sh"
    script.write_text(TRAP)
    job_id = _submit(cluster, tmp_path, str(script))
    job = _finished(cluster, job_id)
    text = (tmp_path / f"slurm-{job_id}.out").read_text()
    assert text.startswith("caught USR1 at "), text
    assert job["state"] == "COMPLETED" and job["exit_code"] == "0:0"


def test_comment_is_shown_by_scontrol_and_squeue(cluster, tmp_path):
    job_id = _submit(cluster, tmp_path, "--hold", "--comment=sweep 3 of 10", "--wrap", "true")
    try:
        shown = cluster.cli("scontrol", "show", "job", str(job_id)).stdout
        assert "   Comment=sweep 3 of 10" in shown.splitlines()
        column = cluster.cli("squeue", "-h", "-j", str(job_id), "-o", "%k").stdout
        assert column == "sweep 3 of 10\n"
    finally:
        cluster.cli("scancel", str(job_id))


# -- #16 point 6: each option of the list, end to end -------------------------------------


def _run(cluster, tmp_path, *args: str, env: dict[str, str] | None = None) -> tuple[dict, str]:
    """Submit with its output in ``tmp_path``; the job once ended, and what it wrote."""
    out = tmp_path / f"out-{len(list(tmp_path.iterdir()))}.txt"
    job_id = int(cluster.cli("sbatch", "--parsable", "-o", str(out), *args, cwd=tmp_path, env=env).stdout)
    job = _finished(cluster, job_id)
    return job, out.read_text() if out.exists() else ""


def test_an_exclusive_job_sees_the_whole_node(cluster, tmp_path):
    job, text = _run(cluster, tmp_path, "--exclusive", "-n", "1", "--wrap", "echo $SLURM_CPUS_ON_NODE")
    assert (job["state"], text) == ("COMPLETED", "4\n")
    _, text = _run(cluster, tmp_path, "-n", "1", "--wrap", "echo $SLURM_CPUS_ON_NODE")
    assert text == "1\n"


def test_export_all_none_and_lists(cluster, tmp_path):
    env = {"FSCHED_E2E_VAR": "from-submitter"}
    show = 'echo "${FOO-unset} ${FSCHED_E2E_VAR-unset}"'
    assert _run(cluster, tmp_path, "--wrap", show, env=env)[1] == "unset from-submitter\n"
    assert _run(cluster, tmp_path, "--export=ALL", "--wrap", show, env=env)[1] == "unset from-submitter\n"
    assert _run(cluster, tmp_path, "--export=FOO=bar", "--wrap", show, env=env)[1] == "bar unset\n"
    assert (
        _run(cluster, tmp_path, "--export=ALL,FOO=bar", "--wrap", show, env=env)[1] == "bar from-submitter\n"
    )
    # NONE: nothing of the submitter's, the user's login environment instead (HOME, PATH).
    job, text = _run(cluster, tmp_path, "--export=NONE", "--wrap", show + '; echo "${HOME:+home}"', env=env)
    assert (job["state"], text) == ("COMPLETED", "unset unset\nhome\n")


def test_chdir_runs_the_job_there(cluster, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    job_id = int(cluster.cli("sbatch", "--parsable", "-D", "work", "--wrap", "pwd", cwd=tmp_path).stdout)
    assert _finished(cluster, job_id)["state"] == "COMPLETED"
    # The default output file is relative to the job's directory, as in Slurm.
    assert (work / f"slurm-{job_id}.out").read_text() == f"{work}\n"


def test_constraints_with_and_or_and_parentheses(cluster, tmp_path):
    def nodes_of(*args: str) -> str:
        job, _ = _run(cluster, tmp_path, *(args if len(args) > 1 else ("-C", *args)), "--wrap", "true")
        assert job["state"] == "COMPLETED", job
        return job["node_list"]

    assert int(nodes_of("rack1&fast")[4:]) <= 8  # node01-08 alone are rack1 and fast
    assert 9 <= int(nodes_of("-p", "batch", "-C", "rack2|rack3")[4:]) <= 24
    # rack2 is batch's rack in row1.
    assert 9 <= int(nodes_of("-p", "batch", "-C", "(rack3|rack2)&row1")[4:]) <= 16
    refused = cluster.cli("sbatch", "-C", "rack1&nosuchfeature", "--wrap", "true", check=False)
    assert refused.returncode == 1
    assert refused.stderr == "sbatch: error: Batch job submission failed: Invalid feature specification\n"
    # rack3 exists, but not in the default partition (debug, node01-08).
    refused = cluster.cli("sbatch", "-C", "rack3", "--wrap", "true", check=False)
    assert refused.stderr.endswith(
        "Batch job submission failed: Requested node configuration is not available\n"
    )
    refused = cluster.cli("sbatch", "-C", "[rack1|rack2]", "--wrap", "true", check=False)
    assert refused.returncode == 1 and "not supported by fsched" in refused.stderr, refused.stderr


def test_wait_exits_with_the_jobs_exit_code_and_parsable_prints_the_id(cluster, tmp_path):
    done = cluster.cli("sbatch", "--parsable", "--wait", "--wrap", "exit 3", cwd=tmp_path, check=False)
    assert done.returncode == 3
    assert done.stdout.strip().isdigit() and done.stdout.endswith("\n")
    done = cluster.cli("sbatch", "--wait", "--wrap", "true", cwd=tmp_path, check=False)
    assert done.returncode == 0 and done.stdout.startswith("Submitted batch job ")


def test_open_mode_append_is_kept_across_a_requeue(cluster, tmp_path):
    out = tmp_path / "requeued.out"
    script = 'echo "run $SLURM_RESTART_COUNT"; sleep 30'
    job_id = _submit(cluster, tmp_path, "-o", str(out), "--open-mode=append", "--wrap", script)
    cluster.wait_for("the first run's line", lambda: out.exists() and out.read_text() == "run 0\n")
    cluster.cli("scontrol", "requeue", str(job_id))
    cluster.wait_for("the second run's line", lambda: "run 1" in out.read_text(), timeout=90)
    cluster.cli("scancel", str(job_id))
    assert out.read_text() == "run 0\nrun 1\n"


def test_no_requeue_refuses_a_requeue(cluster, tmp_path):
    job_id = _submit(cluster, tmp_path, "--no-requeue", "--wrap", "sleep 30")
    try:
        cluster.wait_for("it runs", lambda: cluster.jobs(job_id)[job_id]["state"] == "RUNNING")
        refused = cluster.cli("scontrol", "requeue", str(job_id), check=False)
        assert refused.returncode == 1
        assert "Requested operation is presently disabled" in refused.stderr
        shown = cluster.cli("scontrol", "show", "job", str(job_id)).stdout
        assert "Requeue=0" in shown
    finally:
        cluster.cli("scancel", str(job_id))
