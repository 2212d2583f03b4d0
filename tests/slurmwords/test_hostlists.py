"""Hostlists folded and expanded without ClusterShell (slurmwords.hostlists)."""

from __future__ import annotations

import pytest
from ClusterShell.NodeSet import RESOLVER_NOGROUP, NodeSet
from hypothesis import given
from hypothesis import strategies as st

from slurmwords.hostlists import expand_hostlist, fold_hostlist, fold_ids, natural_key, split_top


@pytest.mark.parametrize(
    ("names", "folded"),
    [
        (["node01", "node02", "node03", "node05"], "node[01-03,05]"),
        (["node10", "node09", "node01"], "node[01,09-10]"),  # node10 has node09's width
        (["n1", "n2", "n10"], "n[1-2,10]"),
        (["node5", "node01", "node02"], "node5,node[01-02]"),  # node5 is not node05
        (["gpu1", "node01", "login"], "gpu1,login,node01"),
        (["node05"], "node05"),
        (["n2", "n1", "n2", ""], "n[1-2]"),  # sorted, deduplicated, blanks dropped
        (["r1n1", "r1n2"], "r1n[1-2]"),
        ([], ""),
    ],
)
def test_fold(names, folded):
    assert fold_hostlist(names) == folded


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        ("node[01-03,05],gpu1", ["node01", "node02", "node03", "node05", "gpu1"]),
        ("r[1-2]n[1-2]", ["r1n1", "r1n2", "r2n1", "r2n2"]),
        ("n[8-11]", ["n8", "n9", "n10", "n11"]),
        ("n[098-101]", ["n098", "n099", "n100", "n101"]),
        (" a , b ,, ", ["a", "b"]),
        ("n[3]", ["n3"]),
        ("", []),
    ],
)
def test_expand(expr, names):
    assert expand_hostlist(expr) == names


@pytest.mark.parametrize(
    "bad", ["node[01-", "node[a-b]", "node]", "a]b[1]", "n[1]]", "[1],[2", "a[1,2", "a[[1]]", "n[]"]
)
def test_expand_refuses_what_it_cannot_read(bad):
    with pytest.raises(ValueError, match="Invalid hostlist"):
        expand_hostlist(bad)


def test_split_top_keeps_brackets_whole():
    assert split_top("a[1,2],b") == ["a[1,2]", "b"]
    assert split_top("x[m=1,n=2]|y", "|") == ["x[m=1,n=2]", "y"]
    assert split_top("a,,b") == ["a", "", "b"]
    assert split_top("a],b") == ["a]", "b"]  # a stray "]" closes nothing
    assert split_top("") == [""]


def test_natural_order_and_array_ids():
    assert sorted(["n10", "n2", "login", "n1"], key=natural_key) == ["login", "n1", "n2", "n10"]
    assert fold_ids([3, 4, 5, 9, 1]) == "1,3-5,9"
    assert fold_ids([7, 7]) == "7"
    assert fold_ids([]) == ""


@given(st.sets(st.integers(min_value=0, max_value=300), min_size=1, max_size=40), st.sampled_from([0, 2, 3]))
def test_fold_then_expand_round_trips(numbers, width):
    names = [f"node{str(n).zfill(width)}" for n in numbers]
    assert sorted(expand_hostlist(fold_hostlist(names))) == sorted(set(names))


@given(st.sets(st.integers(min_value=0, max_value=500), min_size=1, max_size=40))
def test_the_controller_folds_the_same(numbers):
    """ClusterShell folds for the controller; what the CLI prints reads the same."""
    names = [f"n{n}" for n in numbers]
    assert fold_hostlist(names) == str(NodeSet.fromlist(names, resolver=RESOLVER_NOGROUP))


def test_fold_ordered_keeps_the_given_order():
    from slurmwords.hostlists import fold_ordered

    assert fold_ordered(["node05", "node01", "node02"]) == "node[05,01-02]"
    assert fold_ordered(["a1", "a2", "b", "a3"]) == "a[1-2],b,a3"
    assert fold_ordered(["n01", "n02", "n10", "n9"]) == "n[01-02,10],n9"
    assert fold_ordered([]) == ""
