"""sstat's fields, units, options and step choice (cli/sstat.py, slurmwords/sstat_fields.py), on
the API's answers as cluster/api/step_usage.py gives them."""

from __future__ import annotations

import pytest

from cli import sstat
from slurmwords import sstat_fields


def task(n: int, rss_kb: int, max_rss_kb: int, cpu: float, **more) -> dict:
    base = {"task": n, "pids": [100 + n], "rss_kb": rss_kb, "max_rss_kb": max_rss_kb, "vmem_kb": 4 * rss_kb,
            "max_vmem_kb": 4 * max_rss_kb, "pages": n, "max_pages": n, "cpu_secs": cpu, "read_bytes": None,
            "max_read_bytes": None, "write_bytes": None, "max_write_bytes": None}  # fmt: skip
    return {**base, **more}


STEP0 = {
    "step": "0",
    "node_list": "node[01-02]",
    "ntasks": 3,
    "nodes": [
        {"node": "node02", "sampled_at": "", "tasks": [task(2, 1024, 3072, 30.0)]},
        {"node": "node01", "sampled_at": "",
         "tasks": [task(0, 1024, 102400, 65.0), task(1, 2048, 2048, 3700.0)]},
    ],
}
BATCH = {"step": "batch", "node_list": "node01", "ntasks": 1,
         "nodes": [{"node": "node01", "sampled_at": "", "tasks": [task(0, 512, 512, 0.4)]}]}  # fmt: skip


@pytest.mark.parametrize(
    ("value", "noconvert", "text"),
    [(0, False, "0"), (1023, False, "1023"), (1024, False, "1K"), (2560, False, "2.50K"),
     (104857600, False, "100M"), (104857600, True, "104857600"), (136567466, False, "136567466"),
     (1536 * 1024 * 1024, False, "1.50G")],
)  # fmt: skip
def test_sizes_convert_as_slurms_exact_conversion(value, noconvert, text) -> None:
    assert sstat_fields.convert_num(value, noconvert=noconvert) == text


def test_cpu_times_and_small_doubles_print_as_sstat_prints_them() -> None:
    assert [sstat_fields.elapsed(ms) for ms in (400, 65000, 3_723_000, 90_061_000)] == [
        "00:00:00", "00:01:05", "01:02:03", "1-01:01:01",
    ]  # fmt: skip
    assert [sstat_fields.small_double(v, noconvert=False) for v in (0, 1, 2048)] == ["0", "1.00M", "2K"]


def test_a_steps_figures_add_up_over_nodes_and_tasks_as_slurms() -> None:
    s = sstat_fields.step_stats(12, STEP0)
    cols = sstat_fields.parse_fields(
        "jobid,maxrss,maxrssnode,maxrsstask,averss,mincpu,mincpunode,mincputask,avecpu,ntasks,nodelist,pids"
    )
    line = sstat_fields.line(cols, s, "P", sstat_fields.Options())
    # MaxRSS the largest task peak; AveRSS the tasks' current RSS over 3 tasks, in bytes when
    # no unit divides it exactly (Slurm's exact conversion); MinCPU the
    # smallest task; AveCPU (65 + 3700 + 30) / 3 s.
    assert line == "12.0|100M|node01|0|1398101|00:00:30|node02|2|00:21:05|3|node[01-02]|100,101,102\n"
    tres = sstat_fields.parse_fields("tresusageinmax,tresusageinmaxnode,tresusageinmaxtask,tresusageoutave")
    assert sstat_fields.line(tres, s, "P", sstat_fields.Options()) == (
        "cpu=01:01:40,energy=0,mem=100M,pages=2,vmem=400M|"
        "cpu=node01,energy=node01,mem=node01,pages=node02,vmem=node01|"
        "cpu=00:00:00,mem=0,pages=2,vmem=0|energy=0\n"
    )


def test_ave_cpu_freq_is_the_tasks_mean_from_kilo_by_1000() -> None:
    tasks = [task(0, 1, 1, 1.0, cpu_freq=2596), task(1, 1, 1, 1.0, cpu_freq=2600)]
    step = {**BATCH, "nodes": [{"node": "node01", "sampled_at": "", "tasks": tasks}]}
    cols = sstat_fields.parse_fields("avecpufreq")
    s = sstat_fields.step_stats(12, step)
    assert sstat_fields.line(cols, s, "P", sstat_fields.Options()) == "2.60M\n"
    assert sstat_fields.line(cols, s, "P", sstat_fields.Options(noconvert=True)) == "2598K\n"
    assert sstat_fields.line(cols, sstat_fields.step_stats(12, BATCH), "P", sstat_fields.Options()) == "\n"


def test_fields_are_prefixes_with_widths_and_unknown_ones_are_refused() -> None:
    cols = sstat_fields.parse_fields("JOBID%-20,maxrss,avec%5,ntasks%0")
    assert [(c.name, c.width) for c in cols] == [("JobID", -20), ("MaxRSS", 10), ("AveCPU", 5), ("NTasks", 8)]
    with pytest.raises(sstat_fields.FieldError, match='Invalid field requested: "state"'):
        sstat_fields.parse_fields("jobid,state")
    assert sstat_fields.header(cols[:2], None) == (
        "JobID                    MaxRSS \n-------------------- ---------- \n"
    )
    assert sstat_fields.header(cols[:2], "p") == "JobID|MaxRSS|\n"
    # A value wider than its column ends in '+', as print_fields_str cuts it.
    s = sstat_fields.step_stats(12, STEP0)
    narrow = sstat_fields.parse_fields("nodelist%6")
    assert sstat_fields.line(narrow, s, None, sstat_fields.Options()) == "node[+ \n"


def test_helpformat_lists_the_fields_four_to_a_line() -> None:
    text = sstat_fields.help_fields()
    first = "AveCPU              AveCPUFreq          AveDiskRead         AveDiskWrite       \n"
    assert text.startswith(first)
    assert text.endswith("TRESUsageOutTot    \n")


@pytest.mark.parametrize(
    ("words", "jobs"),
    [(["12"], [(12, None)]), (["12.3,12.batch", "12.3"], [(12, "3"), (12, "batch")]),
     (["7.extern"], [(7, "extern")]), (["12abc"], [(12, None)]), (["12_3.batch"], [(12, "batch")])],
)  # fmt: skip
def test_job_lists_read_as_slurm_parse_step_str(words, jobs) -> None:
    assert sstat.job_list(words) == jobs


@pytest.mark.parametrize(
    ("word", "message"),
    [("abc", "Bad job/step specified: abc"), ("12.x", "Bad step specified: 12"),
     ("12_x", "Bad job array element specified: 12")],
)  # fmt: skip
def test_job_ids_that_do_not_read_are_fatal(word, message) -> None:
    with pytest.raises(sstat.Fatal, match=message):
        sstat.parse_step(word)


def test_the_step_chosen_is_sstats() -> None:
    steps = [BATCH, {**STEP0, "step": "3"}, STEP0]
    assert [s["step"] for s in sstat.selected(steps, None, False)] == ["0"]  # lowest numbered
    assert [s["step"] for s in sstat.selected(steps, None, True)] == ["batch", "3", "0"]
    assert sstat.selected([BATCH], None, False) == []  # never the batch step unless asked
    assert sstat.selected(steps, "batch", False) == [BATCH]


def test_pidformat_prints_a_line_per_node_and_usage_errors_exit_1(api, capsys) -> None:
    answer = {"job_id": 12, "state": "RUNNING", "steps": [BATCH, STEP0]}
    api.routes[("GET", "/api/jobs/12/usage/")] = (200, answer)
    assert sstat.main(["-i", "-P", "-j", "12"]) == 0
    out, err = capsys.readouterr()
    assert (out, err) == ("JobID|Nodelist|Pids\n12.0|node01|100,101\n12.0|node02|102\n", "")
    assert sstat.main(["-n", "-o", "jobid,ntasks", "12.batch"]) == 0  # the job as a plain word
    assert capsys.readouterr().out == "12.batch            1 \n"
    assert sstat.main(["-o", "jobid"]) == 1
    assert capsys.readouterr().err == "sstat: error: You didn't give me any jobs to stat.\n"
    assert sstat.main(["-j", "1", "-o", "jobid,nope"]) == 1
    assert capsys.readouterr().err == 'sstat: error: Invalid field requested: "nope"\n'
    assert sstat.main(["-j", "x1"]) == 1
    assert capsys.readouterr().err == "sstat: fatal: Bad job/step specified: x1\n"
    assert sstat.main(["--usage"]) == 0
    assert capsys.readouterr().out == "Usage: sstat [options] -j <job(.stepid)>\n\tUse --help for help\n"
