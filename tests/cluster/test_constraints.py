"""--constraint's grammar (cluster/core/constraints.py) and its check at submission
(#16 point 6): & and |, parentheses, Slurm's refusal of features no node has, and the
forms fsched does not support refused by name."""

from __future__ import annotations

import pytest

from cluster.core import constraints
from cluster.core.constraints import ConstraintError, parse
from cluster.services.errors import ServiceError
from cluster.services.jobs import job_submit


def alts(*sets: str) -> tuple[frozenset[str], ...]:
    return tuple(frozenset(s.split()) for s in sets)


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("", ()),
        ("gpu", alts("gpu")),
        ("a&b", alts("a b")),
        ("a|b", alts("a", "b")),
        ("a&b|c", alts("a b", "c")),
        ("(a|b)&c", alts("a c", "b c")),
        ("(a|b)&(c|d)", alts("a c", "a d", "b c", "b d")),
        (" rack1 & fast ", alts("rack1 fast")),
        ("a|a", alts("a")),
    ],
)
def test_expressions(expr, expected):
    assert parse(expr) == expected


@pytest.mark.parametrize(
    ("expr", "words"),
    [
        ("[a|b]", "matching OR ([...]) is not supported by fsched"),
        ("gpu*2", "feature counts (*N) is not supported by fsched"),
        ("!a", "NOT (!) is not supported by fsched"),
        ("a&", "a feature name is missing at the end"),
        ("(a|b", "')' is missing"),
        ("a)", "unexpected ')'"),
        ("|a", "a feature name is missing before '|'"),
        ("a,b", "unexpected ','"),
    ],
)
def test_refusals_name_what_is_wrong(expr, words):
    with pytest.raises(ConstraintError) as raised:
        parse(expr)
    assert str(raised.value) == f"Invalid feature specification: {words}"


def test_a_product_too_large_is_refused():
    with pytest.raises(ConstraintError, match="more than 256 alternatives"):
        parse("&".join(["(a|b)"] * 9))


def test_unknown_features():
    assert constraints.unknown_features(alts("a b", "c"), {"a", "b"}) == ["c"]


@pytest.mark.django_db
def test_submission_refuses_what_no_node_has_and_what_fsched_cannot_read(demo, users):
    spec = {"wrap": "true", "work_dir": "/tmp", "partition": "batch", "hold": True}
    job_submit(user=users["alice"], spec={**spec, "constraint": "(rack2|rack4)&row1"})
    with pytest.raises(ServiceError, match=r"^Invalid feature specification$"):
        job_submit(user=users["alice"], spec={**spec, "constraint": "rack1&nosuch"})
    with pytest.raises(ServiceError, match=r"^Requested node configuration is not available$"):
        job_submit(user=users["alice"], spec={**spec, "constraint": "rack1"})  # none in batch
    with pytest.raises(ServiceError, match=r"matching OR \(\[\.\.\.\]\) is not supported by fsched"):
        job_submit(user=users["alice"], spec={**spec, "constraint": "[rack1|rack2]"})
