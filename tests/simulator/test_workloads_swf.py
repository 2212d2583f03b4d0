"""The SWF reader (#18 point 2): each of the 18 fields and the header, what is left out
and why, and errors naming file:line and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.workloads import WorkloadError, detect_format, read_workload
from simulator.workloads.swf import parse_swf

HEADER = """\
; Version: 2.2
; MaxNodes: 4
; MaxProcs: 32
; Partition: 1 batch: the batch nodes
; Partitions: 2=long 3=debug
; Queue: 7 night
"""
#  job submit wait run alloc cpu mem req_procs req_time req_mem status user group app queue part prec think
LINES = [
    "10 1000 5 100 16 90.5 2000 12 3601 1024 1 3 1 2 -1 1 -1 -1",  # completed
    "11 1010 0 50 8 -1 -1 -1 -1 -1 0 4 2 -1 7 -1 -1 -1",  # failed; allocated procs; queue only
    "12 1020 0 0 8 -1 -1 8 60 -1 5 4 2 -1 -1 2 -1 -1",  # cancelled before it started
    "13 1030 0 70 1 -1 -1 1 120 -1 5 5 2 -1 -1 3 10 60",  # cancelled while running, after job 10
    "14 1005 0 30 2 -1 -1 2 0 -1 1 -1 -1 -1 -1 9 12 5",  # after 12 (left out); unmapped partition
    "15 1040 0 -1 2 -1 -1 2 60 -1 1 6 2 -1 -1 1 -1 -1",  # run time unknown
]


def write(tmp_path: Path, lines: list[str], header: str = HEADER, name: str = "log.swf") -> Path:
    path = tmp_path / name
    path.write_text(header + "\n".join(lines) + "\n")
    return path


def by_id(jobs):
    return {j.job_id: j for j in jobs}


def test_every_field_of_a_completed_job(tmp_path):
    notes: list[str] = []
    jobs = by_id(read_workload(write(tmp_path, LINES), notes=notes))
    j = jobs[10]
    assert j.submit == 0.0 and j.run_time == 100.0  # submit times from the first submission
    assert j.ntasks == 12 and j.nodes == 2  # requested processors; 32 procs / 4 nodes = 8 a node
    assert j.time_limit == 61  # 3601 s rounded up to whole minutes
    assert j.mem_mb == 6  # 1024 KB per processor x 6 processors a node
    assert (j.user, j.account, j.name, j.partition) == ("user3", "", "app2", "batch")
    assert (j.exit_code, j.dependency, j.cpus_per_task, j.qos, j.licenses) == (0, "", 1, "", "")


def test_failed_job_falls_back_to_allocated_processors_and_its_queue(tmp_path):
    j = by_id(read_workload(write(tmp_path, LINES)))[11]
    assert j.ntasks == 8 and j.nodes == 1 and j.exit_code == 1
    assert j.partition == "night"  # no partition number: the queue's name
    assert j.time_limit is None and j.mem_mb == 0 and j.name == ""
    assert j.submit == 10.0


def test_cancelled_and_unknown_jobs_are_left_out_with_a_note_and_so_are_dependencies_on_them(tmp_path):
    notes: list[str] = []
    path = write(tmp_path, LINES)
    jobs = by_id(read_workload(path, notes=notes))
    assert sorted(jobs) == [10, 11, 13, 14]
    assert f"{path}:9: job 12 left out: cancelled before it started" in notes
    assert f"{path}:12: job 15 left out: its run time is unknown (-1)" in notes
    assert f"{path}:11: job 14: dependency on job 12 dropped (left out)" in notes
    ran_cancelled = jobs[13]
    assert ran_cancelled.exit_code == 143 and ran_cancelled.run_time == 70.0
    assert ran_cancelled.dependency == "afterany:10" and ran_cancelled.partition == "debug"
    assert jobs[14].dependency == "" and jobs[14].partition == "" and jobs[14].user == "user0"
    assert jobs[14].time_limit is None  # requested time 0: no limit asked


def test_jobs_come_in_submission_order(tmp_path):
    jobs = read_workload(write(tmp_path, LINES))
    assert [j.job_id for j in jobs] == [10, 14, 11, 13]
    assert [j.submit for j in jobs] == [0.0, 5.0, 10.0, 30.0]


def test_cpus_per_node_and_mappings_given_to_the_reader_win_over_the_header(tmp_path):
    path = write(tmp_path, LINES)
    jobs = by_id(read_workload(path, cpus_per_node=4, partitions={1: "big"}, queues={7: "q7"}))
    assert jobs[10].nodes == 3 and jobs[10].mem_mb == 4  # 12 procs / 4 = 3 nodes of 4 tasks
    jobs = by_id(read_workload(path, cpus_per_node=5, partitions={1: "big"}, queues={7: "q7"}))
    assert jobs[10].nodes == 3 and jobs[10].mem_mb == 4  # ceil(12/5) = 3 nodes, 4 tasks each
    assert jobs[10].partition == "big" and jobs[11].partition == "q7"
    assert jobs[13].partition == ""  # partition 3 is not in the argument's mapping


def test_without_processors_per_node_a_job_asks_for_one_node_at_least(tmp_path):
    jobs = by_id(read_workload(write(tmp_path, LINES, header="; MaxProcs: 32\n")))
    assert jobs[10].nodes == 1 and jobs[10].ntasks == 12 and jobs[10].mem_mb == 12
    assert jobs[10].partition == ""  # no mapping at all: the default partition


@pytest.mark.parametrize(
    ("line", "where", "message"),
    [
        ("10 1000 5 100 16", ":7: ", "an SWF line has 18 fields, this one 5"),
        (
            "10 1000 5 1x0 16 -1 -1 12 60 -1 1 3 1 2 -1 1 -1 -1",
            ":7: field 4 (run time): ",
            "'1x0' is not a number",
        ),
        (
            "10 1000 5 100 16 -1 -1 12 60 -1 1 -3 1 2 -1 1 -1 -1",
            ":7: field 12 (user id): ",
            "-3 is negative (only -1, unknown)",
        ),
        (
            "10 1000 5 100 16 -1 -1 2.5 60 -1 1 3 1 2 -1 1 -1 -1",
            ":7: field 8 (requested processors): ",
            "2.5 is not a whole number",
        ),
        (
            "10 -1 5 100 16 -1 -1 12 60 -1 1 3 1 2 -1 1 -1 -1",
            ":7: field 2 (submit time): ",
            "unknown (-1): the job cannot be replayed",
        ),
        (
            "10 1000 5 100 -1 -1 -1 -1 60 -1 1 3 1 2 -1 1 -1 -1",
            ":7: field 8 (requested processors): ",
            "no processor count (fields 5 and 8 are both unknown)",
        ),
        (
            "0 1000 5 100 1 -1 -1 1 60 -1 1 3 1 2 -1 1 -1 -1",
            ":7: field 1 (job number): ",
            "0 is not a job number (1 or more)",
        ),
    ],
)
def test_errors_name_the_file_the_line_and_the_field(tmp_path, line, where, message):
    path = write(tmp_path, [line])
    with pytest.raises(WorkloadError) as info:
        read_workload(path)
    assert str(info.value) == f"{path}{where}{message}"
    assert info.value.line == 7


def test_a_job_number_given_twice_names_both_lines(tmp_path):
    path = write(tmp_path, [LINES[0], LINES[0]])
    with pytest.raises(WorkloadError, match=r"log\.swf:8: field 1 \(job number\): job 10 is also on line 7"):
        read_workload(path)


def test_an_unreadable_file_is_an_error_naming_it(tmp_path):
    with pytest.raises(WorkloadError, match=r"missing\.swf: cannot read: No such file"):
        read_workload(tmp_path / "missing.swf")
    binary = tmp_path / "bin.swf"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(WorkloadError, match=r"bin\.swf: not UTF-8 text"):
        read_workload(binary)


def test_the_format_is_told_by_the_extension_else_by_the_content(tmp_path):
    assert detect_format("x.swf", "") == "swf"
    assert detect_format("x.JSON", "") == "json"
    assert detect_format("x.yml", "") == "yaml"
    assert detect_format("trace", "\n; Version: 2\n") == "swf"
    assert detect_format("trace", "1 0 0 10 1 -1 -1 1 60 -1 1 1 1 1 1 1 -1 -1\n") == "swf"
    assert detect_format("trace", ' {"jobs": []}') == "json"
    assert detect_format("trace", "jobs:\n- {user: a}\n") == "yaml"
    path = write(tmp_path, LINES, name="trace.log")
    assert len(read_workload(path)) == 4


def test_parse_swf_without_a_file():
    assert parse_swf("") == []
    [job] = parse_swf("1 50 0 10 1 -1 -1 1 60 -1 1 2 1 1 1 1 -1 -1\n")
    assert (job.job_id, job.submit, job.user, job.time_limit) == (1, 0.0, "user2", 1)


def test_without_a_notes_list_the_notes_go_to_stderr(tmp_path, capsys):
    path = write(tmp_path, LINES)
    assert len(read_workload(path)) == 4
    err = capsys.readouterr().err
    assert f"note: {path}:9: job 12 left out: cancelled before it started\n" in err
    assert err.count("note: ") == 3
