"""The node filter's pattern finds a node in folded NodeLists (#15 point 3)."""

from __future__ import annotations

import re

import pytest
from ClusterShell.NodeSet import NodeSet

from cluster.lists.node_match import nodelist_pattern


@pytest.mark.parametrize(
    ("name", "nodelist", "found"),
    [
        ("node02", "node02", True),
        ("node02", "node01,node02", True),
        ("node02", "node[01-03]", True),
        ("node02", "node[01,03]", False),
        ("node02", "node[03-09]", False),
        ("node07", "node[01-03,05-09,11]", True),
        ("node10", "node[01-09]", False),
        ("node10", "node[09-10],cloud01", True),
        ("node2", "node[1-10]", True),
        ("node10", "node[8-12]", True),
        ("node13", "node[8-12]", False),
        ("node100", "node[99-101]", True),
        ("node1", "node[10-19]", False),
        ("cloud01", "node[01-02],cloud[01-04]", True),
        ("node01", "node[01-02],cloud[01-04]", True),
        ("node01-ib", "node[01-02]-ib", True),
        ("node01", "node[01-02]-ib", False),
        ("gpu", "gpu,cpu", True),
        ("node020", "node[01-30]", False),
    ],
)
def test_a_node_is_found_in_a_folded_nodelist(name, nodelist, found):
    assert bool(re.search(nodelist_pattern(name), nodelist)) is found


def test_it_agrees_with_expanding_every_list():
    lists = ["n[001-120]", "n[005,010-015,099-101]", "n[1-9,11,40-99]", "n[100-200]", "m[1-5],n[7-8]"]
    for nodelist in lists:
        members = set(NodeSet(nodelist))
        for i in range(0, 210):
            for name in (f"n{i:03d}", f"n{i}"):
                assert bool(re.search(nodelist_pattern(name), nodelist)) is (name in members), (
                    name,
                    nodelist,
                )
