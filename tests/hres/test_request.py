"""-L/--license and reservation licenses= with hierarchical resources (Slurm's hres.html)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slurmwords.licenses import (
    LicenseItem,
    LicenseRequest,
    Mode,
    combine,
    parse_license_request,
    parse_reservation_licenses,
    parse_resources_request,
)

MODES = {
    "flat": Mode.MODE_2,
    "natural": Mode.MODE_1,
    "power": Mode.MODE_3,
    "heat": Mode.MODE_3,
    "qpu": Mode.MODE_1,
}


def test_spec_forms():
    req = parse_license_request("flat:2,natural:1", hres=MODES)
    assert req == LicenseRequest((LicenseItem("flat", 2), LicenseItem("natural", 1)))
    assert parse_license_request("power:1000", hres=MODES).items == (LicenseItem("power", 1000),)
    qpu = parse_license_request("qpu:1[mode=fast,shots=1000]", hres=MODES).items[0]
    assert qpu == LicenseItem("qpu", 1, (("mode", "fast"), ("shots", "1000")))
    assert str(qpu) == "qpu:1[mode=fast,shots=1000]"


def test_count_defaults_to_one_and_args_without_count():
    req = parse_license_request("natural,qpu[mode=slow],fluent", hres=MODES)
    assert req.items == (
        LicenseItem("natural"),
        LicenseItem("qpu", 1, (("mode", "slow"),)),
        LicenseItem("fluent"),
    )
    assert req.hres(MODES) == req.items[:2] and req.plain(MODES) == (LicenseItem("fluent"),)


def test_either_or_for_plain_licenses_only():
    req = parse_license_request("fluent:2|ansys:1", hres=MODES)
    assert req.either and str(req) == "fluent:2|ansys:1"
    with pytest.raises(
        ValueError, match=r"hierarchical resource natural cannot be requested with the \| form"
    ):
        parse_license_request("fluent|natural", hres=MODES)
    with pytest.raises(ValueError, match="not both"):
        parse_license_request("a,b|c", hres=MODES)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("qpu:1[mode=fast,mode=slow]", "plugin argument mode given twice"),
        ("qpu:1[mode= fast]", "may not contain whitespace"),
        ("qpu:1[mode]", "needs a name and a value"),
        ("qpu:1[=x]", "needs a name and a value"),
        ("qpu:1[mode=]", "needs a name and a value"),
        ("qpu:1[]", "empty plugin arguments"),
        ("qpu:1[a=b][c=d]", "expected name"),
        ("fluent:1[a=b]", "only allowed on a hierarchical resource"),
        ("fluent|ansys[a=b]", "only allowed on a hierarchical resource"),
        ("qpu:1[a=b],qpu:1[c=d]", "qpu requested twice"),
        ("power:10,heat:10", "only one Mode 3 resource, not power, heat"),
        ("natural:0", "at least 1"),
        ("natural:-1", "the count must be at least 1"),
        ("natural:x", "natural has no variable x (its variables: none)"),
        ("fluent:x", "the count must be a number"),
        ("natural,,flat", "empty license name"),
        ("a|", "empty license name"),
    ],
)
def test_bad_requests(text, message):
    with pytest.raises(ValueError, match=__import__("re").escape(message)):
        parse_license_request(text, hres=MODES)


def test_unknown_names_when_the_plain_licenses_are_known():
    parse_license_request("fluent,natural", hres=MODES, plain={"fluent"})
    with pytest.raises(ValueError, match="unknown license ansys"):
        parse_license_request("ansys", hres=MODES, plain={"fluent"})


def test_empty_request():
    assert parse_license_request("  ", hres=MODES) == LicenseRequest()


def test_reservation_licenses():
    items = parse_reservation_licenses("natural(low1):30,flat(low2):4,flat(low4):2,fluent:3", hres=MODES)
    assert items == (
        LicenseItem("natural", 30, (), "low1"),
        LicenseItem("flat", 4, (), "low2"),
        LicenseItem("flat", 2, (), "low4"),
        LicenseItem("fluent", 3),
    )
    assert str(items[0]) == "natural(low1):30"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("natural:30", "name the layer of hierarchical resource natural, as in natural(LAYER):30"),
        ("fluent(low1):3", "fluent is not a hierarchical resource"),
        ("qpu(q1):1[mode=fast]", "plugin arguments are not allowed in a reservation"),
        ("fluent|ansys", "'|' is not allowed in a reservation"),
        ("power(rack1):1,heat(h1):1", "only one Mode 3 resource"),
        ("flat(low2):4,flat(low2):1", "flat(low2) given twice"),
        ("natural(lo w):3", "bad layer name"),
        ("natural():3", "name the layer"),
    ],
)
def test_bad_reservation_licenses(text, message):
    with pytest.raises(ValueError, match=__import__("re").escape(message)):
        parse_reservation_licenses(text, hres=MODES)


_names = st.sampled_from(["flat", "natural", "power", "qpu", "fluent", "ansys"])
_arg = st.tuples(
    st.from_regex(r"[a-z][a-z0-9_]{0,5}", fullmatch=True),
    st.from_regex(r"[A-Za-z0-9.:/]{1,6}", fullmatch=True),
)


@given(
    st.lists(
        st.tuples(_names, st.integers(1, 10**6), st.lists(_arg, max_size=3, unique_by=lambda a: a[0])),
        min_size=1,
        max_size=5,
        unique_by=lambda t: t[0],
    )
)
def test_format_then_parse_round_trips(entries):
    items = []
    mode3 = False
    for name, count, args in entries:
        if MODES.get(name) == Mode.MODE_3:
            if mode3:
                continue
            mode3 = True
        items.append(LicenseItem(name, count, tuple(args) if name in MODES else ()))
    req = LicenseRequest(tuple(items))
    assert parse_license_request(str(req), hres=MODES) == req


# --------------------------------------------------------------------------- variables, --resources

VARIABLES = {"power": {"full_node": 1000, "full_gpu_node": 2000, "off": 0}, "natural": {"half": 50}}


def test_a_variable_names_the_amount_and_is_resolved_in_the_request():
    req = parse_license_request(
        "power:full_gpu_node,natural:half[a=b],fluent:2", hres=MODES, variables=VARIABLES
    )
    assert req.items == (
        LicenseItem("power", 2000),
        LicenseItem("natural", 50, (("a", "b"),)),
        LicenseItem("fluent", 2),
    )
    assert str(req) == "power:2000,natural:50[a=b],fluent:2"  # what Licenses= shows


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("power:full", "power has no variable full (its variables: full_node, full_gpu_node, off)"),
        ("flat:full_node", "flat has no variable full_node (its variables: none)"),
        ("fluent:full_node", "the count must be a number (fluent is not a hierarchical resource"),
        ("power:off", "power:off: the count must be at least 1"),
    ],
)
def test_an_unknown_or_unusable_variable_is_refused(text, message):
    with pytest.raises(ValueError, match=__import__("re").escape(message)):
        parse_license_request(text, hres=MODES, variables=VARIABLES)


def test_resources_takes_the_license_grammar_for_hierarchical_resources_only():
    req = parse_resources_request("power:full_node,qpu:1[mode=fast]", hres=MODES, variables=VARIABLES)
    assert str(req) == "power:1000,qpu:1[mode=fast]"
    with pytest.raises(ValueError, match=r"--resources specification fluent:2: fluent is not a hierarchical"):
        parse_resources_request("fluent:2", hres=MODES)
    plain = parse_license_request("fluent:2", hres=MODES)
    assert str(combine(plain, req, hres=MODES)) == "fluent:2,power:1000,qpu:1[mode=fast]"
    with pytest.raises(ValueError, match="power requested twice"):
        combine(parse_license_request("power:5", hres=MODES), req, hres=MODES)
    with pytest.raises(ValueError, match="only one Mode 3 resource, not power, heat"):
        combine(req, parse_resources_request("heat:1", hres=MODES), hres=MODES)
    with pytest.raises(ValueError, match=r"cannot be requested with the \| form"):
        combine(parse_license_request("fluent|ansys", hres=MODES), req, hres=MODES)
