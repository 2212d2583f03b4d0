"""squeue: Slurm's columns, widths, %R, array folding and sorting, on API job objects."""

from __future__ import annotations

import json

import pytest

from cli.main import main
from cli.squeue import LONG_FORMAT, format_jobs

HEADER = "             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)"


def test_default_columns(objs):
    jobs = [
        objs.job(job_id=12, run_time=3723, node_list="node[01-02]"),
        objs.pending(job_id=13, name="a_very_long_name", priority=10),
        objs.pending(job_id=14, reason="Resources", priority=20),
    ]
    assert format_jobs(jobs) == [
        HEADER,
        "                14     debug     wrap    alice PD       0:00      1 (Resources)",
        "                13     debug a_very_l    alice PD       0:00      1 (Priority)",
        "                12     debug     wrap    alice  R    1:02:03      2 node[01-02]",
    ]


def test_pending_array_tasks_fold_unless_asked_one_per_line(objs):
    tasks = [
        objs.pending(job_id=20 + t, array_job_id=20, array_task_id=t, reason="Resources")
        for t in (3, 4, 5, 9)
    ]
    running = objs.job(job_id=21, array_job_id=20, array_task_id=1, run_time=5)
    folded = format_jobs([running, *tasks], header=False)
    assert folded == [
        "        20_[3-5,9]     debug     wrap    alice PD       0:00      1 (Resources)",
        "              20_1     debug     wrap    alice  R       0:05      1 node01",
    ]
    assert len(format_jobs([running, *tasks], header=False, array_tasks=True)) == 5
    throttled = [dict(t, array_task_throttle=2) for t in tasks]
    assert format_jobs(throttled, "%i", header=False) == ["20_[3-5,9%2]"]


def test_custom_format_letters_and_alignment(objs):
    job = objs.job(account="phys", mem_per_node=4096, time_limit=30, run_time=65, priority=7, num_cpus=8)
    lines = format_jobs([job], "%i|%-6j|%.6u|%a|%q|%T|%l|%L|%D|%C|%m|%Q|%S|%V|%e|%N|%P|%r|%b|%Z")
    assert lines == [
        "JOBID|NAME  |  USER|ACCOUNT|QOS|STATE|TIME_LIMIT|TIME_LEFT|NODES|CPUS|MIN_MEMORY|PRIORITY|START_TIME|"  # noqa: E501 - one exact Slurm line
        "SUBMIT_TIME|END_TIME|NODELIST|PARTITION|REASON|TRES_PER_NODE|WORK_DIR",
        "12|wrap  | alice|phys|normal|RUNNING|30:00|28:55|1|8|4G|7|2024-03-01T10:00:05|2024-03-01T10:00:00|"
        "2024-03-01T11:00:05|node01|debug|None|N/A|/tmp",
    ]


def test_reason_detail_and_unlimited(objs):
    job = objs.pending(reason="ReqNodeNotAvail", reason_detail="UnavailableNodes:node03", time_limit=None)
    assert format_jobs([job], "%R %l %L", header=False) == [
        "(ReqNodeNotAvail, UnavailableNodes:node03) UNLIMITED UNLIMITED"
    ]


def test_long_format(objs):
    lines = format_jobs([objs.job()], LONG_FORMAT)
    assert lines == [
        "             JOBID PARTITION     NAME     USER    STATE       TIME TIME_LIMI  NODES NODELIST(REASON)",  # noqa: E501 - one exact Slurm line
        "                12     debug     wrap    alice  RUNNING       0:12   1:00:00      1 node01",
    ]


def test_sort_option(objs):
    jobs = [
        objs.job(job_id=3, user="carol"),
        objs.job(job_id=1, user="bob"),
        objs.job(job_id=2, user="alice"),
    ]
    assert format_jobs(jobs, "%i", header=False, sort="u") == ["2", "1", "3"]
    assert format_jobs(jobs, "%i", header=False, sort="-i") == ["3", "2", "1"]


def test_invalid_format_letter(api, capsys, objs):
    """squeue's _parse_format (src/squeue/opts.c): error() about the letter, the directive
    printed as it was written, and squeue goes on (exit 0)."""
    with pytest.raises(ValueError):
        format_jobs([], "%.5!")
    api.routes[("GET", "/api/jobs/")] = (200, api.page([objs.job(job_id=4)]))
    assert main(["fsched", "squeue", "-o", "%i|%.5!|%%"]) == 0
    out = capsys.readouterr()
    assert out.err == "squeue: error: Invalid job format specification: !\n"
    assert out.out == "JOBID|%.5!|%\n4|%.5!|%\n"
    assert main(["fsched", "squeue", "-O", "jobid:3,bogus:.4|,username:5"]) == 0
    out = capsys.readouterr()
    assert out.err == "squeue: error: Invalid job format specification: bogus\n"
    assert out.out == "JOB|USER \n4  |alice\n"


def test_filters_become_query_parameters(api, capsys, objs):
    api.routes[("GET", "/api/jobs/")] = (200, api.page([objs.pending(job_id=5, reason="PartitionTimeLimit")]))
    assert main(["fsched", "squeue", "-j", "5", "-h", "-o", "%i %t %r"]) == 0
    assert capsys.readouterr().out == "5 PD PartitionTimeLimit\n"
    assert api.requests[-1]["query"] == "job_id=5&state=all&limit=100000"
    assert main(["fsched", "squeue", "-u", "alice,bob", "-t", "pd,r", "-p", "debug", "-h"]) == 0
    assert api.requests[-1]["query"] == "user=alice,bob&state=PD,R&partition=debug&limit=100000"


def test_json_output_and_unknown_job(api, capsys, objs):
    api.routes[("GET", "/api/jobs/")] = (200, api.page([objs.job()]))
    assert main(["fsched", "squeue", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert list(doc) == ["jobs", "last_backfill", "last_update", "meta", "errors", "warnings"]
    assert [(j["job_id"], j["job_state"]) for j in doc["jobs"]] == [(12, ["RUNNING"])]
    api.routes[("GET", "/api/jobs/")] = (200, api.page([]))
    assert main(["fsched", "squeue", "-j", "999"]) == 1
    assert capsys.readouterr().err == "slurm_load_jobs error: Invalid job id specified\n"


def _planned(objs, job_id: int, start: str | None, nodes: str = "", **fields) -> dict:
    return objs.pending(job_id=job_id, start_time=start, sched_nodes=nodes, time_limit=5, **fields)


def test_start_lists_pending_jobs_by_planned_start_as_squeue_does(api, capsys, objs):
    api.routes[("GET", "/api/jobs/")] = (
        200,
        api.page(
            [
                _planned(objs, 7, None, reason="JobHeldUser"),
                _planned(objs, 8, "2030-01-01T10:05:00+00:00", "node[01-08]", reason="Priority"),
                _planned(objs, 9, "2030-01-01T10:00:00+00:00", "node[01-08]", reason="Resources"),
            ]
        ),
    )
    assert main(["fsched", "squeue", "--start"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "             JOBID PARTITION     NAME     USER ST          START_TIME  NODES SCHEDNODES           NODELIST(REASON)",  # noqa: E501 - one exact Slurm line
        "                 9     debug     wrap    alice PD 2030-01-01T10:00:00      1 node[01-08]          (Resources)",  # noqa: E501 - one exact Slurm line
        "                 8     debug     wrap    alice PD 2030-01-01T10:05:00      1 node[01-08]          (Priority)",  # noqa: E501 - one exact Slurm line
        "                 7     debug     wrap    alice PD                 N/A      1 (null)               (JobHeldUser)",  # noqa: E501 - one exact Slurm line
    ]
    # Pending jobs only, and the plan asked for (one dry-run pass on the controller).
    assert api.requests[-1]["query"] == "state=PD&start=1&limit=100000"
    # Its defaults give way to the options given with it.
    assert main(["fsched", "squeue", "--start", "-t", "all", "-o", "%i", "-h"]) == 0
    assert capsys.readouterr().out.split() == ["9", "8", "7"]
    assert api.requests[-1]["query"] == "state=all&start=1&limit=100000"


def test_the_plan_is_asked_only_for_a_format_or_sort_that_shows_it(api, capsys, objs):
    api.routes[("GET", "/api/jobs/")] = (200, api.page([_planned(objs, 9, None)]))
    for argv, asked in (
        ([], False),
        (["-o", "%i %Y"], True),
        (["-O", "jobid,schednodes"], True),
        (["-o", "%i", "-S", "-S"], True),
        (["-o", "%i", "-S", "i"], False),
    ):
        assert main(["fsched", "squeue", *argv]) == 0, argv
        assert ("start=1" in api.requests[-1]["query"]) is asked, argv
    capsys.readouterr()


def test_start_sort_puts_jobs_without_a_start_last_both_ways(objs):
    jobs = [
        _planned(objs, 1, None),
        _planned(objs, 2, "2030-01-01T10:05:00+00:00"),
        _planned(objs, 3, "2030-01-01T10:00:00+00:00"),
        # Planned in the past: squeue counts it as now, ahead of any future one.
        _planned(objs, 4, "2000-01-01T00:00:00+00:00"),
    ]
    assert format_jobs(jobs, "%i", header=False, sort="S") == ["4", "3", "2", "1"]
    assert format_jobs(jobs, "%i", header=False, sort="-S") == ["2", "3", "4", "1"]


def test_bad_state_and_job_id_words_are_refused_before_any_request(api, capsys, objs):
    assert main(["fsched", "squeue", "-t", "pd,bogus"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "squeue: error: Invalid job state specified: bogus"
    assert err[1].startswith("squeue: error: Valid job states include: PENDING,RUNNING,SUSPENDED,")
    assert err[1].endswith(",STAGE_OUT,STOPPED")
    assert main(["fsched", "squeue", "-j", "12,abc"]) == 1
    assert capsys.readouterr().err == "squeue: error: Invalid job id: abc\n"
    assert api.requests == []
    # States Slurm knows and fsched never gives are words, not errors; compact codes too.
    api.routes[("GET", "/api/jobs/")] = (200, api.page([]))
    assert main(["fsched", "squeue", "-t", "revoked,SE,r", "-h"]) == 0
    assert api.requests[-1]["query"] == "state=REVOKED,SE,R&limit=100000"
    api.routes[("GET", "/api/jobs/")] = (200, api.page([objs.job(job_id=14)]))
    assert main(["fsched", "squeue", "-j", "12_3,14", "-h", "-o", "%i"]) == 0
    assert capsys.readouterr().out == "14\n"
