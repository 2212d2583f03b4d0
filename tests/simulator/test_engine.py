"""The simulator's engine (#18 point 1): the live services on a virtual clock, replaying
a small workload on tests/simulator/conf. One run, read by every test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simulator.engine import Engine
from simulator.records import SimJob

CONF = Path(__file__).parent / "conf"

JOBS = [
    SimJob(job_id=1, submit=0, run_time=100, user="alice", ntasks=4, time_limit=10),
    SimJob(job_id=2, submit=0, run_time=50, user="alice", qos="small", ntasks=4),
    SimJob(job_id=3, submit=1, run_time=40, user="bob", qos="small", ntasks=4),
    SimJob(job_id=4, submit=5, run_time=600, user="bob", ntasks=2, time_limit=2),
    SimJob(job_id=5, submit=200, run_time=30, user="alice", partition="big", ntasks=2),
    SimJob(job_id=6, submit=2, run_time=20, user="alice", ntasks=1, licenses="lic:2"),
    SimJob(job_id=7, submit=3, run_time=20, user="bob", ntasks=1, licenses="lic:1"),
    SimJob(job_id=8, submit=4, run_time=10, user="carol", ntasks=1),
    SimJob(job_id=9, submit=6, run_time=5, user="bob", ntasks=1, dependency="afterok:4"),
]


_RUN: dict[str, object] = {}


@pytest.fixture
def events(transactional_db, tmp_path_factory):
    """One simulation for the module (the store is emptied after each test; the log stays)."""
    if "lines" not in _RUN:
        out = tmp_path_factory.mktemp("sim")
        engine = Engine(
            conf_dir=CONF, jobs=JOBS, out_dir=out, workload_name="test", progress=out / "progress.json"
        )
        _RUN["summary"] = engine.run()
        _RUN["progress"] = json.loads((out / "progress.json").read_text())
        _RUN["lines"] = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    return _RUN["summary"], _RUN["lines"]


def of(lines, kind, **match):
    return [e for e in lines if e["event"] == kind and all(e.get(k) == v for k, v in match.items())]


def test_the_log_opens_with_meta_and_closes_with_done(events):
    summary, lines = events
    assert lines[0]["event"] == "meta" and lines[-1]["event"] == "done"
    meta = lines[0]
    assert meta["partitions"] == {"big": ["m1", "m2"], "fast": ["n1", "n2", "n3", "n4"]}
    assert meta["resources"] == {"lic": {"all": 2}}
    assert lines[-1]["jobs"] == len(JOBS) == summary.jobs
    # Virtual time, not wall time: the run ends at the last job's end plus the idle stop.
    assert lines[-1]["simulated_seconds"] == summary.simulated_seconds
    # The progress file the console reads: jobs ended or refused, of all; job 9's dependency
    # is never satisfied, so it never ends.
    progress = _RUN["progress"]
    assert (progress["done"], progress["total"]) == (len(JOBS) - 1, len(JOBS))
    assert progress["t"] == lines[-1]["simulated_seconds"]


def test_jobs_start_on_the_nodes_the_live_pass_gives(events):
    _, lines = events
    starts = {e["job"]: e for e in of(lines, "start")}
    assert starts[1]["t"] == 0 and starts[1]["nodes"] == ["n1"] and starts[1]["cpus"] == 4
    assert starts[2]["t"] == 0 and starts[2]["nodes"] == ["n2"]


def test_a_qos_limit_holds_a_job_with_its_reason(events):
    _, lines = events
    assert of(lines, "reason", job=3, reason="QOSGrpCpuLimit")
    start3 = of(lines, "start", job=3)[0]
    end2 = of(lines, "end", job=2)[0]
    # Job 3 starts once job 2 (the same QOS) has ended, at a virtual time, not a wall one.
    assert end2["t"] == 50 and end2["state"] == "COMPLETED" and start3["t"] >= 50


def test_a_job_past_its_limit_times_out(events):
    _, lines = events
    start = of(lines, "start", job=4)[0]
    end = of(lines, "end", job=4)[0]
    assert end["state"] == "TIMEOUT" and end["t"] == start["t"] + 120


def test_hres_layer_use_is_logged(events):
    _, lines = events
    uses = [(e["t"], e["used"]) for e in of(lines, "layers", resource="lic", layer="all")]
    assert (of(lines, "start", job=6)[0]["t"], 2) in uses
    assert uses[-1][1] == 0


def test_a_refused_submission_is_a_reject_with_sbatchs_words(events):
    _, lines = events
    (reject,) = of(lines, "reject", job=8)
    assert reject["error"].startswith("sbatch: error: Batch job submission failed: ")


def test_nodes_power_down_when_idle_and_up_for_a_job(events):
    _, lines = events
    m1 = [(e["t"], e["state"]) for e in of(lines, "node", node="m1")]
    states = [s for _, s in m1]
    assert "idle~" in states  # POWERED_DOWN, from the live power cycle
    down_at = next(t for t, s in m1 if s == "idle~")
    assert down_at < 200
    start5 = of(lines, "start", job=5)[0]
    # The job waited for the node's power up (a boot of half ResumeTimeout).
    assert start5["t"] > 200 and start5["nodes"][0] in {"m1", "m2"}
    assert any(s.endswith("#") for s in states) or of(lines, "node", node="m2")


def test_a_dependency_names_the_workload_job(events):
    _, lines = events
    end4 = of(lines, "end", job=4)[0]
    # afterok on a job that timed out: never satisfied.
    assert not of(lines, "start", job=9)
    assert of(lines, "reason", job=9)[0]["reason"] == "Dependency"
    assert end4["state"] == "TIMEOUT"


def test_until_stops_the_clock_there(transactional_db, tmp_path):
    Engine(conf_dir=CONF, jobs=JOBS, out_dir=tmp_path, until=60).run()
    lines = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert lines[-1]["event"] == "done" and lines[-1]["simulated_seconds"] == 60
    assert max(e["t"] for e in lines[:-1]) <= 60
    # Job 1 runs 100 s: it has started and not ended by then.
    assert of(lines, "start", job=1) and not of(lines, "end", job=1)
