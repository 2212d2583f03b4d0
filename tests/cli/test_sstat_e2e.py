"""sstat against a real controller and agent: a batch job whose srun step fills 64 MiB and
burns CPU shows them under ``N.0`` (``sstat -j N``), its batch step under ``-a``."""

from __future__ import annotations

import sys

import pytest

from tests.e2e.harness import cluster  # noqa: F401 - the fixture

pytestmark = pytest.mark.e2e

HOG = (
    "import time\n"
    "data = b'\\x01' * (64 << 20)\n"
    "t = time.process_time()\n"
    "while time.process_time() - t < 2: pass\n"
    "time.sleep(120)\n"
)


def size_mib(text: str) -> float:
    scale = {"K": 1 / 1024, "M": 1, "G": 1024}
    return float(text[:-1]) * scale[text[-1]] if text[-1] in scale else float(text) / 2**20


def test_sstat_shows_a_running_steps_memory_and_cpu(cluster, tmp_path):  # noqa: F811 - the fixture
    (tmp_path / "hog.py").write_text(HOG)
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/sh\nsrun {sys.executable} {tmp_path / 'hog.py'}\n")
    job = int(cluster.cli("sbatch", "--parsable", "-o", "/dev/null", str(script), cwd=tmp_path).stdout)
    try:
        cluster.wait_for("the job to run", lambda: cluster.jobs(job)[job]["state"] == "RUNNING")
        seen: dict[str, str] = {}

        def stat() -> bool:
            fields = "jobid,maxrss,avecpu,ntasks"
            run = cluster.cli("sstat", "-j", str(job), "-P", "-n", "-o", fields, check=False)
            line = run.stdout.strip()
            if not line:
                return False
            seen["line"] = line
            step, max_rss, ave_cpu, _ntasks = line.split("|")
            return step == f"{job}.0" and max_rss != "" and size_mib(max_rss) >= 64 and ave_cpu >= "00:00:02"

        cluster.wait_for("sstat to show the step's memory and CPU", stat, timeout=60)
        assert seen["line"].endswith("|1")
        steps = cluster.cli("sstat", "-a", "-j", str(job), "-P", "-n", "-o", "jobid").stdout.split()
        assert steps == [f"{job}.batch", f"{job}.0"]
    finally:
        cluster.cli("scancel", str(job), check=False)
