"""Two reports side by side for the what-if page (simulator/report_compare.py)."""

from __future__ import annotations

import copy

import pytest

from simulator.report import build_report
from simulator.report_compare import better, compare, rows
from tests.simulator.report_log import LOG


def test_every_numeric_leaf_with_its_difference_and_direction() -> None:
    a = build_report(LOG)
    b = copy.deepcopy(a)
    b["summary"]["wait"]["mean"] = 5.7  # half of 11.4
    b["summary"]["utilisation_all"] = 0.5
    b["partitions"]["batch"]["failed"] = 2
    b["power_hours"]["POWERED_DOWN"] = 0.5
    c = compare(a, b)
    assert c["summary"]["wait"]["mean"] == {
        "a": 11.4, "b": 5.7, "diff": pytest.approx(-5.7), "rel": pytest.approx(-0.5),
        "better": "lower", "winner": "b",
    }  # fmt: skip
    assert c["summary"]["utilisation_all"]["better"] == "higher"
    assert c["summary"]["utilisation_all"]["winner"] == "b"
    assert c["summary"]["utilisation_all"]["diff"] == pytest.approx(0.127)
    assert c["partitions"]["batch"]["failed"] == {
        "a": 0, "b": 2, "diff": 2.0, "rel": None, "better": "lower", "winner": "a",
    }  # fmt: skip
    assert c["power_hours"]["POWERED_DOWN"]["winner"] == "b"
    assert c["summary"]["jobs"] == {"a": 5, "b": 5, "diff": 0.0, "rel": 0.0, "better": None, "winner": None}
    assert c["speed"]["ratio"]["better"] == "higher"
    assert c["layers"]["scratch"]["fast"]["mean"]["better"] == "higher"
    assert "series" not in c["layers"]["scratch"]["fast"]  # lists are not compared
    assert "meta" not in c
    assert c["limits_hit"]["AssocGrpCpuLimit"]["better"] is None


def test_a_key_in_one_report_only() -> None:
    c = compare({"accounts": {"x": {"jobs": 3}}}, {"accounts": {"y": {"jobs": 1}}})
    assert c["accounts"]["x"]["jobs"] == {
        "a": 3, "b": None, "diff": None, "rel": None, "better": None, "winner": None,
    }  # fmt: skip
    assert c["accounts"]["y"]["jobs"]["b"] == 1


def test_a_name_never_decides_the_direction() -> None:
    # A partition named "wait": its job count is a size, its timeouts are worse when more.
    assert better(("partitions", "wait", "jobs")) is None
    assert better(("partitions", "wait", "timeout")) == "lower"
    assert better(("accounts", "utilisation_all", "wait", "p99")) == "lower"
    assert better(("summary", "wait_histogram", "[0,1)")) is None
    assert better(("rejected", "Invalid account")) == "lower"


def test_rows_list_the_leaves_with_their_paths() -> None:
    # Names spelled like a leaf's keys are still groups.
    names = ("a", "b", "diff", "rel", "better", "winner")
    c = compare(
        {"summary": {"jobs": 2}, "accounts": {n: {"jobs": 1} for n in names}, "rejected": {}},
        {"summary": {"jobs": 2}, "accounts": {"a": {"jobs": 2}}},
    )
    listed = [(r["path"], r["a"], r["b"], r["winner"]) for r in rows(c)]
    assert listed == [
        (("summary", "jobs"), 2, 2, None),
        (("accounts", "a", "jobs"), 1, 2, None),
        *((("accounts", n, "jobs"), 1, None, None) for n in names[1:]),
    ]
