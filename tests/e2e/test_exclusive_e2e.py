"""``sbatch --exclusive`` through the CLI, the controller and real agents (#13 point 7):
a whole-node allocation, the other jobs elsewhere, and squeue / scontrol showing it."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e


def test_an_exclusive_job_holds_its_node_whole(cluster, tmp_path):
    def submit(*args: str) -> int:
        out = cluster.cli("sbatch", "-p", "debug", *args, "--wrap", "sleep 30", cwd=tmp_path).stdout
        return int(out.split()[-1])

    whole = submit("--exclusive", "-w", "node01")
    small = submit("-n", "1")
    jobs = cluster.wait_for(
        "both jobs to run",
        lambda: (j := cluster.jobs(whole, small)) and all(x["state"] == "RUNNING" for x in j.values()) and j,
    )
    assert jobs[whole]["node_list"] == "node01" and jobs[small]["node_list"] != "node01"
    line = cluster.cli("squeue", "-h", "-j", str(whole), "-o", "%h %C %N").stdout.strip()
    assert line == "NO 4 node01"
    shown = cluster.cli("scontrol", "show", "job", str(whole)).stdout
    assert "OverSubscribe=NO" in shown and "NumCPUs=4" in shown
    # A job asking for node01 now waits: the exclusive job holds all of it.
    blocked = submit("-w", "node01", "-n", "1")

    def reason() -> str | None:
        job = cluster.jobs(blocked)[blocked]
        return None if job["reason"] == "None" else f"{job['state']} {job['reason']}"

    assert cluster.wait_for("the blocked job's reason", reason) == "PENDING Resources"
    cluster.cli("scancel", str(whole), str(small), str(blocked))
