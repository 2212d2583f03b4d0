"""TRES strings and TRESBillingWeights (slurmwords.tres)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slurmwords.tres import (
    TresError,
    apply_tres_update,
    billing,
    format_tres,
    gres_tres,
    parse_billing_weights,
    parse_tres,
    parse_tres_limits,
)


def test_parse_and_print_as_sacctmgr():
    tres = parse_tres("cpu=1500,mem=200G,gres/gpu=50")
    assert tres == {"cpu": 1500, "mem": 200 * 1024, "gres/gpu": 50}
    assert format_tres(tres) == "cpu=1500,mem=200G,gres/gpu=50"


def test_print_order_is_slurms_tres_id_order():
    tres = {"gres/gpu": 2, "node": 4, "license/fluent": 1, "mem": 1000, "cpu": 8, "billing": 9}
    assert format_tres(tres) == "cpu=8,mem=1000M,node=4,billing=9,gres/gpu=2,license/fluent=1"


@pytest.mark.parametrize(
    ("text", "mb"),
    [
        ("mem=200", 200),
        ("mem=2048K", 2),
        ("mem=1025K", 2),
        ("mem=3M", 3),
        ("mem=4G", 4096),
        ("mem=1T", 1024**2),
    ],
)
def test_memory_is_mb_with_binary_suffixes(text, mb):
    assert parse_tres(text) == {"mem": mb}


def test_minus_one_unsets():
    update = parse_tres("cpu=-1,mem=-1,gres/gpu=-1")
    assert update == {"cpu": None, "mem": None, "gres/gpu": None}
    assert apply_tres_update({"cpu": 4, "node": 2}, update) == {"node": 2}
    assert parse_tres_limits("cpu=-1,node=3") == {"node": 3}


def test_types_are_case_insensitive_names_kept():
    assert parse_tres("CPU=4,GRES/gpu:tesla=1,License/Fluent=2") == {
        "cpu": 4,
        "gres/gpu:tesla": 1,
        "license/Fluent": 2,
    }


def test_empty_string_is_empty_map():
    assert parse_tres("") == {}
    assert format_tres({}) == ""


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("cpus=4", "Unknown TRES 'cpus'"),
        ("gpu=2", "Unknown TRES 'gpu'"),
        ("fs/nfs=1", "Unknown TRES 'fs/nfs'"),
        ("cpu", "expected <type>[/<name>]=<count>"),
        ("cpu=", "expected <type>[/<name>]=<count>"),
        ("=4", "expected <type>[/<name>]=<count>"),
        ("cpu=4,,mem=1", "expected <type>[/<name>]=<count>"),
        ("cpu=abc", "expected a count"),
        ("cpu=1.5", "expected a count"),
        ("cpu=-2", "negative counts other than -1"),
        ("mem=-5G", "negative counts other than -1"),
        ("cpu=4G", "only memory takes a unit suffix"),
        ("cpu=1,cpu=2", "given twice"),
        ("gres/=1", "Invalid TRES name"),
        ("license/a:b=1", "Invalid TRES name"),
    ],
)
def test_bad_tres_strings_are_refused_clearly(text, message):
    with pytest.raises(TresError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_tres(text)


def test_unknown_to_accounting_storage_tres():
    known = ["gres/gpu", "license/fluent"]
    assert parse_tres("gres/gpu=2,license/fluent=1,cpu=1", known=known)["gres/gpu"] == 2
    with pytest.raises(TresError, match="not in AccountingStorageTRES"):
        parse_tres("gres/fpga=1", known=known)


def test_gres_request_counts_type_and_generic():
    assert gres_tres("gpu:tesla:2") == {"gres/gpu": 2, "gres/gpu:tesla": 2}
    assert gres_tres("gpu:2,nic") == {"gres/gpu": 2, "gres/nic": 1}
    assert gres_tres("gpu") == {"gres/gpu": 1}
    assert gres_tres("") == {}
    with pytest.raises(TresError):
        gres_tres("gpu:a:b:2")


def test_billing_weights_with_memory_units():
    w = parse_billing_weights("CPU=1.0,Mem=0.25G,GRES/gpu=2.0")
    assert w.weights["cpu"] == 1.0
    assert w.weights["mem"] == pytest.approx(0.25 / 1024)
    assert billing({"cpu": 4, "mem": 8 * 1024, "gres/gpu": 2}, w) == pytest.approx(4 + 2 + 4)


def test_billing_defaults_to_cpus():
    assert billing({"cpu": 6, "mem": 100}, None) == 6
    assert billing({"cpu": 6}, parse_billing_weights("")) == 6


def test_billing_max_tres():
    w = parse_billing_weights("CPU=1.0,Mem=0.5G,License/fluent=3", max_tres=True)
    # per node: cpu 8 vs mem 32G*0.5 = 16 -> 16 per node * 2 nodes, plus 3 for the license
    tres = {"cpu": 16, "mem": 64 * 1024, "license/fluent": 1}
    assert billing(tres, w, nodes=2) == pytest.approx(16 * 2 + 3)


@pytest.mark.parametrize("text", ["CPU", "CPU=x", "CPU=-1", "cpus=1", "CPU=1G", "CPU=1,cpu=2"])
def test_bad_billing_weights(text):
    with pytest.raises(TresError):
        parse_billing_weights(text)


_names = st.sampled_from(
    ["cpu", "mem", "node", "energy", "billing", "gres/gpu", "gres/gpu:a100", "license/x"]
)


@given(st.dictionaries(_names, st.integers(min_value=0, max_value=10**9), max_size=8))
def test_print_then_parse_round_trips(tres):
    assert parse_tres(format_tres(tres)) == tres
