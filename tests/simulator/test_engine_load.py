"""Load thresholds in a simulation (#18 point 1): a per-node load trace fed through the
live heartbeat service, the live load check stops and continues jobs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from simulator.engine import Engine
from simulator.records import SimJob

CONF = Path(__file__).parent / "conf"
NODES = ["n1", "n2", "n3", "n4"]


@pytest.fixture
def loaded_run(transactional_db, tmp_path):
    conf = tmp_path / "conf"
    shutil.copytree(CONF, conf)
    partitions = (
        (conf / "partitions.conf")
        .read_text()
        .replace(
            "PartitionName=fast Nodes=n[1-4]",
            "PartitionName=fast Nodes=n[1-4] LoadSchedUt=80 LoadStopUt=90",
        )
    )
    (conf / "partitions.conf").write_text(partitions)
    # Busy (ut=95) for two minutes, then quiet, on every node, a sample every 10 s.
    lines = ["t,node,mem,ut,r15s,r1m,r15m,run_queue"]
    for t in range(0, 400, 10):
        ut = 95 if t < 120 else 10
        lines += [f"{t},{node},1500,{ut},1,1,1,1" for node in NODES]
    trace = tmp_path / "load.csv"
    trace.write_text("\n".join(lines) + "\n")
    jobs = [SimJob(job_id=i, submit=0, run_time=200, user="alice", ntasks=2) for i in range(1, 9)]
    Engine(conf_dir=conf, jobs=jobs, out_dir=tmp_path / "out", load_trace=trace).run()
    return [json.loads(line) for line in (tmp_path / "out" / "events.jsonl").read_text().splitlines()]


def test_a_load_trace_stops_and_continues_jobs(loaded_run):
    actions = [e for e in loaded_run if e["event"] == "load"]
    stops = [e for e in actions if e["action"] == "stop"]
    assert stops and all("LoadStopUt=90" in e["reason"] for e in stops)
    assert {e["job"] for e in actions if e["action"] == "continue"} == {e["job"] for e in stops}
    first_stop = min(e["t"] for e in stops)
    assert first_stop < 120
    ends = {e["job"]: e for e in loaded_run if e["event"] == "end"}
    assert len(ends) == 8 and all(e["state"] == "COMPLETED" for e in ends.values())
    # A stopped job's run time stood still: it ends later than the 200 s it runs.
    assert all(ends[e["job"]]["t"] > 200 for e in stops)
