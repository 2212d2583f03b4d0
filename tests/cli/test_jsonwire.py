"""cli.jsonwire: json.dumps's output and json.loads's results and errors, without importing json."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from cli.jsonwire import dumps, loads

VALUES = [
    {"name": "wrap", "argv": [], "nodes": "2-4", "hold": True, "requeue": False, "x": None},
    {"environment": {"PATH": "/bin", "LANG": "fr_FR.UTF-8", "Q": 'a "quoted"\\ \t\n value'}},
    {"unicode": "héllo ✓ 😀", "ctl": "\x00\x1f\x7f", "surrogate": "\udc80"},
    {"ints": [0, -1, 2**70], "floats": [0.1, 1e300, -2.5, float("inf"), float("-inf")]},
    {1: "int key", 2.5: "float key", False: "bool key", None: "none key"},
    [],
    {},
    "a string",
    3,
    None,
]


@pytest.mark.parametrize("value", VALUES)
def test_dumps_is_json_dumps(value):
    assert dumps(value) == json.dumps(value)


def test_dumps_refuses_what_json_refuses():
    with pytest.raises(TypeError, match="Object of type set is not JSON serializable"):
        dumps({"a": {1}})
    loop: list = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular reference detected"):
        dumps(loop)
    assert dumps([1]) == "[1]"  # a failed call leaves nothing behind


@pytest.mark.parametrize(
    "text",
    [
        *(json.dumps(v) for v in VALUES),
        ' \r\n\t{"a": [1, 2.5, "x", true, false, null]}  \n',
        '{"a": 1, "a": 2}',
        "NaN",
        "[-Infinity, Infinity]",
        '"\\ud83d\\ude00 \\u00e9"',
    ],
)
def test_loads_is_json_loads(text):
    for data in (text, text.encode()):
        got, expected = loads(data), json.loads(data)
        assert repr(got) == repr(expected)  # repr: nan != nan


def test_loads_decodes_what_only_json_s_encoding_detection_reads():
    assert loads(b'\xef\xbb\xbf{"a": 1}') == {"a": 1}  # UTF-8 BOM
    assert loads('{"a": "é"}'.encode("utf-16")) == {"a": "é"}
    assert math.isnan(loads(b"NaN"))


@pytest.mark.parametrize(
    "data", ["", "   ", "{", '{"a": 1} x', "[1,]", "\ufeff{}", b"\xff\xfe", b"{\x00}", '"\x01"', "nul"]
)
def test_loads_errors_are_json_s(data):
    with pytest.raises(ValueError) as expected:
        json.loads(data)
    with pytest.raises(ValueError) as got:
        loads(data)
    assert (type(got.value), str(got.value)) == (type(expected.value), str(expected.value))


def test_importing_it_does_not_import_json():
    code = "import sys, cli.jsonwire as w; w.loads(w.dumps({'a': [1]})); print('json' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
