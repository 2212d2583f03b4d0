"""Job dependencies with a real controller and agent (#16 point 1's acceptance): a pipeline
of three jobs with ``afterok`` runs in order; a job ``afternotok`` on a job that succeeded
stays pending with ``DependencyNeverSatisfied``, and is cancelled once
``DependencyParameters=kill_invalid_depend`` is configured."""

from __future__ import annotations

from datetime import datetime

import pytest

from tests.e2e.harness import make_cluster, started

pytestmark = pytest.mark.e2e

STEP = """#!/bin/bash
echo "step {n} job $SLURM_JOB_ID" >> {log}
sleep 1
"""


def submit(cluster, tmp_path, *args: str) -> int:
    out = cluster.cli("sbatch", "--parsable", *args, cwd=tmp_path).stdout
    return int(out.strip())


def test_afterok_pipeline_afternotok_and_kill_invalid_depend(tmp_path_factory, conf_dir, tmp_path):
    with started(make_cluster(tmp_path_factory, "embedded", conf_dir=conf_dir)) as cluster:
        log = tmp_path / "pipeline.log"
        scripts = []
        for n in (1, 2, 3):
            script = tmp_path / f"step{n}.sh"
            script.write_text(STEP.format(n=n, log=log))
            scripts.append(str(script))
        first = submit(cluster, tmp_path, scripts[0])
        second = submit(cluster, tmp_path, "-d", f"afterok:{first}", scripts[1])
        third = submit(cluster, tmp_path, f"--dependency=afterok:{second}", scripts[2])
        shown = cluster.cli("squeue", "-h", "-j", str(third), "-o", "%E %r").stdout.strip()
        assert shown == f"afterok:{second}(unfulfilled) Dependency"

        def all_done():
            jobs = cluster.jobs(first, second, third)
            return jobs if all(j["state"] == "COMPLETED" for j in jobs.values()) else None

        jobs = cluster.wait_for("the pipeline to complete", all_done, timeout=90)
        assert log.read_text().splitlines() == [
            f"step 1 job {first}",
            f"step 2 job {second}",
            f"step 3 job {third}",
        ]
        for before, after in ((first, second), (second, third)):
            ended = datetime.fromisoformat(jobs[before]["end_time"])
            assert datetime.fromisoformat(jobs[after]["start_time"]) >= ended
            assert jobs[after]["dependency"] == ""

        never = submit(cluster, tmp_path, "-d", f"afternotok:{first}", "--wrap", "true")
        cluster.wait_for(
            "afternotok on a job that succeeded to be never satisfied",
            lambda: cluster.jobs(never)[never]["reason"] == "DependencyNeverSatisfied",
            timeout=30,
        )
        job = cluster.jobs(never)[never]
        assert (job["state"], job["dependency"]) == ("PENDING", f"afternotok:{first}(failed)")
        show = cluster.cli("scontrol", "show", "job", str(never)).stdout
        assert (
            f"JobState=PENDING Reason=DependencyNeverSatisfied Dependency=afternotok:{first}(failed)" in show
        )

        with open(conf_dir / "slurm.conf", "a") as f:
            f.write("DependencyParameters=kill_invalid_depend\n")
        cluster.cli("scontrol", "reconfigure")
        cluster.wait_for(
            "kill_invalid_depend to cancel it",
            lambda: cluster.jobs(never)[never]["state"] == "CANCELLED",
            timeout=30,
        )
        assert cluster.jobs(never)[never]["reason"] == "DependencyNeverSatisfied"
