"""GPUs end to end on the demo cluster: node05 has four fake GPUs (examples/demo/gres.conf)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e

SCRIPT = """#!/bin/bash
echo "$CUDA_VISIBLE_DEVICES $GPU_DEVICE_ORDINAL $SLURM_JOB_GPUS" > {out}/gpus-$SLURM_JOB_ID
while [ ! -e {out}/release-$SLURM_JOB_ID ]; do sleep 0.2; done
"""


def test_two_jobs_share_a_node_s_gpus_and_a_third_waits_for_one(cluster, tmp_path):
    script = tmp_path / "gpu.sh"
    script.write_text(SCRIPT.format(out=tmp_path))

    def submit() -> int:
        out = cluster.cli(
            "sbatch", "--parsable", "--gpus=2", "-w", "node05", str(script), cwd=tmp_path
        ).stdout
        return int(out)

    def devices(job_id: int) -> list[str] | None:
        path = tmp_path / f"gpus-{job_id}"
        text = path.read_text() if path.exists() else ""
        return text.split() if text.endswith("\n") else None

    first, second = submit(), submit()
    got = {j: cluster.wait_for(f"job {j}'s GPUs", lambda j=j: devices(j)) for j in (first, second)}
    for cuda, ordinal, job_gpus in got.values():
        assert cuda == ordinal == job_gpus  # one node, ConstrainDevices off: the node's indices
        assert len(set(cuda.split(","))) == 2
    assert sorted(got[first][0].split(",") + got[second][0].split(",")) == ["0", "1", "2", "3"]

    third = submit()
    cluster.wait_for("the third job to wait", lambda: cluster.jobs(third)[third]["reason"] == "Resources")
    assert cluster.jobs(third)[third]["state"] == "PENDING"
    node = cluster.cli("scontrol", "show", "node", "node05").stdout
    assert "Gres=gpu:tesla:4\n" in node and "GresUsed=gpu:tesla:4(IDX:0-3)\n" in node
    assert cluster.cli("sinfo", "-h", "-n", "node05", "-o", "%G").stdout.strip() == "gpu:tesla:4"

    (tmp_path / f"release-{first}").touch()
    cuda = cluster.wait_for("the third job's GPUs", lambda: devices(third), timeout=60)[0]
    assert cuda == got[first][0]  # exactly the devices the first job gave back
    for job_id in (second, third):
        (tmp_path / f"release-{job_id}").touch()
    cluster.wait_for(
        "the jobs to end",
        lambda: all(j["state"] == "COMPLETED" for j in cluster.jobs(first, second, third).values()),
    )
    assert "GresUsed=gpu:tesla:0(IDX:N/A)\n" in cluster.cli("scontrol", "show", "node", "node05").stdout
