"""scancel: job id grammar, the bulk request, per-job errors as Slurm words them."""

from __future__ import annotations

import argparse

import pytest

from cli.main import main
from cli.scancel import build_request, normalize_signal, parse_job_ids


def test_job_id_grammar():
    assert parse_job_ids(["12", "13_4", "14_[1-3,7]", "15,16"]) == [
        12,
        "13_4",
        "14_1",
        "14_2",
        "14_3",
        "14_7",
        15,
        16,
    ]
    assert parse_job_ids(["20_[0-2%1]"]) == ["20_0", "20_1", "20_2"]
    for bad in ("abc", "12_x", "12_[a-b]", "-3"):
        with pytest.raises(ValueError):
            parse_job_ids([bad])


def test_request_body():
    ns = argparse.Namespace(
        user="alice", partition="debug", name=None, account="phys", state="pending", signal="SIGUSR1"
    )
    assert build_request(ns, [12, "13_4"]) == {
        "job_ids": [12, "13_4"],
        "user": "alice",
        "partition": "debug",
        "account": "phys",
        "state": "PENDING",
        "signal": "USR1",
    }
    assert normalize_signal("term") == "TERM"
    assert normalize_signal("9") == "9"


def test_b_and_f_say_which_processes_a_signal_reaches():
    from cli.scancel import build_parser

    def body(*argv: str) -> dict:
        ns = build_parser().parse_args([*argv, "12"])
        return build_request(ns, [12])

    assert body("-s", "USR1") == {"job_ids": [12], "signal": "USR1"}  # the steps (Slurm's default)
    assert body("-b", "-s", "USR1")["scope"] == "batch"
    assert body("-f", "-s", "USR1")["scope"] == "full"
    assert "scope" not in body("-b")  # a cancel is a cancel


def test_refusals_are_printed_per_job(api, capsys):
    api.routes[("POST", "/api/jobs/cancel/")] = (
        200,
        {
            "cancelled": [12],
            "errors": [
                {"job_id": 13, "error": "Kill job error on job id 13: Access/permission denied"},
                {"job_id": 99, "error": "Invalid job id specified"},
            ],
        },
    )
    assert main(["fsched", "scancel", "12", "13", "99"]) == 1
    assert capsys.readouterr().err == (
        "scancel: error: Kill job error on job id 13: Access/permission denied\n"
        "scancel: error: Kill job error on job id 99: Invalid job id specified\n"
    )
    assert api.requests[0]["body"] == {"job_ids": [12, 13, 99]}


def test_success_and_argument_errors(api, capsys):
    api.routes[("POST", "/api/jobs/cancel/")] = (200, {"cancelled": [1], "errors": []})
    assert main(["fsched", "scancel", "-u", "alice", "-t", "PD"]) == 0
    assert api.requests[-1]["body"] == {"user": "alice", "state": "PD"}
    assert main(["fsched", "scancel"]) == 1
    assert "scancel: error: No job identification provided" in capsys.readouterr().err
    assert main(["fsched", "scancel", "x1"]) == 1
    assert "scancel: error: Invalid job id x1" in capsys.readouterr().err


def test_qos_filter_selects_jobs_first(api, objs):
    api.routes[("GET", "/api/jobs/")] = (200, api.page([objs.job(job_id=4), objs.job(job_id=6)]))
    api.routes[("POST", "/api/jobs/cancel/")] = (200, {"cancelled": [4, 6], "errors": []})
    assert main(["fsched", "scancel", "-q", "high", "-u", "alice"]) == 0
    assert api.requests[-2]["query"] == "qos=high&user=alice&limit=100000"
    assert api.requests[-1]["body"] == {"job_ids": [4, 6]}


def test_a_bad_state_is_refused_before_any_request(api, capsys):
    from cli.main import main

    assert main(["fsched", "scancel", "--state=bogus", "-u", "alice"]) == 1
    assert capsys.readouterr().err == (
        "Invalid job state specified: bogus\nValid job states are PENDING, RUNNING, and SUSPENDED\n"
    )
    assert api.requests == []


def test_verbose_says_when_no_job_matches_the_filters(api, objs, capsys):
    """scancel -v (src/scancel/scancel.c, _log_filter_err_msg/_filters2str): the filters in
    its order, each "name=value " with its space; exit 0; silent without -v."""
    api.routes[("GET", "/api/users/")] = (200, {"users": ["alice"]})
    api.routes[("POST", "/api/jobs/cancel/")] = (200, {"cancelled": [], "errors": []})
    assert main(["fsched", "scancel", "-v", "-u", "alice", "-n", "prep", "-t", "pd", "-p", "debug"]) == 0
    assert capsys.readouterr().err == (
        "scancel: error: No active jobs match ALL job filters, including: "
        "job_name=prep partition=debug state=PENDING user_name=alice \n"
    )
    assert main(["fsched", "scancel", "-u", "alice", "-n", "prep"]) == 0
    assert capsys.readouterr().err == ""
    api.routes[("GET", "/api/jobs/")] = (200, api.page([]))
    assert main(["fsched", "scancel", "-v", "-q", "high"]) == 0
    assert capsys.readouterr().err.endswith("including: qos=high \n")
    api.routes[("POST", "/api/jobs/cancel/")] = (200, {"cancelled": [4], "errors": []})
    assert main(["fsched", "scancel", "-v", "-n", "prep"]) == 0
    assert capsys.readouterr().err == "scancel: Terminating job 4\n"
