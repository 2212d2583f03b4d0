"""sprio and sdiag print the API's figures exactly as Slurm's commands lay them out
(#13 point 10); the figures themselves are checked against a real controller in
tests/e2e/test_sprio_sdiag_e2e.py and tests/cluster/test_diag_api.py."""

from __future__ import annotations

import pytest

from cli import sdiag, sprio
from cli.client import CliError
from cli.main import COMMANDS

WEIGHTS = {"age": 1000, "fairshare": 100000, "jobsize": 1000, "partition": 10000, "qos": 1, "tres": ""}


def job(job_id: int, user: str, partition: str, priority: int, **factors) -> dict:
    out = {
        "job_id": job_id,
        "user": user,
        "partition": partition,
        "priority": priority,
        "site": 0,
        "age": 0.0,
        "fairshare": 0.0,
        "jobsize": 0.0,
        "partition_factor": 0.0,
        "qos": 0.0,
        "tres": {},
        "nice": 0,
    }
    out.update(factors)
    return out


JOBS = [
    job(65539, "alice", "debug", 62664, age=1000.0, fairshare=51664.4, jobsize=0.4, partition_factor=10000),
    job(65540, "bob", "batch", 61664, age=0.3, fairshare=51664.4, partition_factor=10000),
]


def test_the_commands_are_registered():
    assert COMMANDS["sprio"] == "cli.sprio" and COMMANDS["sdiag"] == "cli.sdiag"


def test_sprio_default_columns_are_the_weighted_factors_with_a_weight():
    spec = sprio.default_format(WEIGHTS, long=False, norm=False, users=False)
    assert spec == "%.15i %9r %.10Y %.10S %.10A %.10F %.10J %.10P %.10Q"
    assert sprio.render(JOBS, WEIGHTS, spec, header=True, show_weights=False).splitlines() == [
        "          JOBID PARTITION   PRIORITY       SITE        AGE  FAIRSHARE    JOBSIZE  PARTITION        QOS",  # noqa: E501 - one line of sprio
        "          65539 debug          62664          0       1000      51664          0      10000          0",  # noqa: E501 - one line of sprio
        "          65540 batch          61664          0          0      51664          0      10000          0",  # noqa: E501 - one line of sprio
    ]
    # A weight of 0 drops its column, and -u adds USER.
    spec = sprio.default_format({**WEIGHTS, "qos": 0, "jobsize": 0}, long=False, norm=False, users=True)
    assert spec == "%.15i %9r %.8u %.10Y %.10S %.10A %.10F %.10P"


def test_sprio_weights_row():
    spec = sprio.default_format(WEIGHTS, long=False, norm=False, users=False)
    assert sprio.render(JOBS, WEIGHTS, spec, header=True, show_weights=True).splitlines() == [
        "          JOBID PARTITION   PRIORITY       SITE        AGE  FAIRSHARE    JOBSIZE  PARTITION        QOS",  # noqa: E501 - one line of sprio
        "        Weights                               1       1000     100000       1000      10000          1",  # noqa: E501 - one line of sprio
    ]


def test_sprio_long_and_normalized():
    long = sprio.render(JOBS[:1], WEIGHTS, sprio.LONG, header=True, show_weights=False).splitlines()
    assert long[0].split() == [
        "JOBID", "PARTITION", "USER", "PRIORITY", "SITE", "AGE", "ASSOC", "FAIRSHARE", "JOBSIZE",
        "PARTITION", "QOS", "NICE", "TRES",
    ]  # fmt: skip
    assert long[1].rstrip() == (
        "          65539 debug        alice      62664          0       1000          0      51664"
        "          0      10000          0           0"
    )
    spec = sprio.default_format(WEIGHTS, long=False, norm=True, users=False)
    assert spec == "%.15i %9r %10y %10a %10f %10j %10p %10q"
    assert sprio.render(JOBS[:1], WEIGHTS, spec, header=False, show_weights=False) == (
        "          65539 debug     0.00001459 1.0000000  0.5166440  0.0004000  1.0000000  0.0000000 \n"
    )


def test_sprio_format_and_sort():
    assert sprio.render(
        sprio.sort_jobs(JOBS, "-a"), WEIGHTS, "%i|%u|%A", header=False, show_weights=False
    ) == ("65539|alice|1000\n65540|bob|0\n")
    assert [j["job_id"] for j in sprio.sort_jobs(JOBS, "y")] == [65540, 65539]
    assert [j["job_id"] for j in sprio.sort_jobs(JOBS, "r,-i")] == [65540, 65539]
    with pytest.raises(CliError, match="Invalid job format specification: z"):
        sprio.render(JOBS, WEIGHTS, "%i %z", header=True, show_weights=False)
    with pytest.raises(CliError, match="Invalid sort specification: z"):
        sprio.sort_jobs(JOBS, "z")


def test_sprio_tres_columns():
    weights = {**WEIGHTS, "tres": "cpu=2000,mem=1000"}
    tres_job = job(7, "alice", "debug", 900, tres={"cpu": 500.0, "mem": 0.0})
    assert (
        sprio.render([tres_job], weights, "%T|%t", header=False, show_weights=False) == "cpu=500|cpu=0.25\n"
    )
    assert sprio.render([], weights, "%T|%t", header=False, show_weights=True) == "cpu=2000,mem=1000|\n"


def test_sprio_bad_job_id_is_refused_before_asking(capsys):
    from cli.main import main

    assert main(["fsched", "sprio", "-j", "12,abc"]) == 1
    assert capsys.readouterr().err == "sprio: error: Invalid job id: abc\n"


STATS = {
    "req_time": "2026-03-02T10:00:30Z",
    "req_time_start": "2026-03-02T00:00:00Z",
    "server_thread_count": 2,
    "agent_queue_size": 1,
    "dbd_agent_queue_size": 0,
    "jobs": {"submitted": 12, "started": 10, "completed": 8, "canceled": 1, "failed": 0},
    "job_states_ts": "2026-03-02T10:00:30Z",
    "jobs_pending": 2,
    "jobs_running": 2,
    "schedule": {
        "cycle_last": 1500,
        "cycle_max": 9000,
        "cycle_counter": 3000,
        "cycle_sum": 6000000,
        "cycle_depth": 9000,
    },
    "backfill": {
        "backfilled_jobs": 3,
        "backfilled_het_jobs": 0,
        "cycle_counter": 20,
        "last_cycle_when": "2026-03-02T10:00:00Z",
        "cycle_last": 4000,
        "cycle_max": 8000,
        "cycle_sum": 100000,
        "last_depth": 2,
        "last_depth_try": 1,
        "depth_sum": 50,
        "depth_try_sum": 30,
        "queue_len": 2,
        "queue_len_sum": 50,
    },
    "gettimeofday_latency": 40,
}


def test_sdiag_report_is_laid_out_as_slurms():
    assert sdiag.render(STATS) == (
        "*******************************************************\n"
        "sdiag output at Mon Mar 02 10:00:30 2026 (1772445630)\n"
        "Data since      Mon Mar 02 00:00:00 2026 (1772409600)\n"
        "*******************************************************\n"
        "Server thread count:  2\n"
        "Agent queue size:     1\n"
        "DBD Agent queue size: 0\n"
        "\n"
        "Jobs submitted: 12\n"
        "Jobs started:   10\n"
        "Jobs completed: 8\n"
        "Jobs canceled:  1\n"
        "Jobs failed:    0\n"
        "\n"
        "Job states ts:  Mon Mar 02 10:00:30 2026 (1772445630)\n"
        "Jobs pending:   2\n"
        "Jobs running:   2\n"
        "\n"
        "Main schedule statistics (microseconds):\n"
        "\tLast cycle:   1500\n"
        "\tMax cycle:    9000\n"
        "\tTotal cycles: 3000\n"
        "\tMean cycle:   2000\n"
        "\tMean depth cycle:  3\n"
        "\tCycles per minute: 5\n"
        "\n"
        "Backfilling stats\n"
        "\tTotal backfilled jobs (since last stats cycle start): 3\n"
        "\tTotal backfilled heterogeneous job components: 0\n"
        "\tTotal cycles: 20\n"
        "\tLast cycle when: Mon Mar 02 10:00:00 2026 (1772445600)\n"
        "\tLast cycle: 4000\n"
        "\tMax cycle:  8000\n"
        "\tMean cycle: 5000\n"
        "\tLast depth cycle: 2\n"
        "\tLast depth cycle (try sched): 1\n"
        "\tDepth Mean: 2\n"
        "\tDepth Mean (try depth): 1\n"
        "\tLast queue length: 2\n"
        "\tQueue length mean: 2\n"
        "\n"
        "Latency for 1000 calls to gettimeofday(): 40 microseconds\n"
    )


def test_sdiag_without_cycles_prints_no_means():
    empty = {
        **STATS,
        "req_time": "2026-03-02T00:00:30Z",
        "schedule": {"cycle_last": 0, "cycle_max": 0, "cycle_counter": 0, "cycle_sum": 0, "cycle_depth": 0},
        "backfill": {**STATS["backfill"], "cycle_counter": 0, "last_cycle_when": None},
    }
    text = sdiag.render(empty)
    assert "Mean" not in text and "Cycles per minute" not in text and "Queue length mean" not in text
    assert "\tLast cycle when: N/A\n" in text


def test_sdiag_reset_denied_is_worded_as_slurm_perror(api, capsys):
    from cli.main import main

    api.routes[("POST", "/api/diag/reset/")] = (403, {"error": "Access/permission denied"})
    assert main(["fsched", "sdiag", "-r"]) == 1
    assert capsys.readouterr() == ("", "slurm_reset_statistics: Access/permission denied\n")
    api.routes[("POST", "/api/diag/reset/")] = (200, {"message": "Reset scheduling statistics", "since": "x"})
    assert main(["fsched", "sdiag", "--reset"]) == 0
    assert capsys.readouterr().out == "Reset scheduling statistics\n"


def test_sprio_under_priority_basic_says_so_as_slurm_does(api, capsys):
    from cli.main import main

    basic = {"priority_type": "priority/basic", "weights": None, "jobs": []}
    api.routes[("GET", "/api/priority/")] = (200, basic)
    assert main(["fsched", "sprio"]) == 1
    assert capsys.readouterr() == (
        "",
        "You are not running a supported priority plugin\n(priority/basic).\n"
        "Only 'priority/multifactor' is supported.\n",
    )


def test_sprio_sends_its_filters(api, capsys):
    from cli.main import main

    api.routes[("GET", "/api/priority/")] = (
        200,
        {"priority_type": "priority/multifactor", "weights": WEIGHTS, "jobs": JOBS[1:]},
    )
    assert main(["fsched", "sprio", "-j", "65540", "-u", "bob", "-p", "batch", "-h", "-o", "%i %u"]) == 0
    assert capsys.readouterr().out == "65540 bob\n"
    query = api.requests[-1]["query"]
    assert "job_id=65540" in query and "user=bob" in query and "partition=batch" in query
    # -j 65540 names the jobs as -j65540 does.
    assert main(["fsched", "sprio", "-h", "-o", "%i", "-j", "65540"]) == 0
    assert "job_id=65540" in api.requests[-1]["query"]
