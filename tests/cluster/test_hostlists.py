"""cluster.core.hostlists: a hostlist is sized from its text and refused before it is expanded."""

from __future__ import annotations

import resource

import pytest

from cluster.core import hostlists


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("node[1-3],node5", ["node1", "node2", "node3", "node5"]),
        ("n[001-003]!n002", ["n001", "n003"]),
        ("n[1-3]&n[2-9]", ["n2", "n3"]),
        ("n[1-3]^n[2-4]", ["n1", "n4"]),
        ("n[1-3]0", ["n10", "n20", "n30"]),
        ("n[1-9/4]", ["n1", "n5", "n9"]),
        (" n1 , n2 ", ["n1", "n2"]),
        ("a[1-2]b[1-2]", ["a1b1", "a1b2", "a2b1", "a2b2"]),
        ("", []),
    ],
)
def test_expand_agrees_with_clustershell(text, names):
    assert hostlists.expand(text, limit=20) == names


@pytest.mark.parametrize(
    ("text", "bound"),
    [
        ("node[1-2000000]", 2_000_000),
        ("node[1-99999999]", 99_999_999),
        ("a[1-9999]b[1-9999]", 9999 * 9999),
        ("n[1-9]!n[1-8]", 17),  # the work ClusterShell would do, not the answer
        ("n[-8--4]", 5),
        ("n[0-10/5]", 3),
    ],
)
def test_count_is_an_upper_bound_from_the_text(text, bound):
    assert hostlists.count(text) == bound


def test_a_huge_hostlist_is_refused_without_being_built():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for text in ("node[1-99999999]", "a[1-9999]b[1-9999]", "x[1-999999999999999999]"):
        with pytest.raises(ValueError, match=r"^Invalid node name specified: nodelist .* more than 8$"):
            hostlists.parse(text, limit=8)
    # ru_maxrss is in KiB: a hundred million names would take gigabytes.
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50 * 1024


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("node[", "missing bracket"),
        ("node]", "illegal closing bracket"),
        ("n[1[2]]", "illegal reopening bracket"),
        ("a,,b", "empty node name"),
        ("a,", "empty node name"),
        ("n\x00x", "control character"),
        ("n\nx", "control character"),
        ("n[5-1]", "invalid values in range"),
        ("n[a-b]", "cannot convert"),
        ("n1234567890123456789", "more than 18 digits"),
        ("n" * (hostlists.MAX_TEXT + 1), "longer than"),
    ],
)
def test_invalid_hostlists_say_slurms_words(text, why):
    with pytest.raises(ValueError, match=r"^Invalid node name specified: ") as caught:
        hostlists.expand(text, limit=100)
    assert why in str(caught.value)
    assert len(str(caught.value)) < 200  # a huge input is not echoed back


def test_node_groups_are_not_resolved():
    # ClusterShell would run the host's groups.conf upcalls for "@all" or "n*".
    assert hostlists.expand("@all,n*", limit=10) == ["@all", "n*"]


def test_a_long_flat_list_is_parsed_in_linear_chunks():
    names = [f"node{i}" for i in range(3000)]
    assert hostlists.expand(",".join(names), limit=3000) == names
    assert hostlists.fold(names[:3]) == "node[0-2]"
