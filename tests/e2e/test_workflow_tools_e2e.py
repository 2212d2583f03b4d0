"""Tools that drive Slurm through its commands, unchanged, against a real cluster (#16
acceptance): submitit and parsl, installed from requirements-tools.lock into .venv-tools by
`make tools` (which `make test` runs), never into fsched's own venv.

Each runs as a user would run it, with Slurm's command names (.venv/slurm-bin) on PATH: it
writes its batch script (``srun`` inside), submits with ``sbatch``, polls with ``sacct``, and
reads its jobs' results and failures as it does on a Slurm cluster. What each tool uses of
Slurm is listed in its driver (tests/e2e/workflow_tools/).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
DRIVERS = Path(__file__).resolve().parent / "workflow_tools"
TOOLS_PYTHON = ROOT / ".venv-tools" / "bin" / "python"
SLURM_BIN = Path(sys.executable).parent.parent / "slurm-bin"

needs_tools = pytest.mark.skipif(
    not TOOLS_PYTHON.exists() or not SLURM_BIN.is_dir(),
    reason="needs .venv-tools (submitit, parsl) and .venv/slurm-bin: `make tools` and `make setup` "
    "install them from requirements-tools.lock (`make test` runs both)",
)


def without_slurm_commands(path: str) -> str:
    """PATH less the directories that hold Slurm's commands, as on a machine with no Slurm."""
    ours = {str(SLURM_BIN), str(Path(sys.executable).parent)}
    return os.pathsep.join(p for p in path.split(os.pathsep) if p and p not in ours)


def run_tool(cluster, driver: str, work: Path, timeout: float = 240) -> dict:
    """The driver's JSON report; the tool finds sbatch, sacct, ... on PATH as on a login node."""
    path = os.pathsep.join(
        [str(SLURM_BIN), str(TOOLS_PYTHON.parent), without_slurm_commands(os.environ["PATH"])]
    )
    result = subprocess.run(  # noqa: PLW1510 - the exit status is checked below
        [str(TOOLS_PYTHON), str(DRIVERS / driver), str(work)],
        env={**cluster.env, "PATH": path},
        cwd=work,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, f"{driver} failed ({result.returncode}):\n{result.stderr[-4000:]}"
    return json.loads(result.stdout.splitlines()[-1])


def sacct(cluster, job_id: str) -> list[str]:
    return cluster.cli("sacct", "-P", "-n", "-j", job_id, "-o", "jobid,state,exitcode").stdout.splitlines()


@pytest.mark.skipif(not SLURM_BIN.is_dir(), reason="`make setup` makes .venv/slurm-bin")
def test_a_job_finds_slurm_s_commands_on_its_path(cluster, tmp_path):
    """Submitted from a PATH without them, the job still runs ``srun``, ``squeue``, ... by name,
    found after the user's own entries, as on a Slurm node."""
    env = {"PATH": without_slurm_commands(os.environ["PATH"])}
    script = "command -v srun; command -v squeue; echo PATH=$PATH"
    out = cluster.cli("sbatch", "--parsable", "-o", "where.out", "--wrap", script, cwd=tmp_path, env=env)
    job = int(out.stdout)
    cluster.wait_for("the job to end", lambda: cluster.jobs(job)[job]["state"] in ("COMPLETED", "FAILED"))
    assert cluster.jobs(job)[job]["state"] == "COMPLETED"
    lines = (tmp_path / "where.out").read_text().splitlines()
    assert lines[:2] == [str(SLURM_BIN / "srun"), str(SLURM_BIN / "squeue")]
    assert lines[2].startswith(f"PATH={env['PATH']}{os.pathsep}")  # the user's entries first


@needs_tools
def test_submitit_jobs_return_their_values_and_report_the_failure(cluster, tmp_path):
    report = run_tool(cluster, "submitit_driver.py", tmp_path)
    assert report["ok"] == {"result": 5, "state": "COMPLETED"}
    bad = report["bad"]
    assert bad["error_type"] == "FailedJobError" and "ValueError: no such thing" in bad["error"]
    assert bad["state"] == "FAILED"
    assert report["squares"] == [{"result": 16, "state": "COMPLETED"}, {"result": 25, "state": "COMPLETED"}]
    ok_id, bad_id, first_square, _ = report["job_ids"]
    assert first_square.endswith("_0")  # an array job: --array=0-1%2
    # fsched's own accounting agrees, and shows the srun inside each batch script as step 0.
    assert sacct(cluster, ok_id)[:3] == [
        f"{ok_id}|COMPLETED|0:0",
        f"{ok_id}.batch|COMPLETED|0:0",
        f"{ok_id}.0|COMPLETED|0:0",
    ]
    assert sacct(cluster, bad_id)[0] == f"{bad_id}|FAILED|1:0"
    assert f"{bad_id}.0|FAILED|1:0" in sacct(cluster, bad_id)


@needs_tools
def test_parsl_runs_its_workers_with_srun_and_polls_with_sacct(cluster, tmp_path):
    report = run_tool(cluster, "parsl_driver.py", tmp_path)
    # `sacct -X` exited 0, so parsl polls with sacct rather than squeue.
    assert report["status_command"].startswith("sacct -X --noheader --format=jobid,state%20")
    assert report["sum"] == 5
    (block,) = report["block_ids"]
    assert report["slurm_job_id"] == block  # the task ran inside the block's allocation
    assert report["python_error"] == {"type": "ValueError", "message": "no such thing"}
    assert report["bash_error"] == {"type": "BashExitFailure", "exitcode": 3}
    assert report["running"] == ["RUNNING"]
    assert report["ended"] == ["CANCELLED"]  # parsl's scancel, read back from "CANCELLED by UID"
    lines = sacct(cluster, block)
    assert lines[0] == f"{block}|CANCELLED by {os.getuid()}|0:0"
    assert any(line.startswith(f"{block}.0|") for line in lines)  # the worker pool's srun step
