"""sacct's -M/--clusters and -L (#16 acceptance: tools that drive Slurm). parsl's
SlurmProvider polls with ``sacct --clusters=NAME -X --noheader --format=jobid,state%20 --job
IDS`` when it is given a cluster; Slurm's sacct takes the names as a filter of its
database, so the local cluster's name lists its jobs and an unknown one lists none."""

from __future__ import annotations

import pytest

from cli import sacct_args
from cli.main import main

URL = "/api/accounting/jobs/"
JOB = {
    "job_id": 7, "array_job_id": None, "array_task_id": None, "name": "parsl.slurm", "user": "alice",
    "account": "", "partition": "debug", "qos": "normal", "state": "CANCELLED", "cancelled_by": 0,
    "reason": "None", "exit_code": 0, "exit_signal": 0, "submit_time": "2026-03-01T12:00:00+00:00",
    "eligible_time": "2026-03-01T12:00:00+00:00", "start_time": "2026-03-01T12:00:01+00:00",
    "end_time": "2026-03-01T12:00:09+00:00", "elapsed": 8, "time_limit": 5, "nnodes": 1,
    "alloc_cpus": 1, "req_cpus": 1, "req_mem_mb": 0, "alloc_tres": "", "req_tres": "",
    "node_list": "node01", "work_dir": "/tmp", "comment": "", "max_rss_kb": None,
    "total_cpu_secs": None, "steps": [],
}  # fmt: skip


@pytest.fixture
def accounting(api):
    api.routes[("GET", "/api/config/")] = (200, {"cluster_name": "demo", "options": {}})
    api.routes[("GET", URL)] = (200, {"jobs": [JOB], "next": None})
    return api


def sacct(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["fsched", "sacct", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_parsl_s_poll_with_its_cluster_reads_the_local_cluster_s_jobs(accounting, capsys):
    code, out, err = sacct(
        capsys, "--clusters=demo", "-X", "--noheader", "--format=jobid,state%20", "--job", "7"
    )
    assert (code, err) == (0, "")
    assert out == f"{'7':<12} {'CANCELLED by 0':>20} \n"  # JobID's 12, state%20 right-aligned
    assert out.split()[:2] == ["7", "CANCELLED"]  # what parsl reads of the line


@pytest.mark.parametrize(
    "args", [["-M", "DEMO"], ["-M", "other,demo"], ["--cluster", "all"], ["-L"], ["-M", "-1"]]
)
def test_the_local_cluster_among_the_names_or_all(accounting, capsys, args):
    code, out, _ = sacct(capsys, *args, "-P", "-n", "-j", "7", "-o", "jobid")
    assert (code, out) == (0, "7\n")


def test_only_other_clusters_named_lists_no_job_and_is_no_error(accounting, capsys):
    code, out, err = sacct(capsys, "-M", "other", "-P", "-j", "7", "-o", "jobid,state")
    assert (code, out, err) == (0, "JobID|State\n", "")
    assert URL not in [r["path"] for r in accounting.requests]
    code, out, _ = sacct(capsys, "-M", "other", "--json", "-j", "7")
    assert code == 0 and '"jobs": []' in out


def test_clusters_add_up_when_repeated_and_no_name_asks_nothing_more(accounting, capsys):
    assert sacct_args.parse(["-M", "a", "--clusters=b,c"])["clusters"] == ["a", "b,c"]
    sacct(capsys, "-P", "-n", "-j", "7")
    assert "/api/config/" not in [r["path"] for r in accounting.requests]
