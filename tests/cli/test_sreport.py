"""``fsched sreport`` as a command: its options anywhere, its conditions sent as the API's
parameters (times as epoch seconds, by default yesterday), and Slurm's refusals."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cli.main import COMMANDS, main

UTIL = {
    "cluster": "c1",
    "start": 1767571200,  # 2026-01-05T00:00:00Z
    "end": 1767657600,
    "tres": ["cpu"],
    "rows": [
        {"tres": "cpu", "count": 2, "alloc": 86400.0, "down": 0.0, "pdown": 0.0, "plan": 0.0,
         "idle": 86400.0, "resv": 0.0, "over": 0.0, "reported": 172800.0},
    ],
}  # fmt: skip


def test_registered():
    assert COMMANDS["sreport"] == "cli.sreport"


def test_options_anywhere_and_conditions_as_parameters(api, capsys):
    api.routes[("GET", "/api/reports/sreport/utilization/")] = (200, UTIL)
    assert main(["fsched", "sreport", "cluster", "Utilization", "-t", "Hours", "start=2026-01-05",
                 "end=2026-01-06", "-P"]) == 0  # fmt: skip
    out = capsys.readouterr().out.splitlines()
    assert out[1] == "Cluster Utilization 2026-01-05T00:00:00 - 2026-01-05T23:59:59"
    assert out[2] == "Usage reported in CPU Hours"
    assert out[4:] == ["Cluster|Allocated|Down|PLND Down|Idle|Planned|Reported", "c1|24|0|0|24|0|48"]
    query = api.requests[-1]["query"]
    assert "start=1767571200" in query and "end=1767657600" in query


def test_the_default_range_is_yesterday(api, capsys):
    api.routes[("GET", "/api/reports/sreport/utilization/")] = (200, UTIL)
    assert main(["fsched", "sreport", "-n", "cluster", "ut"]) == 0
    query = dict(p.split("=") for p in api.requests[-1]["query"].split("&"))
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    assert int(query["end"]) == int(today.timestamp())
    assert int(query["end"]) - int(query["start"]) == 86400


def test_refusals(api, capsys):
    assert main(["fsched", "sreport", "cluster", "Sizes"]) == 1
    err = capsys.readouterr().err
    assert "Not valid report Sizes" in err and "Valid cluster reports are" in err
    assert main(["fsched", "sreport", "user", "topusage", "start=whenever"]) == 1
    assert "Invalid time specification: whenever" in capsys.readouterr().err
    assert main(["fsched", "sreport", "-t", "fortnights", "cluster", "utilization"]) == 1
    assert "unknown time format fortnights" in capsys.readouterr().err
    api.routes[("GET", "/api/reports/sreport/top_usage/")] = (400, {"error": "tres: Invalid TRES 'x'"})
    assert main(["fsched", "sreport", "-T", "x", "user", "topusage"]) == 1
    assert "tres: Invalid TRES 'x'" in capsys.readouterr().err
    assert not [r for r in api.requests if "start=whenever" in r["query"]]


def test_flags_clustered_as_getopt_takes_them():
    """sreport's getopt string "aM:hnpPQs:t:T:vV" (src/sreport/sreport.c): ``sreport -nP
    cluster utilization``, as scripts write it, was "invalid option -- 'nP'"."""
    from cli.client import CliError
    from cli.sreport import split_options

    opts, words = split_options(["-nP", "cluster", "utilization", "-t", "hours"])
    assert (opts.header, opts.parsable, opts.time_format) == (False, "P", "hours")
    assert words == ["cluster", "utilization"]
    opts, _ = split_options(["-np", "-tpercent", "cluster", "utilization"])
    assert (opts.header, opts.parsable, opts.time_format) == (False, "p", "percent")
    with pytest.raises(CliError, match=r"^invalid option -- 'x'"):
        split_options(["-nx", "cluster", "utilization"])
    with pytest.raises(CliError, match=r"^unrecognized option '--bogus'"):
        split_options(["--bogus", "cluster", "utilization"])
