"""squeue ``-O`` fields no ``-o`` letter prints (STDOUT, STDERR, STDIN, EXIT_CODE, ...):
scripts ask for them by name (``squeue -O jobid,stdout``), and fsched refused them as
unknown.  Headers and values as src/squeue/print.c prints them (23.11)."""

from __future__ import annotations

import pytest

from cli.fmt import slurm_time
from cli.squeue import format_jobs
from cli.squeue_long_format import to_format
from tests.cli.conftest import make_job, pending


def lines(fields: str, *jobs: dict) -> list[str]:
    return [line.rstrip() for line in format_jobs(list(jobs), to_format(fields), sort=None)]


def test_the_output_paths_and_slurm_s_defaults():
    ran = make_job(job_id=12, std_out="/w/out-12.txt", std_err="", std_in="/dev/null")
    own = make_job(job_id=13, std_out="", std_err="/w/err", work_dir="/w")
    alloc = make_job(job_id=14, batch=False, std_out="", std_err="", work_dir="/h")
    assert lines("jobid:5,stdout:20,stderr:20,stdin", ran, own, alloc) == [
        "JOBIDSTDOUT              STDERR              STDIN",
        "12   /w/out-12.txt       /w/out-12.txt       /dev/null",
        "13   /w/slurm-13.out     /w/err              /dev/null",
        "14   /h/slurm-14.out     N/A                 /dev/null",
    ]


def test_counts_flags_and_times():
    job = pending(
        job_id=7, exit_code="0:0", restart_count=2, num_tasks=8, cpus_per_task=2, max_nodes=None,
        min_nodes=3, requeue=True, batch=True, eligible_time=None, deadline=None,
    )  # fmt: skip
    header, row = lines(
        "exit_code:.10,restartcnt:.14,numtasks:.6,cpus-per-task:.14,maxnodes:.10,requeue:.8,"
        "batchflag:.11,eligibletime:.14,deadline:.9",
        job,
    )
    assert header == (
        " EXIT_CODE RESTART_COUNT TASKS CPUS_PER_TASK MAX_NODES REQUEUE BATCH_FLAG ELIGIBLE_TIME DEADLINE"
    )
    assert row.split() == ["0:0", "2", "8", "2", "3", "1", "1", "N/A", "N/A"]


@pytest.mark.parametrize("name", ["StdOut", "STDERR", "stdin", "Exit_Code", "cpuspertask", "NumTask"])
def test_names_are_matched_without_regard_to_case(name):
    assert to_format(name)


def test_an_unknown_name_is_still_refused():
    with pytest.raises(ValueError, match="Invalid job format specification: ExitCode"):
        to_format("jobid,ExitCode")


def test_requests_fsched_jobs_cannot_make_print_as_not_set():
    """%H %I %J %z %O %X %d (and their -O names): squeue's "*", 0 and N/A of a job that
    asked for no sockets, cores, threads, contiguity, core specialisation or tmp disk."""
    header, row = lines(
        "sockets:.17,cores:.17,threads:.17,sct:.6,contiguous:.11,corespec:.10,mintmpdisk:.13", make_job()
    )
    assert header.split() == [
        "SOCKETS_PER_NODE", "CORES_PER_SOCKET", "THREADS_PER_CORE", "S:C:T", "CONTIGUOUS", "CORE_SPEC",
        "MIN_TMP_DISK",
    ]  # fmt: skip
    assert row.split() == ["*", "*", "*", "*:*:*", "0", "N/A", "0"]


def test_user_and_group_ids_from_this_host():
    import grp
    import os
    import pwd

    me = pwd.getpwuid(os.getuid())
    job = make_job(user=me.pw_name)
    assert format_jobs([job], "%U|%g|%G|%u", header=False, sort=None) == [
        f"{me.pw_uid}|{grp.getgrgid(me.pw_gid).gr_name}|{me.pw_gid}|{me.pw_name}"
    ]
    assert format_jobs([make_job(user="no-such-user-here")], "%U|%g|%G", header=False, sort=None) == [
        "(null)|(null)|(null)"
    ]
    assert to_format("userid,groupname,groupid") == "%20U%20g%20G"


def test_accrue_last_eval_pending_time_time_min_tres_and_alloc_host():
    ran = make_job(
        job_id=21, eligible_time="2020-01-01T10:00:00+00:00", last_sched_eval="2020-01-01T10:00:05+00:00",
        submit_time="2020-01-01T09:59:00+00:00", start_time="2020-01-01T10:00:05+00:00", time_min=90,
        tres="cpu=2,mem=100M,node=1,billing=2", alloc_sid=4242, alloc_node="login1",
    )  # fmt: skip
    later = "2999-01-01T00:00:00+00:00"
    waiting = pending(job_id=22, eligible_time=later, last_sched_eval=None, time_min=None)
    header, first, second = lines(
        "jobid:3,accruetime:20,lastschedeval:20,pendingtime:.13,mintime:.9,tres:.33,allocsid:.10,allocnodes:.12",
        ran,
        waiting,
    )
    assert header == (
        "JOBACCRUE_TIME         LAST_SCHED_EVAL      PENDING_TIME TIME_MIN" + " " * 23 + "TRES_ALLOC"
        " ALLOC_SID ALLOC_NODES"
    )
    assert first.split()[3:] == ["65", "01:30:00", "cpu=2,mem=100M,node=1,billing=2", "4242", "login1"]
    assert first.split()[1] == slurm_time("2020-01-01T10:00:00+00:00")
    assert second.split()[1:3] == ["N/A", "N/A"]  # eligible only later; never weighed
    assert second.split()[4] == "00:00:00"
