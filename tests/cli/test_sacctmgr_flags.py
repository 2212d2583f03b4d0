"""sacctmgr's flags as getopt reads them (src/sacctmgr/sacctmgr.c, "hionpPQrsvV"): clustered
(``sacctmgr -nP show user``, the way scripts write it, was "Unknown option: -nP"), anywhere
on the line, and getopt's words for a flag it does not know."""

from __future__ import annotations

import pytest

from cli.main import main
from cli.sacctmgr import _split


def test_clustered_and_separate_flags_anywhere():
    flags, words = _split(["-nP", "show", "user", "-i", "format=name"])
    assert (flags["noheader"], flags["parsable2"], flags["immediate"], flags["parsable"]) == (
        True,
        True,
        True,
        False,
    )
    assert words == ["show", "user", "format=name"]
    flags, words = _split(["--noheader", "--parsable", "list", "qos", "where", "name=x", "set", "MaxJobs=-1"])
    assert (flags["noheader"], flags["parsable"]) == (True, True)
    assert words == ["list", "qos", "where", "name=x", "set", "MaxJobs=-1"]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["-nx", "show", "qos"], "invalid option -- 'x'"),
        (["--bogus", "show", "qos"], "unrecognized option '--bogus'"),
    ],
)
def test_an_unknown_flag_is_getopt_s_refusal(capsys, args, words):
    assert main(["fsched", "sacctmgr", *args]) == 1
    assert capsys.readouterr().err == f'sacctmgr: {words}\nTry "sacctmgr --help" for more information\n'


def test_show_with_no_header_and_bars_between_fields(api, capsys):
    api.routes[("GET", "/api/limits/show/qos/")] = (
        200,
        {
            "columns": ["Name", "Priority"],
            "rows": [{"Name": "normal", "Priority": "0"}, {"Name": "high", "Priority": "10"}],
        },
    )
    assert main(["fsched", "sacctmgr", "-nP", "show", "qos"]) == 0
    assert capsys.readouterr().out == "normal|0\nhigh|10\n"
