"""The value encoders of Slurm 23.11's --json output (data_parser v0.0.40's parsers.c),
shared by squeue, sinfo, scontrol and sacct."""

from __future__ import annotations

import pytest

from slurmwords import data_parser as dp

UNSET = {"set": False, "infinite": False, "number": 0}


def test_a_no_val_number_is_set_unset_or_infinite():
    assert dp.no_val(30) == {"set": True, "infinite": False, "number": 30}
    assert dp.no_val(0) == {"set": True, "infinite": False, "number": 0}  # 0 is a value
    assert dp.no_val(None) == UNSET  # NO_VAL
    assert dp.no_val(None, infinite=True) == {"set": False, "infinite": True, "number": 0}  # INFINITE
    assert dp.float_no_val(2) == {"set": True, "infinite": False, "number": 2.0}
    assert isinstance(dp.float_no_val(2)["number"], float)
    assert dp.float_no_val(None) == UNSET and isinstance(dp.float_no_val(None)["number"], float)


def test_a_timestamp_never_stamped_is_a_set_zero():
    assert dp.timestamp("2026-03-01T10:00:00+00:00") == {"set": True, "infinite": False, "number": 1772359200}
    assert dp.timestamp(None) == {"set": True, "infinite": False, "number": 0}
    assert dp.epoch("") == 0


@pytest.mark.parametrize(
    ("code", "sig", "status", "return_code", "signal"),
    [
        (0, 0, "SUCCESS", {"set": True, "infinite": False, "number": 0}, {"id": UNSET, "name": ""}),
        (3, 0, "ERROR", {"set": True, "infinite": False, "number": 3}, {"id": UNSET, "name": ""}),
        # A signal's end has no return code (WIFSIGNALED), and the signal has sig_num2name's name.
        (0, 9, "SIGNALED", UNSET, {"id": {"set": True, "infinite": False, "number": 9}, "name": "KILL"}),
        (None, 15, "SIGNALED", UNSET, {"id": {"set": True, "infinite": False, "number": 15}, "name": "TERM"}),
    ],
)
def test_an_exit_code_is_process_exit_code(code, sig, status, return_code, signal):
    assert dp.exit_code(code, sig) == {"status": [status], "return_code": return_code, "signal": signal}


def test_signal_names_and_numbers_without_a_name():
    assert dp.signal_name(2) == "INT"
    assert dp.signal_name(200) == "200"


def test_csv_and_strings():
    assert dp.csv("rack1,row1,fast") == ["rack1", "row1", "fast"]
    assert dp.csv("") == [] and dp.csv(None) == []
    assert dp.text(None) == "" and dp.text(5) == "5"


def test_meta_names_the_parser_the_release_and_argv_but_its_last_word():
    meta = dp.meta(
        ["squeue", "--json", "-u", "alice"], user="alice", group="users", cluster="demo", version="23.11.0"
    )
    assert meta == {
        "plugin": {"type": "", "name": "", "data_parser": "data_parser/v0.0.40", "accounting_storage": ""},
        "client": {"source": "", "user": "alice", "group": "users"},
        "command": ["squeue", "--json", "-u"],
        "slurm": {
            "version": {"major": "23", "micro": "0", "minor": "11"},
            "release": "23.11.0",
            "cluster": "demo",
        },
    }
    assert dp.meta(["squeue"], user="", group="", cluster="", version="23.11")["command"] == []
    assert dp.meta([], user="", group="", cluster="", version="23.11")["slurm"]["version"]["micro"] == ""


def test_an_answer_has_its_records_then_meta_errors_warnings():
    assert list(dp.answer({"jobs": [], "last_backfill": 1, "last_update": 2}, {})) == [
        "jobs",
        "last_backfill",
        "last_update",
        "meta",
        "errors",
        "warnings",
    ]


@pytest.mark.parametrize(
    "doc",
    [
        {},
        [],
        {"jobs": [], "meta": {"command": ["squeue"]}, "errors": []},
        {"a": [1, 2.5, True, False, None, 'x"y\n', "é"], "b": {"c": {"d": [[], {}, [{"e": -3}]]}}},
        {"n": float("inf"), "m": 1e20, "t": (1, 2), 3: "key"},
    ],
)
def test_dumps_writes_what_json_dumps_indent_2_writes(doc):
    import json

    assert dp.dumps(doc) == json.dumps(doc, indent=2) + "\n"
