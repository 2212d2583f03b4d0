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


def test_invalid_format_letter(capsys):
    with pytest.raises(ValueError):
        format_jobs([], "%.5!")
    assert main(["fsched", "squeue", "-o", "%!"]) == 1
    assert "squeue: error: Invalid job format specification: !" in capsys.readouterr().err


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
    assert json.loads(capsys.readouterr().out) == {"jobs": [objs.job()]}
    api.routes[("GET", "/api/jobs/")] = (200, api.page([]))
    assert main(["fsched", "squeue", "-j", "999"]) == 1
    assert capsys.readouterr().err == "slurm_load_jobs error: Invalid job id specified\n"
