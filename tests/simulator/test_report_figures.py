"""The report's figures from the hand-written log of tests/simulator/report_log.py, each
against the number worked out by hand (#18 point 3)."""

from __future__ import annotations

import json

import pytest

from simulator.report import ReportError, build_report, write_report
from tests.simulator.report_log import INVALID_ACCOUNT, LOG, XSS, write_log

approx = pytest.approx


@pytest.fixture(scope="module")
def report() -> dict:
    return build_report(iter(LOG))


def test_top_level_keys(report: dict) -> None:
    assert list(report) == [
        "meta", "summary", "partitions", "accounts", "users", "utilisation_series", "layers",
        "power_hours", "limits_hit", "reasons", "load_stopped", "rejected", "speed",
    ]  # fmt: skip


def test_summary_counts(report: dict) -> None:
    s = report["summary"]
    # Jobs 1, 2, 3, 4, 6 were submitted; 5 was refused and is only in "rejected".
    assert (s["jobs"], s["started"], s["completed"], s["timeout"], s["failed"]) == (5, 5, 2, 1, 1)
    assert s["end_states"] == {"COMPLETED": 2, "FAILED": 1, "TIMEOUT": 1}
    assert s["running_at_end"] == 1  # job 4
    assert s["pending_at_end"] == 0
    assert (s["nodes"], s["cpus"], s["simulated_seconds"], s["rejected"]) == (3, 10, 100, 1)


def test_utilisation_counts_all_nodes_and_powered_nodes_apart(report: dict) -> None:
    s = report["summary"]
    # 373 CPU-s allocated; 10 CPUs x 100 s in all; powered: n1 and n2 all along (800), n3
    # (2 CPUs) from t=30 only (powered down, then powering up before): 800 + 140 = 940.
    assert s["cpu_hours"] == approx(373 / 3600, abs=1e-6)
    assert s["utilisation_all"] == approx(0.373)
    assert s["utilisation_powered"] == approx(373 / 940, abs=1e-6)


def test_waits_slowdown_and_histogram(report: dict) -> None:
    s = report["summary"]
    # Waits 0, 2, 10, 20, 25: linear interpolation between ranks (h = 4p).
    assert s["wait"] == approx({"mean": 11.4, "median": 10, "p90": 23, "p99": 24.8, "max": 25})
    # Bounded slowdowns (wait+run)/max(run,10): job 1 40/40, job 2 60/50, job 3 75/50,
    # job 6 (2+3)/10; job 4 has not ended.
    assert s["slowdown"] == approx({"mean": 4.2 / 4, "median": 1.1, "p90": 1.2 + 0.7 * 0.3})
    assert s["wait_histogram"] == {
        "[0,1)": 1, "[1,10)": 1, "[10,100)": 3, "[100,1000)": 0, "[1000,10000)": 0,
        "[10000,100000)": 0, "[100000,1000000)": 0, "[1000000,inf)": 0,
    }  # fmt: skip


def test_partitions(report: dict) -> None:
    batch, debug = report["partitions"]["batch"], report["partitions"]["debug"]
    # batch = n1 + n2, 8 CPUs, all powered: jobs 1 (160 CPU-s) and 2 (100).
    assert (batch["jobs"], batch["completed"], batch["timeout"], batch["failed"]) == (2, 1, 1, 0)
    assert batch["utilisation_all"] == approx(260 / 800)
    assert batch["utilisation_powered"] == approx(260 / 800)
    assert batch["wait"] == approx({"mean": 5, "median": 5, "p90": 9, "p99": 9.9, "max": 10})
    assert batch["slowdown"] == approx({"mean": 1.1, "median": 1.1, "p90": 1.18})
    # debug = n2 + n3, 6 CPUs; powered 400 + 140: jobs 3 (100), 4 (10 to the end), 6 (3).
    assert (debug["jobs"], debug["completed"], debug["failed"], debug["running_at_end"]) == (3, 1, 1, 1)
    assert debug["utilisation_all"] == approx(113 / 600, abs=1e-6)
    assert debug["utilisation_powered"] == approx(113 / 540, abs=1e-6)
    assert debug["wait"] == approx(
        {"mean": 47 / 3, "median": 20, "p90": 24, "p99": 24.9, "max": 25}, abs=1e-6
    )
    assert debug["slowdown"] == approx({"mean": 1.0, "median": 1.0, "p90": 1.4})


def test_accounts_and_users(report: dict) -> None:
    physics, chem = report["accounts"]["physics"], report["accounts"]["chem"]
    # An account's utilisation is its share of the whole cluster's CPU-seconds.
    assert physics["utilisation_all"] == approx(0.26)
    assert physics["utilisation_powered"] == approx(260 / 940, abs=1e-6)
    assert physics["wait"] == approx({"mean": 12.5, "median": 12.5, "p90": 22.5, "p99": 24.75, "max": 25})
    assert chem["utilisation_all"] == approx(0.113)
    assert chem["wait"] == approx({"mean": 32 / 3, "median": 10, "p90": 18, "p99": 19.8, "max": 20}, abs=1e-6)
    assert chem["slowdown"] == approx({"mean": 0.85, "median": 0.85, "p90": 0.5 + 0.9 * 0.7})
    assert set(report["users"]) == {"alice", "bob", XSS}
    assert report["users"][XSS]["jobs"] == 1
    assert report["users"]["alice"]["cpu_hours"] == approx(170 / 3600, abs=1e-6)


def test_series_layers_and_power_hours(report: dict) -> None:
    series = report["utilisation_series"]
    assert series["total_cpus"] == 10
    assert series["allocated_cpus"] == [
        [0, 4], [2, 5], [5, 4], [10, 6], [30, 8], [40, 4], [60, 2], [80, 0], [90, 1],
    ]  # fmt: skip
    assert series["powered_cpus"] == [[0, 8], [30, 10]]
    fast, slow = report["layers"]["scratch"]["fast"], report["layers"]["scratch"]["slow"]
    assert fast == {"count": 4, "peak": 2, "mean": approx(0.6), "series": [[0, 0], [10, 2], [40, 0]]}
    assert slow == {"count": 10, "peak": 0, "mean": 0, "series": [[0, 0]]}
    # Node-seconds: n1 40 allocated + 60 idle; n2 37 idle + 63 mixed; n3 20 powered down,
    # 10 powering up, 50 allocated, 20 idle.
    assert report["power_hours"] == approx(
        {"ALLOCATED": 90 / 3600, "IDLE": 117 / 3600, "MIXED": 63 / 3600,
         "POWERED_DOWN": 20 / 3600, "POWERING_UP": 10 / 3600},
        abs=1e-6,
    )  # fmt: skip


def test_limits_load_rejections_and_speed(report: dict) -> None:
    # Jobs, not events: job 2 was held by AssocGrpCpuLimit twice. Resources is no limit.
    assert report["limits_hit"] == {"AssocGrpCpuLimit": 2, "QOSMaxJobsPerUserLimit": 1}
    assert report["reasons"] == {"AssocGrpCpuLimit": 2, "QOSMaxJobsPerUserLimit": 1, "Resources": 1}
    assert report["load_stopped"] == {
        "jobs": 2, "actions": {"stop": 2}, "reasons": {"LoadStopMem": 1, "LoadStopR1m": 1},
    }  # fmt: skip
    assert report["rejected"] == {INVALID_ACCOUNT: 1}
    # done: 6 workload jobs, 100 simulated s in 0.5 wall s.
    assert report["speed"] == {"simulated_seconds": 100, "wall_seconds": 0.5, "ratio": 200, "jobs_per_s": 12}


def test_write_report_reads_the_file_and_writes_both(tmp_path) -> None:
    log = write_log(tmp_path / "events.jsonl")
    json_path, html_path = write_report(log, tmp_path / "out")
    assert (json_path.name, html_path.name) == ("report.json", "report.html")
    assert json.loads(json_path.read_text()) == json.loads(json.dumps(build_report(LOG)))
    assert html_path.read_text().startswith("<!DOCTYPE html>")


def test_a_bad_line_is_named(tmp_path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_text(json.dumps(LOG[0]) + "\n{not json\n")
    with pytest.raises(ReportError, match=r"events\.jsonl:2: not a JSON line"):
        write_report(log, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_missing_key_is_named() -> None:
    with pytest.raises(ReportError, match=r"event 2: start event without 'cpus'"):
        build_report([LOG[0], {"t": 1, "event": "start", "job": 1, "wait": 0}])
    with pytest.raises(ReportError, match=r"event 1: node event: t='soon' is not a number"):
        build_report([{"t": "soon", "event": "node", "node": "n1", "state": "idle"}])


def test_a_job_still_running_counts_to_the_end_and_a_kind_unknown_is_skipped() -> None:
    report = build_report(
        [
            {"t": 0, "event": "meta", "nodes": [{"name": "a", "cpus": 2}], "partitions": {"p": ["a"]}},
            {"t": 0, "event": "submit", "job": 1, "user": "u", "account": "x", "partition": "p"},
            {"t": 10, "event": "start", "job": 1, "user": "u", "account": "x", "partition": "p",
             "cpus": 2, "wait": 10},
            {"t": 15, "event": "progress", "done": 0.5},
            {"t": 20, "event": "submit", "job": 2, "user": "u", "account": "x", "partition": "q"},
            {"t": 40, "event": "done", "jobs": 1, "simulated_seconds": 40, "wall_seconds": 0},
        ]
    )  # fmt: skip
    assert report["summary"]["utilisation_all"] == approx(60 / 80)
    assert report["summary"]["running_at_end"] == 1
    assert (report["summary"]["pending_at_end"], report["partitions"]["q"]["pending_at_end"]) == (1, 1)
    assert report["summary"]["slowdown"] == {"mean": None, "median": None, "p90": None}
    assert report["speed"]["ratio"] is None  # no wall time to divide by
    assert report["meta"]["ignored_events"] == 1
