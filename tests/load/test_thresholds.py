"""Per-partition load thresholds (load.core.thresholds): the keys, their checks, and
which partition's thresholds a node takes."""

from __future__ import annotations

import pytest

from load.core.thresholds import Thresholds, by_node, parse

EXAMPLE = {"LoadSchedMem": "1300", "LoadStopMem": "1200", "LoadSchedUt": "80", "LoadStopUt": "90"}


def test_the_spec_s_example() -> None:
    t = parse(EXAMPLE)
    assert (t.sched, t.stop) == ({"mem": 1300, "ut": 80}, {"mem": 1200, "ut": 90})
    assert t.keys() == [
        ("LoadSchedMem", 1300),
        ("LoadStopMem", 1200),
        ("LoadSchedUt", 80),
        ("LoadStopUt", 90),
    ]


def test_run_queue_thresholds_take_decimals() -> None:
    t = parse({"LoadSchedR15s": "2", "LoadStopR15s": "3.5", "LoadSchedR1m": ".5", "LoadSchedR15m": "1."})
    assert (t.sched, t.stop) == ({"r15s": 2, "r1m": 0.5, "r15m": 1}, {"r15s": 3.5})
    assert t.keys()[:2] == [("LoadSchedR15s", 2.0), ("LoadStopR15s", 3.5)]


def test_a_sched_threshold_alone_is_fine() -> None:
    assert parse({"LoadSchedUt": "70"}).stop == {}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"LoadSchedMem": "1300M"}, "LoadSchedMem=1300M: must be an integer (no unit may be written)"),
        ({"LoadSchedUt": "80%"}, "LoadSchedUt=80%: must be an integer (no unit may be written)"),
        ({"LoadSchedMem": "1.5"}, "LoadSchedMem=1.5: must be an integer"),
        ({"LoadSchedR1m": "two"}, "LoadSchedR1m=two: must be a number"),
        ({"LoadSchedR1m": "-1"}, "LoadSchedR1m=-1: must be a number"),
        ({"LoadStopUt": "90"}, "LoadStopUt=90: needs LoadSchedUt"),
        (
            {"LoadSchedMem": "1200", "LoadStopMem": "1300"},
            "LoadStopMem=1300: must be below LoadSchedMem=1200",
        ),
        (
            {"LoadSchedMem": "1200", "LoadStopMem": "1200"},
            "LoadStopMem=1200: must be below LoadSchedMem=1200",
        ),
        ({"LoadSchedUt": "90", "LoadStopUt": "80"}, "LoadStopUt=80: must be above LoadSchedUt=90"),
        ({"LoadSchedR15m": "2", "LoadStopR15m": "1.5"}, "LoadStopR15m=1.5: must be above LoadSchedR15m=2"),
    ],
)
def test_bad_thresholds_are_refused_with_the_reason(extra, message) -> None:
    with pytest.raises(ValueError) as raised:
        parse(extra)
    assert str(raised.value) == message


def test_every_problem_of_a_line_is_named() -> None:
    with pytest.raises(ValueError) as raised:
        parse({"LoadSchedMem": "1G", "LoadStopUt": "9"})
    assert str(raised.value) == (
        "LoadSchedMem=1G: must be an integer (no unit may be written); LoadStopUt=9: needs LoadSchedUt"
    )


def test_a_node_in_two_partitions_takes_the_last_one_s() -> None:
    first, last = parse({"LoadSchedMem": "1300"}), parse({"LoadSchedUt": "80"})
    none = Thresholds(sched={}, stop={})
    nodes = by_node([("a", ["n1", "n2"], first), ("b", ["n2", "n3"], last), ("c", ["n3"], none)])
    assert (nodes["n1"].sched, nodes["n1"].partition) == ({"mem": 1300}, "a")
    assert (nodes["n2"].sched, nodes["n2"].partition) == ({"ut": 80}, "b")
    assert not nodes["n3"]  # the last partition sets none: the node has none
