"""Job steps with real agents: srun inside a batch job, its output, exit codes and Ctrl-C."""

from __future__ import annotations

import signal
import subprocess
import time

import pytest

from tests.e2e.harness import FSCHED

pytestmark = pytest.mark.e2e

TWO_NODES = """#!/bin/bash
#SBATCH -N 2
#SBATCH -n 4
#SBATCH -o {out}/steps-%j.out
{fsched} srun -n 4 -l hostname
{fsched} srun -n 4 -l bash -c \
    'echo node=$SLURMD_NODENAME procid=$SLURM_PROCID step=$SLURM_STEP_ID ntasks=$SLURM_NTASKS'
{fsched} srun -n 2 bash -c 'exit $((SLURM_PROCID + 3))'
echo "srun exit=$?"
{fsched} srun -n 2 -o '{out}/task-%j.%s.%t.out' bash -c 'echo task $SLURM_PROCID of step $SLURM_STEP_ID'
{fsched} srun -n 2 -K bash -c 'if [ $SLURM_PROCID = 1 ]; then exit 2; fi; exec sleep 60'
echo "kill-on-bad-exit=$?"
printf 'line one\nline two\n' | {fsched} srun -n 2 -l cat
{fsched} srun -n 4 sleep 3 &
sleep 1
{fsched} srun -n 1 echo after the busy step
wait
"""


def _sacct_steps(cluster, job_id: int) -> dict[str, list[str]]:
    out = cluster.cli(
        "sacct", "-j", str(job_id), "-P", "-n", "-o", "JobID,JobName,State,ExitCode,NNodes"
    ).stdout
    rows = [line.split("|") for line in out.splitlines()]
    return {row[0]: row[1:] for row in rows if "." in row[0]}


def _finished(cluster, job_id: int) -> dict | None:
    job = cluster.jobs(job_id)[job_id]
    return job if job["state"] not in ("PENDING", "CONFIGURING", "RUNNING") else None


def test_two_node_batch_job_runs_labelled_steps_on_both_nodes(cluster, tmp_path):
    script = tmp_path / "steps.sh"
    script.write_text(TWO_NODES.format(out=tmp_path, fsched=FSCHED))
    job_id = int(cluster.cli("sbatch", "--parsable", str(script), cwd=tmp_path).stdout)
    job = cluster.wait_for("the job to end", lambda: _finished(cluster, job_id), timeout=90)
    text = (tmp_path / f"steps-{job_id}.out").read_text()
    assert job["state"] == "COMPLETED", (job, text)
    lines = text.splitlines()
    host = subprocess.run(["hostname"], capture_output=True, text=True, check=True).stdout.strip()
    assert sorted(line for line in lines if line.endswith(host)) == [f"{t}: {host}" for t in range(4)], text
    nodes = job["node_list"]
    env_lines = sorted(line for line in lines if "procid=" in line)
    assert len(env_lines) == 4, text
    seen_nodes = set()
    for task, line in enumerate(env_lines):
        label, _, rest = line.partition(": ")
        fields = dict(word.split("=", 1) for word in rest.split())
        assert label == str(task) and fields["procid"] == str(task), line
        assert fields["step"] == "1" and fields["ntasks"] == "4", line
        seen_nodes.add(fields["node"])
    assert len(seen_nodes) == 2, (seen_nodes, nodes)
    # Block distribution: tasks 0-1 on the first node, 2-3 on the second.
    first = {dict(w.split("=", 1) for w in line.split(": ", 1)[1].split())["node"] for line in env_lines[:2]}
    assert len(first) == 1, env_lines
    assert "srun exit=4" in lines, text
    assert "srun: error:" in text and "Exited with exit code 4" in text, text

    for task in (0, 1):
        assert (tmp_path / f"task-{job_id}.3.{task}.out").read_text() == f"task {task} of step 3\n"
    assert f"srun: Terminating StepId={job_id}.4" in text and "kill-on-bad-exit=0" not in text, text
    waited = f"srun: Job {job_id} step creation temporarily disabled, retrying (Requested nodes are busy)"
    assert waited in lines and f"srun: Step created for StepId={job_id}.7" in lines, text
    assert lines.index(f"srun: Step created for StepId={job_id}.7") < lines.index("after the busy step"), text
    # srun's own standard input reaches every task (srun's default --input=all).
    assert sorted(line for line in lines if "line " in line) == [
        "0: line one", "0: line two", "1: line one", "1: line two"
    ], text  # fmt: skip
    steps = _sacct_steps(cluster, job_id)
    assert [*steps] == [f"{job_id}.batch", *(f"{job_id}.{i}" for i in range(8))], steps
    assert steps[f"{job_id}.0"] == ["hostname", "COMPLETED", "0:0", "2"], steps
    assert steps[f"{job_id}.2"] == ["bash", "FAILED", "4:0", "2"], steps


def test_ctrl_c_twice_cancels_the_step_and_the_job_shows_it(cluster, tmp_path):
    job_id = int(
        cluster.cli(
            "sbatch", "--parsable", "-n", "2", "-o", "/dev/null", "--wrap", "sleep 300", cwd=tmp_path
        ).stdout
    )
    cluster.wait_for("the job to run", lambda: cluster.jobs(job_id)[job_id]["state"] == "RUNNING")
    srun = subprocess.Popen(
        [FSCHED, "srun", "--jobid", str(job_id), "-n", "2", "sleep", "300"],
        env=cluster.env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:

        def listed():
            assert srun.poll() is None, srun.communicate()
            out = cluster.cli("squeue", "-s", "-h", "-j", str(job_id)).stdout
            return out if f"{job_id}.0" in out else None

        out = cluster.wait_for("squeue -s to list the step", listed, timeout=30)
        assert "sleep" in out, out
        shown = cluster.cli("scontrol", "show", "step", f"{job_id}.0").stdout
        assert f"StepId={job_id}.0 " in shown and "State=RUNNING" in shown and "Tasks=2" in shown, shown
        time.sleep(0.5)  # the tasks have started (a Ctrl-C before would be kept for the step)
        srun.send_signal(signal.SIGINT)
        time.sleep(0.3)
        srun.send_signal(signal.SIGINT)
        _, err = srun.communicate(timeout=30)
    finally:
        if srun.poll() is None:
            srun.kill()
            srun.wait()
    assert "srun: interrupt (one more within 1 sec to abort)" in err, err
    assert f"srun: StepId={job_id}.0 tasks 0-1: running" in err, err
    assert srun.returncode != 0
    steps = _sacct_steps(cluster, job_id)
    assert steps[f"{job_id}.0"][1] == "CANCELLED", steps
    assert cluster.jobs(job_id)[job_id]["state"] == "RUNNING"  # the step alone
    cluster.cli("scancel", str(job_id))
