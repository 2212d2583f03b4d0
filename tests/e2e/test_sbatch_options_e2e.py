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
