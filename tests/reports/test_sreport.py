"""``fsched sreport`` over a fixed history (tests/reports/history.py): the API's figures
laid out by the CLI, checked against the report written out by hand in Slurm's layout."""

from __future__ import annotations

import time

import pytest

from cli import sreport
from reports.services import report_rollup
from tests.reports.history import at, make_history

RULE = "-" * 80
SPAN = "2026-01-05T10:00:00 - 2026-01-05T11:59:59"


@pytest.fixture
def rolled(db, api, monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    make_history()
    report_rollup(now=at(1, day=6))
    yield api
    monkeypatch.undo()
    time.tzset()


def run(api, user: str, words: list[str], *options: str) -> str:
    """The command's own steps, with the API answered by the test client."""
    opts, rest = sreport.split_options([*options, *words])
    report = sreport.which_report(rest)
    params = sreport.conditions(rest[2:], at(1, day=6))
    job_count = params.pop("job_count", "") == "1"
    if opts.tres:
        params["tres"] = opts.tres
    answer = api(user).get(f"/api/reports/sreport/{report}/", params)
    assert answer.status_code == 200, answer.content
    return sreport.render(
        report, answer.json(), sreport.TimeFormat(opts.time_format), tres_given=bool(opts.tres),
        parsable=opts.parsable, header=opts.header, job_count=job_count,
    )  # fmt: skip


WINDOW = ["start=2026-01-05T10:00:00", "end=2026-01-05T12:00:00"]


def test_cluster_utilization_in_minutes(rolled):
    assert run(rolled, "admin", ["cluster", "utilization", *WINDOW]) == (
        f"{RULE}\nCluster Utilization {SPAN}\nUsage reported in CPU Minutes\n{RULE}\n"
        "  Cluster Allocate     Down PLND Dow     Idle  Planned Reported \n"
        "--------- -------- -------- -------- -------- -------- -------- \n"
        "  cluster      405      240        0      255       60      960 \n"
    )


def test_cluster_utilization_percent_and_parsable(rolled):
    out = run(rolled, "admin", ["cluster", "utilization", *WINDOW], "-t", "percent", "-P")
    assert out.splitlines()[4:] == [
        "Cluster|Allocated|Down|PLND Down|Idle|Planned|Reported",
        # 405/960, 240/960, 255/960, 60/960; reported 960 of 8 CPUs x 120 minutes.
        "cluster|42.19%|25.00%|0.00%|26.56%|6.25%|100.00%",
    ]
    assert run(rolled, "admin", ["cluster", "utilization", *WINDOW], "-t", "hourper", "-n", "-p") == (
        "cluster|7(42.19%)|4(25.00%)|0(0.00%)|4(26.56%)|1(6.25%)|16(100.00%)|\n"
    )


def test_account_utilization_by_user_rolls_the_tree_up(rolled):
    assert run(rolled, "admin", ["cluster", "AccountUtilizationByUser", *WINDOW]) == (
        f"{RULE}\nCluster/Account/User Utilization {SPAN} (7200 secs)\n"
        f"Usage reported in CPU Minutes\n{RULE}\n"
        "  Cluster         Account     Login     Proper Name     Used   Energy \n"
        "--------- --------------- --------- --------------- -------- -------- \n"
        "  cluster            root                                405        0 \n"
        "  cluster            chem                                180        0 \n"
        "  cluster            chem       bob                      180        0 \n"
        "  cluster         physics                                225        0 \n"
        "  cluster         physics     alice                      180        0 \n"
        "  cluster          theory                                 45        0 \n"
        "  cluster          theory     carol                       45        0 \n"
    )


def test_user_utilization_by_account_and_top_usage_in_seconds_with_tres(rolled):
    out = run(rolled, "admin", ["cluster", "UserUtilizationByAccount", *WINDOW], "-t", "seconds", "-P")
    assert out.splitlines()[4:] == [
        "Cluster|Login|Proper Name|Account|Used|Energy",
        "cluster|alice||physics|10800|0",
        "cluster|bob||chem|10800|0",
        "cluster|carol||theory|2700|0",
    ]
    out = run(rolled, "admin", ["user", "topusage", "TopCount=2", *WINDOW], "-T", "cpu,node", "-t", "hours")
    assert out == (
        f"{RULE}\nTop 2 Users {SPAN} (7200 secs)\nUsage reported in TRES Hours\n{RULE}\n"
        "  Cluster     Login     Proper Name         Account      TRES Name     Used \n"
        "--------- --------- --------------- --------------- -------------- -------- \n"
        "  cluster     alice                         physics            cpu        3 \n"
        "  cluster     alice                         physics           node        2 \n"
        "  cluster       bob                            chem            cpu        3 \n"
        "  cluster       bob                            chem           node        2 \n"
    )


def test_job_sizes_by_account(rolled):
    out = run(rolled, "admin", ["job", "SizesByAccount", "grouping=2,4", *WINDOW])
    assert out == (
        f"{RULE}\nJob Sizes {SPAN} (7200 secs)\nTime reported in Minutes\n{RULE}\n"
        "  Cluster   Account      0-1 CPUs      2-3 CPUs     >= 4 CPUs Total Count % of cluster \n"
        "--------- --------- ------------- ------------- ------------- ----------- ------------ \n"
        "  cluster      chem             0           180             0         180       44.44% \n"
        "  cluster   physics            45           180             0         225       55.56% \n"
    )
    out = run(rolled, "admin", ["job", "SizesByAccount", "PrintJobCount", "FlatView", *WINDOW], "-n", "-P")
    assert out.splitlines() == [
        "cluster|chem|1|0|0|0|0|1|33.33%",
        "cluster|physics|1|0|0|0|0|1|33.33%",
        "cluster|theory|1|0|0|0|0|1|33.33%",
    ]


def test_a_user_sees_their_own_usage_only(rolled):
    out = run(rolled, "bob", ["cluster", "UserUtilizationByAccount", *WINDOW], "-P", "-n")
    assert out == "cluster|bob||chem|180|0\n"


def test_bad_input_is_refused_with_its_name(rolled):
    answer = rolled("admin").get("/api/reports/sreport/utilization/", {"tres": "bogus"})
    assert answer.status_code == 400 and "bogus" in answer.json()["error"]
    answer = rolled("admin").get("/api/reports/sreport/utilization/", {"start": "yesterday-ish"})
    assert answer.status_code == 400 and answer.json()["error"].startswith("start:")
    assert rolled("admin").get("/api/reports/sreport/nonsense/").status_code == 404
    assert rolled(None).get("/api/reports/sreport/utilization/").status_code in (401, 403)
    with pytest.raises(sreport.CliError, match="Not valid report Bogus"):
        sreport.which_report(["cluster", "Bogus"])
    with pytest.raises(sreport.CliError, match="Unknown condition: colour=red"):
        sreport.conditions(["colour=red"], at(1))
    with pytest.raises(sreport.CliError, match="unknown time format fortnights"):
        sreport.TimeFormat("fortnights")
