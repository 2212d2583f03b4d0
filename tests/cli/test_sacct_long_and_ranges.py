"""sacct's -l, -T, -D, -i/-I and -k/-K (src/sacct/options.c): the long field list, the
window's cut of start and end, and the range filters read as libslurm reads them; then the
same options against the real controller's API."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs

import pytest

from cli import sacct_ranges, sacct_truncate
from cli.main import main
from tests.cli.test_sacct import HISTORY, URL, job


@pytest.fixture
def history(api):
    api.routes[("GET", URL)] = (200, {"jobs": HISTORY, "next": None})
    return api


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["fsched", "sacct", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


# ------------------------------------------------------------------ -l


def test_long_prints_sacct_s_long_fields_unkept_ones_empty(history, capsys):
    code, out, err = run(capsys, "-l", "-P", "-j", "107")
    assert code == 0, err
    header, *lines = out.splitlines()
    job_line, step_line = [line for line in lines if line.startswith("107")]
    names = header.split("|")
    assert len(names) == 54
    assert names[:5] == ["JobID", "JobIDRaw", "JobName", "Partition", "MaxVMSize"]
    assert names[20:25] == ["NTasks", "AllocCPUS", "Elapsed", "State", "ExitCode"]
    assert names[-3:] == ["TRESUsageOutMaxTask", "TRESUsageOutAve", "TRESUsageOutTot"]
    step = dict(zip(names, step_line.split("|"), strict=True))
    assert (step["JobID"], step["MaxRSS"], step["NTasks"], step["State"]) == (
        "107.batch",
        "1500M",
        "1",
        "OUT_OF_MEMORY",
    )
    assert step["MaxVMSize"] == step["AveCPU"] == step["TRESUsageInAve"] == ""
    row = dict(zip(names, job_line.split("|"), strict=True))
    assert (row["ReqMem"], row["ReqTRES"], row["Elapsed"]) == (
        "4000M",
        "billing=2,cpu=2,mem=4000M,node=1",
        "00:00:05",
    )


def test_long_columns_keep_slurm_s_widths_and_brief_comes_first(history, capsys):
    _, out, _ = run(capsys, "-l", "-b", "-X", "-j", "101")
    header = out.splitlines()[0].split()
    assert header[:4] == ["JobID", "State", "ExitCode", "JobID"]
    assert header[-3:] == ["TRESUsageOutMaxTask", "TRESUsageOutAve", "TRESUsageOutTot"]
    _, out, _ = run(capsys, "-l", "-X", "-j", "101")
    assert out.splitlines()[1].split(" ")[:5] == ["-" * 12, "-" * 12, "-" * 10, "-" * 10, "-" * 10]


def test_long_and_format_together_are_refused(history, capsys):
    code, out, err = run(capsys, "-l", "-o", "jobid")
    assert (code, out) == (1, "")
    assert err == (
        "sacct: fatal: Options -o(--format) and -l(--long) are mutually exclusive."
        " Please remove one and retry.\n"
    )
    assert history.requests == []


def test_long_ignores_sacct_format_as_sacct_does(history, capsys, monkeypatch):
    monkeypatch.setenv("SACCT_FORMAT", "jobid,state")
    _, out, _ = run(capsys, "--long", "-P", "-n", "-X", "-j", "101")
    assert len(out.splitlines()[0].split("|")) == 54


def test_the_long_fields_fsched_does_not_keep_resolve_by_prefix_and_are_refused_in_format(history, capsys):
    code, _, err = run(capsys, "-o", "reqcpufreqmi")
    assert code == 1
    assert err == (
        'sacct: error: Invalid field requested: "reqcpufreqmi" (ReqCPUFreqMin is not kept by fsched)\n'
    )


# ------------------------------------------------------------------ -D


def test_duplicates_lists_jobs_never_requeued_the_same(history, capsys):
    _, plain, _ = run(capsys, "-P", "-j", "101,102")
    code, dup, _ = run(capsys, "-D", "-P", "-j", "101,102")
    assert code == 0 and dup == plain
    code, _, _ = run(capsys, "--duplicates", "-P")
    assert code == 0


# ------------------------------------------------------------------ -T

START = int(datetime(2026, 3, 1, 12, 0, 12, tzinfo=UTC).timestamp())
END = int(datetime(2026, 3, 1, 12, 30, tzinfo=UTC).timestamp())


def test_truncate_cuts_start_and_end_to_the_window():
    done = job(104, "TIMEOUT", elapsed=3600, end_time="2026-03-01T13:00:10+00:00", step={"elapsed": 3600})
    cut = sacct_truncate.truncated(done, START, END)
    assert (cut["start_time"], cut["end_time"], cut["elapsed"]) == (
        "2026-03-01T12:00:12+00:00",
        "2026-03-01T12:30:00+00:00",
        1788,
    )
    [step] = cut["steps"]
    assert (step["start_time"], step["end_time"], step["elapsed"]) == (
        "2026-03-01T12:00:12+00:00",
        "2026-03-01T12:30:00+00:00",
        1788,
    )
    # Never started: starts when it (and the window) ends.
    waiting = sacct_truncate.truncated(job(105, "PENDING", ran=False, end_time=None), START, END)
    assert waiting["start_time"] == waiting["end_time"] == "2026-03-01T12:30:00+00:00"
    assert waiting["elapsed"] == 0
    # No window start (-j alone): the job is cut at the end only, its steps not at all.
    running = job(106, "RUNNING", end_time=None, elapsed=90061, step={"end_time": None})
    cut = sacct_truncate.truncated(running, 0, END)
    assert (cut["start_time"], cut["end_time"]) == ("2026-03-01T12:00:10+00:00", "2026-03-01T12:30:00+00:00")
    assert cut["elapsed"] == 1790 and cut["steps"][0]["end_time"] is None


def test_a_step_that_ends_before_the_window_starts_has_no_times():
    early = job(101, "COMPLETED", step={"end_time": "2026-03-01T12:00:11+00:00"})
    [step] = sacct_truncate.truncated(early, START, END)["steps"]
    assert (step["start_time"], step["end_time"], step["elapsed"]) == (None, None, 0)


def test_the_window_ends_at_now_when_later():
    assert sacct_truncate.window_end(None, 500) == 500
    assert sacct_truncate.window_end(900, 500) == 500
    assert sacct_truncate.window_end(400, 500) == 400


def test_an_array_s_tasks_that_never_started_stay_one_line_when_cut(api, capsys):
    tasks = [
        job(200 + t, "PENDING", ran=False, end_time=None, array_job_id=200, array_task_id=t) for t in range(3)
    ]
    api.routes[("GET", URL)] = (200, {"jobs": tasks, "next": None})
    code, out, _ = run(capsys, "-T", "-P", "-n", "-X", "-S", "2026-03-01T12:00:12", "-o", "jobid,state")
    assert (code, out) == (0, "200_[0-2]|PENDING\n")


def test_truncate_option_prints_the_cut_times(history, capsys):
    start = "2026-03-01T12:00:12"
    code, out, err = run(
        capsys,
        "-T",
        "-P",
        "-n",
        "-X",
        "-S",
        start,
        "-E",
        "2026-03-01T12:30:00",
        "-o",
        "jobid,start,end,elapsed",
    )
    assert code == 0, err
    lines = out.splitlines()
    assert "104|2026-03-01T12:00:12|2026-03-01T12:30:00|00:29:48" in lines
    assert "105|2026-03-01T12:30:00|2026-03-01T12:30:00|00:00:00" in lines
    _, out, _ = run(
        capsys, "-P", "-n", "-X", "-S", start, "-E", "2026-03-01T12:30:00", "-o", "jobid,start,end"
    )
    assert "104|2026-03-01T12:00:10|2026-03-01T13:00:10" in out.splitlines()


# ------------------------------------------------------------------ -i / -I


@pytest.mark.parametrize(
    ("arg", "expected"),
    [
        ("4", (4, None)),
        ("2-8", (2, 8)),
        ("", (1, sacct_ranges.INT_MAX)),
        ("*", (1, sacct_ranges.INT_MAX)),
        ("1k", (1024, None)),
        ("1-2m", (1, 2097152)),
        (" +3", (3, None)),
        ("8-2", (8, 2)),
        ("0", (0, None)),
    ],
)
def test_resource_ranges_read_as_get_resource_arg_range(arg, expected):
    assert sacct_ranges.resource_range(arg, "requested node range") == expected


@pytest.mark.parametrize(
    ("arg", "message"),
    [
        ("two", 'Invalid numeric value "two" for requested node range.'),
        ("-2", 'Invalid numeric value "-2" for requested node range.'),
        ("2-", 'Invalid numeric value "2-" for requested node range.'),
        ("2-0", 'Invalid numeric value "2-0" for requested node range.'),
        ("2x", 'Invalid numeric value "2x" for requested node range.'),
        ("3000000000", "Numeric argument (3000000000) too large for requested node range."),
        ("1-9999m", "Numeric argument (10484711424) too large for requested node range."),
    ],
)
def test_bad_resource_ranges_have_libslurm_s_words(arg, message):
    with pytest.raises(sacct_ranges.RangeError) as caught:
        sacct_ranges.resource_range(arg, "requested node range")
    assert str(caught.value) == message


def test_ranges_go_to_the_api_as_slurmdbd_filters(history, capsys):
    run(capsys, "-i", "2", "--ncpus=4-16", "-j", "1")
    query = parse_qs(history.requests[-1]["query"])
    assert (query["nnodes"], query["ncpus"]) == (["2"], ["4-16"])
    # A minimum of 0 filters nothing; a later -i keeps the earlier maximum.
    run(capsys, "-i", "0-5", "-I", "2-8", "-I", "3", "-j", "1")
    query = parse_qs(history.requests[-1]["query"])
    assert "nnodes" not in query and query["ncpus"] == ["3-8"]


def test_a_bad_range_is_refused_before_any_request(history, capsys):
    code, out, err = run(capsys, "-I", "lots")
    assert (code, out) == (1, "")
    assert err == 'sacct: error: Invalid numeric value "lots" for requested cpu range.\n'
    assert history.requests == []


# ------------------------------------------------------------------ -k / -K


def test_time_limit_filters(history, capsys):
    run(capsys, "-k", "30", "-j", "1")
    assert parse_qs(history.requests[-1]["query"])["timelimit"] == ["30"]
    run(capsys, "--timelimit-min=0:30", "--timelimit-max", "1-00:00:00", "-j", "1")
    assert parse_qs(history.requests[-1]["query"])["timelimit"] == ["1-1440"]
    run(capsys, "-k", "2:00:00", "-K", "UNLIMITED", "-j", "1")
    assert parse_qs(history.requests[-1]["query"])["timelimit"] == ["120-UNLIMITED"]
    # -K without -k: slurmdbd filters nothing.
    run(capsys, "-K", "60", "-j", "1")
    assert "timelimit" not in parse_qs(history.requests[-1]["query"])


@pytest.mark.parametrize("value", ["0", "soon", "-5"])
def test_a_bad_time_limit_is_fatal(history, capsys, value):
    code, out, err = run(capsys, "-K", value)
    assert (code, out, err) == (1, "", "sacct: fatal: Invalid time limit specification\n")
    assert history.requests == []


# ------------------------------------------------ against the real API


def test_the_options_against_the_controller(demo, live_cli):
    from django.utils import timezone

    from cluster.models import Job

    now = timezone.now().replace(microsecond=0)
    common = {
        "user": "alice",
        "account": "",
        "partition": "debug",
        "batch_host": "node01",
        "submit_time": now - timedelta(hours=2),
    }
    Job.objects.create(
        id=501,
        state="COMPLETED",
        node_list="node[01-02]",
        num_tasks=4,
        time_limit=30,
        start_time=now - timedelta(hours=2),
        end_time=now - timedelta(minutes=30),
        **common,
    )
    Job.objects.create(
        id=502,
        state="COMPLETED",
        node_list="node03",
        num_tasks=1,
        time_limit=None,
        start_time=now - timedelta(hours=1),
        end_time=now - timedelta(minutes=50),
        **common,
    )
    jobs = ("-j", "501,502", "-X", "-P", "-n")
    assert live_cli("alice", "sacct", *jobs, "-i", "2", "-o", "jobid")[1] == "501\n"
    assert live_cli("alice", "sacct", *jobs, "-I", "1-2", "-o", "jobid")[1] == "502\n"
    assert live_cli("alice", "sacct", *jobs, "-k", "30", "-o", "jobid")[1] == "501\n"
    assert live_cli("alice", "sacct", *jobs, "-k", "31", "-K", "unlimited", "-o", "jobid")[1] == "502\n"
    start = (now - timedelta(hours=1)).astimezone().strftime("%Y-%m-%dT%H:%M:%S")
    status, out, err = live_cli("alice", "sacct", *jobs, "-T", "-S", start, "-o", "jobid,elapsed")
    assert status == 0, err
    assert out.splitlines() == ["501|00:30:00", "502|00:10:00"]
    status, out, _ = live_cli("alice", "sacct", "-l", *jobs)
    assert status == 0 and len(out.splitlines()[0].split("|")) == 54


def test_truncate_cuts_the_json_document_s_times_too(history, capsys):
    import json

    code, out, _ = run(capsys, "--json", "-T", "-S", "2026-03-01T12:00:12", "-E", "2026-03-01T12:30:00")
    assert code == 0
    [timeout] = [j for j in json.loads(out)["jobs"] if j["job_id"] == 104]
    times = timeout["time"]
    assert (times["start"], times["end"], times["elapsed"]) == (START, END, 1788)
