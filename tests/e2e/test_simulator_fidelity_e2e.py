"""The simulator's fidelity (#18 point 5): a live run of the demo cluster, with real
processes, replayed by the simulator from what the live run recorded (each job's request,
its submit time and its run time). The simulated start order and node choices are the
live ones.

Twelve whole-node jobs on the eight nodes of the debug partition: eight start at once, the
four others as nodes free, in the order the first eight's run times (one second apart) end
them. The four later jobs outlast every node's release, so no two nodes free within the
same second (a tie the records' one-second resolution could not order)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime

import pytest

from tests.e2e.harness import DEMO_CONF, ROOT, E2ECluster, make_cluster, started

pytestmark = pytest.mark.e2e

SLEEPS = [3, 4, 5, 6, 7, 8, 9, 10, 8, 8, 8, 8]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[E2ECluster]:
    with started(make_cluster(tmp_path_factory, "embedded"), "embedded") as c:
        yield c


def _t(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def test_the_simulated_start_order_and_nodes_are_the_live_ones(cluster, tmp_path):
    c = cluster
    ids = []
    for seconds in SLEEPS:
        out = c.cli("sbatch", "--parsable", "-p", "debug", "-N", "1", "-n", "4", "-o", "/dev/null",
                    "--wrap", f"sleep {seconds}", cwd=tmp_path).stdout  # fmt: skip
        ids.append(int(out.strip()))
    c.wait_for(
        "every job to complete",
        lambda: all(j["state"] == "COMPLETED" for j in c.jobs(*ids).values()),
        timeout=120,
    )
    live = c.jobs(*ids)
    first = min(_t(live[i]["submit_time"]) for i in ids)
    workload = {
        "jobs": [
            {
                "job_id": i,
                "submit": round(_t(live[i]["submit_time"]) - first, 3),
                "run_time": round(_t(live[i]["end_time"]) - _t(live[i]["start_time"]), 3),
                "user": live[i]["user"],
                "partition": "debug",
                "nodes": 1,
                "ntasks": 4,
            }
            for i in ids
        ]
    }
    (tmp_path / "live.json").write_text(json.dumps(workload))
    out = tmp_path / "sim"
    subprocess.run(
        [sys.executable, "-m", "simulator", "run", "--conf", str(DEMO_CONF), "--workload",
         str(tmp_path / "live.json"), "--out", str(out), "--no-report"],
        cwd=ROOT, check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    simulated = {e["job"]: e for e in events if e["event"] == "start"}
    assert sorted(simulated) == sorted(ids)
    live_nodes = {i: live[i]["node_list"] for i in ids}
    sim_nodes = {i: ",".join(simulated[i]["nodes"]) for i in ids}
    assert sim_nodes == live_nodes
    live_order = sorted(ids, key=lambda i: (_t(live[i]["start_time"]), i))
    sim_order = sorted(ids, key=lambda i: (simulated[i]["t"], i))
    # The first eight start together (the order among them is the submission's); the
    # later four in the order nodes freed.
    assert sim_order[8:] == live_order[8:]
    assert sorted(sim_order[:8]) == sorted(live_order[:8])
