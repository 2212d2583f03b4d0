"""``fsched sacct`` (#16 point 7) against a fixed job history: Slurm's default columns, its
states and exit codes, elapsed times, the batch step's line, -P/-p, field widths and the
``+`` of a cut value, and the query the options make."""

from __future__ import annotations

from datetime import datetime

import pytest

from cli import sacct, sacct_fields
from cli.main import COMMANDS, main

URL = "/api/accounting/jobs/"


def job(job_id: int, state: str, **kw) -> dict:
    """A job as the accounting API returns it, with its batch step unless it never ran."""
    ran = kw.pop("ran", True)
    row = {
        "job_id": job_id,
        "array_job_id": None,
        "array_task_id": None,
        "name": "sim",
        "user": "alice",
        "account": "physics",
        "partition": "debug",
        "qos": "normal",
        "state": state,
        "cancelled_by": None,
        "reason": "None",
        "exit_code": 0,
        "exit_signal": 0,
        "submit_time": "2026-03-01T12:00:00+00:00",
        "eligible_time": "2026-03-01T12:00:00+00:00",
        "start_time": "2026-03-01T12:00:10+00:00" if ran else None,
        "end_time": "2026-03-01T12:00:15+00:00",
        "elapsed": 5 if ran else 0,
        "time_limit": 60,
        "nnodes": 1,
        "alloc_cpus": 2 if ran else 0,
        "req_cpus": 2,
        "req_mem_mb": 4000,
        "alloc_tres": "billing=2,cpu=2,mem=4000M,node=1" if ran else "",
        "req_tres": "billing=2,cpu=2,mem=4000M,node=1",
        "node_list": "node01" if ran else "None assigned",
        "work_dir": "/home/alice",
        "comment": "",
        "max_rss_kb": None,
        "total_cpu_secs": None,
        "steps": [],
    }
    step_kw = kw.pop("step", {})
    row.update(kw)
    if ran:
        row["steps"] = [
            {
                "step_id": "batch",
                "name": "batch",
                "state": state,
                "exit_code": row["exit_code"],
                "exit_signal": row["exit_signal"],
                "start_time": row["start_time"],
                "end_time": row["end_time"],
                "elapsed": row["elapsed"],
                "nnodes": 1,
                "ntasks": 1,
                "alloc_cpus": 2,
                "alloc_tres": "cpu=2,mem=4000M,node=1",
                "node_list": "node01",
                "max_rss_kb": None,
                "total_cpu_secs": None,
                **step_kw,
            }
        ]
    return row


HISTORY = [
    job(101, "COMPLETED"),
    job(102, "FAILED", exit_code=1),
    job(103, "CANCELLED", cancelled_by=0, step={"state": "CANCELLED", "exit_signal": 15}),
    job(104, "TIMEOUT", elapsed=3600, end_time="2026-03-01T13:00:10+00:00",
        step={"state": "CANCELLED", "exit_signal": 15, "elapsed": 3600}),
    job(105, "PENDING", ran=False, end_time=None, reason="Priority", time_limit=None),
    job(106, "RUNNING", name="a-rather-long-name", end_time=None, elapsed=90061,
        step={"state": "RUNNING", "end_time": None, "elapsed": 90061}),
    job(107, "OUT_OF_MEMORY", exit_signal=0, exit_code=0,
        step={"state": "OUT_OF_MEMORY", "max_rss_kb": 1536000, "total_cpu_secs": 12.25}),
]  # fmt: skip


@pytest.fixture
def history(api):
    api.routes[("GET", URL)] = (200, {"jobs": HISTORY, "next": None})
    return api


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["fsched", "sacct", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_registered():
    assert COMMANDS["sacct"] == "cli.sacct"


def test_default_columns_states_exit_codes_and_steps(history, capsys):
    code, out, _ = run(capsys)
    assert code == 0
    assert out.splitlines() == [
        "JobID           JobName  Partition    Account  AllocCPUS      State ExitCode ",
        "------------ ---------- ---------- ---------- ---------- ---------- -------- ",
        "101                 sim      debug    physics          2  COMPLETED      0:0 ",
        "101.batch         batch               physics          2  COMPLETED      0:0 ",
        "102                 sim      debug    physics          2     FAILED      1:0 ",
        "102.batch         batch               physics          2     FAILED      1:0 ",
        "103                 sim      debug    physics          2 CANCELLED+      0:0 ",
        "103.batch         batch               physics          2  CANCELLED     0:15 ",
        "104                 sim      debug    physics          2    TIMEOUT      0:0 ",
        "104.batch         batch               physics          2  CANCELLED     0:15 ",
        "105                 sim      debug    physics          0    PENDING      0:0 ",
        "106          a-rather-+      debug    physics          2    RUNNING      0:0 ",
        "106.batch         batch               physics          2    RUNNING      0:0 ",
        "107                 sim      debug    physics          2 OUT_OF_ME+      0:0 ",
        "107.batch         batch               physics          2 OUT_OF_ME+      0:0 ",
    ]


def test_parsable2_prints_whole_values_and_cancelled_by(history, capsys):
    code, out, _ = run(capsys, "-P", "-X", "-o", "jobid,state,elapsed,timelimit,start,end")
    assert code == 0
    assert out.splitlines() == [
        "JobID|State|Elapsed|Timelimit|Start|End",
        "101|COMPLETED|00:00:05|01:00:00|2026-03-01T12:00:10|2026-03-01T12:00:15",
        "102|FAILED|00:00:05|01:00:00|2026-03-01T12:00:10|2026-03-01T12:00:15",
        "103|CANCELLED by 0|00:00:05|01:00:00|2026-03-01T12:00:10|2026-03-01T12:00:15",
        "104|TIMEOUT|01:00:00|01:00:00|2026-03-01T12:00:10|2026-03-01T13:00:10",
        "105|PENDING|00:00:00|UNLIMITED|Unknown|Unknown",
        "106|RUNNING|1-01:01:01|01:00:00|2026-03-01T12:00:10|Unknown",
        "107|OUT_OF_MEMORY|00:00:05|01:00:00|2026-03-01T12:00:10|2026-03-01T12:00:15",
    ]


def test_parsable_ends_every_field_with_the_delimiter_and_delimiter_changes_it(history, capsys):
    _, out, _ = run(capsys, "-p", "-n", "-j", "101", "-o", "jobid,jobname")
    assert out.splitlines()[:2] == ["101|sim|", "101.batch|batch|"]
    _, out, _ = run(capsys, "-P", "--delimiter=,", "-j", "101", "-o", "jobidraw,state")
    assert out.splitlines()[:3] == ["JobIDRaw,State", "101,COMPLETED", "101.batch,COMPLETED"]


def test_field_widths_right_and_left_and_the_cut_with_a_plus(history, capsys):
    _, out, _ = run(capsys, "-X", "-n", "-o", "jobid%5,state%20,jobname%-4")
    lines = out.splitlines()
    # %5 is a positive width: right-aligned, as sacct reads it (JobID's own is left, -12).
    assert lines[2] == "  103       CANCELLED by 0 sim  "
    assert lines[5] == "  106              RUNNING a-r+ "
    # A width wider than the header name pads the header too.
    _, out, _ = run(capsys, "-X", "-o", "state%12")
    assert out.splitlines()[:2] == ["       State ", "------------ "]


def test_step_fields_and_units(history, capsys):
    fields = "jobid,maxrss,totalcpu,reqmem,alloctres,nodelist,user,partition,cputime"
    _, out, _ = run(capsys, "-P", "-n", "-j", "107", "-o", fields)
    job_line, step_line = out.splitlines()[-2:]
    # The job's TotalCPU is its ended steps' added up, as sacct's options.c adds them.
    assert job_line == "107||00:12.250|4000M|billing=2,cpu=2,mem=4000M,node=1|node01|alice|debug|00:00:10"
    assert step_line == "107.batch|1500M|00:12.250||cpu=2,mem=4000M,node=1|node01|||00:00:10"
    _, out, _ = run(capsys, "-P", "-n", "--units=G", "-j", "107", "-o", "jobid,maxrss,reqmem")
    assert out.splitlines()[-2:] == ["107||3.91G", "107.batch|1.46G|"]


def test_one_step_alone(history, capsys):
    # -j 101.batch: the step's line without the job's (the canned API returns every job).
    _, out, _ = run(capsys, "-P", "-n", "-j", "101.batch", "-o", "jobid,state")
    assert "101.batch|COMPLETED" in out.splitlines()
    assert "101|COMPLETED" not in out.splitlines()


def test_query_defaults_follow_slurm(history, capsys):
    now = datetime(2026, 3, 1, 15, 30).astimezone()
    midnight = int(now.replace(hour=0, minute=0, second=0).timestamp())
    opts = sacct.sacct_args.parse([])
    assert sacct.build_query(opts, now) == {"start": str(midnight)}
    opts = sacct.sacct_args.parse(["-s", "R,cd"])
    assert sacct.build_query(opts, now) == {"state": "RUNNING,COMPLETED", "start": str(int(now.timestamp()))}
    opts = sacct.sacct_args.parse(["-j", "12,13", "--jobs=14_2", "-A", "a", "-A", "b"])
    assert sacct.build_query(opts, now) == {"job_id": "12,13,14_2", "all_users": "1", "account": "a,b"}
    opts = sacct.sacct_args.parse(["-u", "-1"])
    assert sacct.build_query(opts, now)["all_users"] == "1"
    opts = sacct.sacct_args.parse(["--user=bob", "-a", "-S", "2026-02-01", "-E", "now"])
    query = sacct.build_query(opts, now)
    assert query["user"] == "bob" and "all_users" not in query
    assert query["start"] == str(int(datetime(2026, 2, 1).astimezone().timestamp()))
    assert query["end"] == str(int(now.timestamp()))


def test_start_times_are_read_as_slurm_s_past_times():
    now = datetime(2026, 3, 1, 15, 30).astimezone()
    assert sacct.parse_when("08:00", now) == now.replace(hour=8, minute=0)
    assert sacct.parse_when("16:00", now) == datetime(2026, 2, 28, 16, 0).astimezone()
    assert sacct.parse_when("12/25", now) == datetime(2025, 12, 25).astimezone()
    assert sacct.parse_when("now-2hours", now) == now.replace(hour=13)


def test_allocations_alone_lists_the_caller_s_jobs_and_exits_0(history, capsys):
    code, out, _ = run(capsys, "-X")
    assert code == 0
    assert "101.batch" not in out and "101 " in out
    assert "all_users" not in history.requests[-1]["query"]


def test_json_has_jobs_with_steps(history, capsys):
    import json

    code, out, _ = run(capsys, "--json")
    doc = json.loads(out)
    assert code == 0
    first = doc["jobs"][0]
    assert first["job_id"] == 101 and first["state"]["current"] == ["COMPLETED"]
    assert first["steps"][0]["step"]["id"] == "101.batch"
    assert doc["jobs"][1]["exit_code"]["return_code"]["number"] == 1


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["-o", "jobid,bogus"], 'Invalid field requested: "bogus"'),
        (["-o", "mcslabel"], 'Invalid field requested: "mcslabel" (McsLabel is not kept by fsched)'),
        (["-j", "12.x"], "Bad job/step specified: 12.x"),
        (["-S", "whenever"], "Invalid time specification: whenever"),
        (["--units=Q"], "Invalid unit type"),
        (["--bogus"], "unrecognized option '--bogus'"),
        (["-Z"], "invalid option -- 'Z'"),
        (["-j"], "option requires an argument -- 'j'"),
    ],
)
def test_bad_input_is_refused_before_any_request(api, capsys, args, words):
    code, _, err = run(capsys, *args)
    assert code == 1 and words in err
    assert not api.requests


def test_the_api_s_refusal_is_printed(api, capsys):
    api.routes[("GET", URL)] = (400, {"error": "Invalid partition name specified"})
    code, _, err = run(capsys, "-r", "nosuch")
    assert code == 1 and "sacct: error: Invalid partition name specified" in err


@pytest.mark.parametrize(
    ("words", "fatal"),
    [
        ("XX", "unrecognized job state value 'XX'"),
        ("r,bogus", "unrecognized job state value 'bogus'"),
        ("cg", "job state cg is not supported / accounted"),
        ("SPECIAL_EXIT", "job state SPECIAL_EXIT is not supported / accounted"),
    ],
)
def test_a_state_sacct_does_not_account_is_fatal_before_the_header(api, capsys, words, fatal):
    """src/sacct/options.c, _addto_state_char_list_internal: fatal() while the options are
    read, so nothing is printed on stdout and nothing asked."""
    code, out, err = run(capsys, "-s", words)
    assert (code, out, err) == (1, "", f"sacct: fatal: {fatal}\n")
    assert not api.requests


def test_states_no_job_is_ever_in_are_valid_and_match_nothing(api, capsys):
    api.routes[("GET", URL)] = (200, {"jobs": [job(4, "COMPLETED")], "next": None})
    code, out, _ = run(capsys, "-s", "RS,rv", "-n")
    assert (code, out) == (0, "")
    assert not api.requests
    run(capsys, "-s", "cd,rv", "-n")
    assert "state=COMPLETED&" in api.requests[-1]["query"]


def test_field_names_are_prefixes_in_slurm_s_order():
    names = [c.name for c in sacct_fields.parse_fields("jobid,elap,st,ncpus,time,alloccpus%3")]
    assert names == ["JobID", "Elapsed", "Start", "NCPUS", "Timelimit", "AllocCPUS"]


def test_exit_and_time_texts():
    assert sacct_fields.exit_text(143, 0) == "15:0"
    assert sacct_fields.exit_text(0, 9) == "0:9"
    assert sacct_fields.secs_text(86400) == "1-00:00:00"
    assert sacct_fields.cpu_text(3725) == "01:02:05"
    assert sacct_fields.cpu_text(59) == "00:00:59"


def test_an_array_s_tasks_that_never_started_print_as_one_line(api, capsys):
    tasks = [job(200, "COMPLETED", array_job_id=200, array_task_id=1)] + [
        job(200 + t, "PENDING", ran=False, end_time=None, array_job_id=200, array_task_id=t)
        for t in (2, 3, 4, 7)
    ]
    api.routes[("GET", URL)] = (200, {"jobs": tasks, "next": None})
    _, out, _ = run(capsys, "-P", "-n", "-j", "200", "-o", "jobid,state")
    assert out.splitlines() == ["200_1|COMPLETED", "200_1.batch|COMPLETED", "200_[2-4,7]|PENDING"]


def test_name_and_qos_become_query_parameters(api, capsys):
    """sacct --name=list and -q/--qos=list (sacct(1)); both were unrecognized options."""
    api.routes[("GET", URL)] = (200, {"jobs": [], "next": None})
    code, _, _ = run(capsys, "--name=prep,solve", "-q", "high", "--qos=low", "-X")
    assert code == 0
    query = api.requests[-1]["query"]
    assert "name=prep%2Csolve" in query or "name=prep,solve" in query
    assert "qos=high%2Clow" in query or "qos=high,low" in query


def test_uid_gid_and_group_of_the_job_s_user_on_this_host(api, capsys):
    """UID, GID and Group (were "not kept by fsched"): the user's ids on this host, on the
    job's line only, as sacct prints them (src/sacct/print.c: steps leave them empty)."""
    import grp
    import os
    import pwd

    me = pwd.getpwuid(os.getuid())
    rows = [job(4, "COMPLETED", user=me.pw_name), job(5, "COMPLETED", user="no-such-user-here")]
    api.routes[("GET", URL)] = (200, {"jobs": rows, "next": None})
    code, out, _ = run(capsys, "-j", "4,5", "-P", "-n", "-o", "jobid,uid,gid,group")
    assert code == 0
    group = grp.getgrgid(me.pw_gid).gr_name
    assert out.splitlines() == [f"4|{me.pw_uid}|{me.pw_gid}|{group}", "4.batch|||", "5|||", "5.batch|||"]


def test_nodelist_is_sent_whole(api, capsys):
    api.routes[("GET", URL)] = (200, {"jobs": [], "next": None})
    assert run(capsys, "-N", "node[01-03],node07", "-X")[0] == 0
    from urllib.parse import parse_qs

    assert parse_qs(api.requests[-1]["query"])["nodelist"] == ["node[01-03],node07"]
