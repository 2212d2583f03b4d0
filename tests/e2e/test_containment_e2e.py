"""Containment with a real controller and agent (#16 point 4): two jobs on one node read
disjoint ``Cpus_allowed_list`` from inside, a job over its ``--mem`` ends OUT_OF_MEMORY
(the RSS watcher without a usable cgroup v2, the kernel's OOM killer with one), and the
agent's samples of a job's memory and CPU time reach the API's job object."""

from __future__ import annotations

import os
import shlex
import sys
import uuid
from pathlib import Path

import pytest

from agent.cgroups import CgroupTree
from agent.cpusets import parse_cpu_list

pytestmark = pytest.mark.e2e

PY = shlex.quote(sys.executable)


def _submit(cluster, tmp_path: Path, out: str, wrap: str, *args: str) -> int:
    line = cluster.cli(
        "sbatch", "-p", "debug", "-o", str(tmp_path / out), *args, "--wrap", wrap, cwd=tmp_path
    )
    return int(line.stdout.split()[-1])


def _ended(cluster, job_id: int) -> dict:
    def end() -> dict | None:
        job = cluster.jobs(job_id)[job_id]
        return job if job["state"] not in {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING"} else None

    return cluster.wait_for(f"job {job_id} to end", end, timeout=90)  # type: ignore[return-value]


def test_two_jobs_on_one_node_get_disjoint_cpu_sets(cluster, tmp_path):
    wrap = "grep Cpus_allowed_list /proc/self/status; sleep 120"
    ids = [_submit(cluster, tmp_path, f"cpus{i}.out", wrap, "-w", "node02", "-n", "1") for i in (1, 2)]

    def both_running_and_read() -> dict[int, set[int]] | None:
        jobs = cluster.jobs(*ids)
        if not all(jobs[i]["state"] == "RUNNING" for i in ids):
            return None
        seen = {}
        for n, job_id in enumerate(ids, 1):
            text = (tmp_path / f"cpus{n}.out").read_text() if (tmp_path / f"cpus{n}.out").exists() else ""
            if "Cpus_allowed_list" not in text:
                return None
            seen[job_id] = parse_cpu_list(text.split(":", 1)[1])
        return seen

    try:
        seen = cluster.wait_for("both jobs running with their CPUs read", both_running_and_read)
    finally:
        cluster.cli("scancel", *map(str, ids))
    first, second = seen.values()  # type: ignore[union-attr]
    assert first and second and not first & second
    assert first | second <= os.sched_getaffinity(0)
    for job_id in ids:
        _ended(cluster, job_id)


def test_a_job_over_its_memory_ends_out_of_memory(cluster, tmp_path):
    # Touches 200 MB (a bytes object is written as it is made) with --mem=50M.
    hog = f"{PY} -c 'import time; x = b\"x\" * (200 << 20); time.sleep(60)'"
    job_id = _submit(cluster, tmp_path, "oom.out", hog, "--mem=50M")
    job = _ended(cluster, job_id)
    assert (job["state"], job["exit_code"], job["reason"]) == ("OUT_OF_MEMORY", "0:125", "OutOfMemory")
    out = (tmp_path / "oom.out").read_text()
    # slurmstepd's words: the RSS watcher's kill, or the kernel's OOM kills in the cgroup.
    assert f"slurmstepd: error: StepId={job_id}.batch exceeded memory limit (" in out or (
        "oom_kill event" in out and f"StepId={job_id}.batch" in out
    )
    assert job["max_rss_kb"] > 50 * 1024
    line = cluster.cli("squeue", "-h", "-t", "all", "-j", str(job_id), "-o", "%T").stdout.strip()
    assert line == "OUT_OF_MEMORY"


def test_a_jobs_memory_and_cpu_time_reach_the_api(cluster, tmp_path):
    work = (
        "import time\n"
        "x = b'x' * (40 << 20)\n"
        "t = time.process_time()\n"
        "while time.process_time() - t < 1: pass\n"
        "time.sleep(3)\n"
    )
    (tmp_path / "work.py").write_text(work)
    job_id = _submit(
        cluster, tmp_path, "work.out", f"{PY} {shlex.quote(str(tmp_path / 'work.py'))}", "--mem=500M"
    )
    job = _ended(cluster, job_id)
    assert (job["state"], job["exit_code"]) == ("COMPLETED", "0:0")
    assert job["max_rss_kb"] >= 40 * 1024
    assert job["total_cpu_secs"] >= 0.9


def test_a_job_runs_in_its_own_cgroup_where_cgroup_v2_is_writable(cluster, tmp_path):
    tree, why = CgroupTree.prepare(f"probe-{uuid.uuid4().hex[:8]}")
    if tree is None:
        pytest.skip(f"cgroup v2 cannot be used here: {why}")
    tree.base.rmdir()
    job_id = _submit(cluster, tmp_path, "cg.out", "cat /proc/self/cgroup", "--mem=100M")
    job = _ended(cluster, job_id)
    assert job["state"] == "COMPLETED"
    assert "/fsched/" in (tmp_path / "cg.out").read_text()
    assert f"/job_{job_id}\n" in (tmp_path / "cg.out").read_text()
