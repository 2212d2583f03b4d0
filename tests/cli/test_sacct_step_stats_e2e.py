"""sacct's step statistics against a real controller and agent: a batch job's srun step
fills 64 MiB and burns 3 s of CPU, then a second step ends before the agent's first
sample; once the job has ended, sacct prints each step's figures (the first from its
agent's last report and its reaping, the second from its reaping alone), the job's own
line none, and seff counts the srun step's CPU and memory."""

from __future__ import annotations

import sys

import pytest

from tests.cli.test_sstat_e2e import size_mib
from tests.e2e.harness import cluster  # noqa: F401 - the fixture

pytestmark = pytest.mark.e2e

HOG = (
    "import time\n"
    "data = b'\\x01' * (64 << 20)\n"
    "t = time.process_time()\n"
    "while time.process_time() - t < 3: pass\n"
    "time.sleep(2)\n"  # a report or two with the step at its largest
)
FIELDS = "jobid,maxrss,maxrssnode,maxrsstask,averss,avecpu,mincpu,mincpunode,totalcpu,usercpu,ntasks"


def seconds(text: str) -> float:
    """``00:03.120``, ``00:00:03``, ``01:00:00``: seconds."""
    parts = text.split(":")
    return sum(float(p) * 60**i for i, p in enumerate(reversed(parts)))


def test_sacct_prints_ended_steps_statistics_and_seff_counts_them(cluster, tmp_path):  # noqa: F811
    (tmp_path / "hog.py").write_text(HOG)
    script = tmp_path / "job.sh"
    script.write_text(
        f"#!/bin/sh\nsrun {sys.executable} {tmp_path / 'hog.py'}\nsrun {sys.executable} -c pass\n"
    )
    job = int(cluster.cli("sbatch", "--parsable", "-o", "/dev/null", str(script), cwd=tmp_path).stdout)
    try:
        cluster.wait_for("the job to end", lambda: cluster.jobs(job)[job]["state"] == "COMPLETED", timeout=90)
        out = cluster.cli("sacct", "-j", str(job), "-P", "-n", "-o", FIELDS).stdout
        lines = {line.split("|")[0]: line.split("|") for line in out.splitlines()}
        assert lines[str(job)][1:8] == [""] * 7  # the job's own line: no statistics
        _, max_rss, node, task, ave_rss, ave_cpu, min_cpu, cpu_node, total, user, ntasks = lines[f"{job}.0"]
        assert size_mib(max_rss) >= 64 and size_mib(ave_rss) >= 64, lines[f"{job}.0"]
        assert node == cpu_node != "" and task == "0" and ntasks == "1"
        assert seconds(ave_cpu) >= 3 and ave_cpu == min_cpu
        assert seconds(total) >= 3 and 0 < seconds(user) <= seconds(total)
        # Shorter than a sample: its reaping's figures alone (its CPU time; its largest RSS
        # is under the agent's, which its fork inherited, so not told: 0).
        short = lines[f"{job}.1"]
        assert short[1:4] == ["0", node, "0"] and short[8] != "" and short[9] != "", short
        assert lines[f"{job}.batch"][2] == node
        report = cluster.cli("seff", str(job)).stdout
        used = next(line for line in report.splitlines() if line.startswith("CPU Utilized:"))
        assert seconds(used.split(": ")[1]) >= 3, report
        mem = next(line for line in report.splitlines() if line.startswith("Memory Utilized:"))
        assert "MB" in mem and float(mem.split()[2]) >= 64, report
    finally:
        cluster.cli("scancel", str(job), check=False)
