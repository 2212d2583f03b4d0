"""The YAML/JSON job list (#18 point 2): every sbatch-style field read with Slurm's
grammars, errors naming file:line and the field, and the writer's round trip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simulator.records import SimJob
from simulator.workloads import WorkloadError, read_workload, write_job_list

FULL = """\
jobs:
  - submit: 100
    run_time: 1:30:00
    user: alice
    account: physics
    partition: batch
    qos: high
    nodes: 2
    ntasks: 8
    cpus-per-task: 2
    mem: 4G
    time: 2-00:00:00
    licenses: power:full_node,fluent:1
    name: sim
    exit_code: 3
  - submit: 130.5
    run_time: 45
    user: bob
    time: 30
    mem: 500
    dependency: afterok:1
    job_id: 7
"""


def write(tmp_path: Path, text: str, name: str = "jobs.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_every_field_of_a_yaml_job(tmp_path):
    first, second = read_workload(write(tmp_path, FULL))
    assert first == SimJob(
        job_id=1,
        submit=0.0,
        run_time=5400.0,
        user="alice",
        account="physics",
        partition="batch",
        qos="high",
        nodes=2,
        ntasks=8,
        cpus_per_task=2,
        mem_mb=4096,
        time_limit=2880,
        licenses="power:full_node,fluent:1",
        name="sim",
        dependency="",
        exit_code=3,
    )
    # A plain time is minutes and a plain size MB, as sbatch reads them; run_time is seconds.
    assert (second.job_id, second.submit, second.run_time) == (7, 30.5, 45.0)
    assert (second.time_limit, second.mem_mb, second.dependency) == (30, 500, "afterok:1")
    assert (second.nodes, second.ntasks, second.cpus_per_task, second.account) == (1, 1, 1, "")


def test_submit_times_as_dates_and_a_bare_list(tmp_path):
    text = """\
- {submit: "2026-12-01T08:00:30", run_time: 10, user: a}
- {submit: 2026-12-01T08:00:00, run_time: 10, user: b, time: "UNLIMITED"}
- {submit: "2026-12-01T09:00:00+01:00", run_time: "0:05", user: c, time: "0:30"}
"""
    jobs = read_workload(write(tmp_path, text))
    assert [(j.user, j.submit) for j in jobs] == [("b", 0.0), ("c", 0.0), ("a", 30.0)]
    assert jobs[0].time_limit is None and jobs[1].time_limit == 1 and jobs[1].run_time == 5.0


def test_json_job_list(tmp_path):
    text = (
        '[\n {"submit": 5, "run_time": 60, "user": "a", "mem": "1G"},\n'
        ' {"submit": 0, "run_time": "1:00", "user": "b"}\n]'
    )
    jobs = read_workload(write(tmp_path, text, "jobs.json"))
    assert [(j.job_id, j.submit, j.run_time, j.mem_mb) for j in jobs] == [
        (2, 0.0, 60.0, 0),
        (1, 5.0, 60.0, 1024),
    ]
    wrapped = read_workload(write(tmp_path, '{"jobs": ' + text + "}", "wrapped.json"))
    assert wrapped == jobs
    assert read_workload(write(tmp_path, '{"jobs": []}', "empty.json")) == []


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        (
            "- {submit: 0, run_time: 1, user: a}\n- submit: 0\n  run_time: 1\n  user: a\n  cpus: 4\n",
            ":5: cpus: ",
            "unknown field (the fields: job_id, submit",
        ),
        (
            "- submit: 0\n  run_time: 1\n  user: a\n  mem: 4Q\n",
            ":4: mem: ",
            "Invalid memory specification: '4Q'",
        ),
        (
            "- submit: 0\n  run_time: 1\n  user: a\n  time: 1:2:3:4\n",
            ":4: time: ",
            "Invalid time limit specification: '1:2:3:4'",
        ),
        (
            "- submit: 0\n  run_time: soon\n  user: a\n",
            ":2: run_time: ",
            "Invalid time limit specification: 'soon'",
        ),
        (
            "- submit: 0\n  run_time: UNLIMITED\n  user: a\n",
            ":2: run_time: ",
            "'UNLIMITED': a job's run time cannot",
        ),
        ("- submit: 0\n  run_time: 1\n", ":1: ", "user: missing (every job needs one)"),
        ("- submit: 0\n  run_time: 1\n  user: a\n  nodes: 0\n", ":4: nodes: ", "0 is less than 1"),
        (
            "- submit: 0\n  run_time: 1\n  user: a\n  ntasks: two\n",
            ":4: ntasks: ",
            "'two' is not a whole number",
        ),
        (
            "- submit: 0\n  run_time: 1\n  user: a\n  exit_code: 300\n",
            ":4: exit_code: ",
            "300 is more than 255",
        ),
        ("- submit: -5\n  run_time: 1\n  user: a\n", ":1: submit: ", "-5 is not a number of seconds"),
        (
            "- submit: tuesday\n  run_time: 1\n  user: a\n",
            ":1: submit: ",
            "'tuesday' is neither seconds nor a time",
        ),
        (
            "- submit: 0\n  run_time: 1\n  user: a\n  dependency: afterok:x\n",
            ":4: dependency: ",
            "'afterok:x': Job dependency problem",
        ),
        (
            "- submit: 0\n  run_time: 1\n  user: a\n  dependency: afterok:9\n",
            ":4: dependency: ",
            "job 9 is not in the list",
        ),
        (
            "- {submit: 0, run_time: 1, user: a, job_id: 3}\n"
            "- {submit: 0, run_time: 1, user: b, job_id: 3}\n",
            ":2: job_id: ",
            "3 is also the number of the job on line 1",
        ),
        (
            "- {submit: 0, run_time: 1, user: a}\n- {submit: '2026-01-01T00:00:00', run_time: 1, user: b}\n",
            ":2: submit: ",
            "mixes times with seconds",
        ),
        ("- submit: 0\n  run_time: 1\n  user: a\n  user: b\n", ":4: user: ", "given twice"),
        ("- submit: 0\n  run_time: [1\n", ":3: ", "not YAML: "),
        ("- just text\n", ":1: ", "a job must be a mapping of fields"),
        ("{nothing: 1}\n", ":1: jobs: ", "missing: a job list is a list of jobs"),
        ("jobs: 5\n", ":1: jobs: ", "not a list of jobs"),
    ],
)
def test_yaml_errors_name_the_file_the_line_and_the_field(tmp_path, text, where, message):
    path = write(tmp_path, text)
    with pytest.raises(WorkloadError) as info:
        read_workload(path)
    assert str(info.value).startswith(f"{path}{where}{message}"), str(info.value)


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        (
            '[\n{"submit": 0, "run_time": 1, "user": "a"},\n'
            '{"submit": 0, "run_time": 1,\n "user": "a", "mem": "x"}\n]',
            ":3: mem: ",
            "Invalid memory specification: 'x'",
        ),
        (
            '[\n{"submit": 0, "run_time": 1, "user": "a"}\n{"submit": 0}]',
            ":3: ",
            "not JSON: expected ',' or ']'",
        ),
        ('[\n{"submit": 0, "run_time": 1, "user": "a",}\n]', ":2: ", "not JSON: Expecting property name"),
        ("[\n 5\n]", ":2: ", "a job must be an object of fields"),
        ('{"other": []}', ":1: jobs: ", "missing: a job list is a list of jobs"),
        ('{"jobs": 5}', ":1: jobs: ", "not a list of jobs"),
    ],
)
def test_json_errors_name_the_file_the_line_of_the_job_and_the_field(tmp_path, text, where, message):
    path = write(tmp_path, text, "jobs.json")
    with pytest.raises(WorkloadError) as info:
        read_workload(path)
    assert str(info.value).startswith(f"{path}{where}{message}"), str(info.value)


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_the_writer_writes_what_the_reader_reads_back(tmp_path, suffix):
    jobs = read_workload(write(tmp_path, FULL))
    jobs.append(SimJob(job_id=9, submit=31.25, run_time=0.5, user="carol", time_limit=90, mem_mb=1536))
    out = write_job_list(jobs, tmp_path / f"out{suffix}")
    assert sorted(read_workload(out), key=lambda j: j.job_id) == sorted(jobs, key=lambda j: j.job_id)
    text = out.read_text()
    assert '"mem": "4G"' in text or "mem: 4G" in text  # Slurm's size text
    assert "2-00:00:00" in text and "1:30:00" in text  # Slurm's time-limit text
    if suffix == ".json":
        assert json.loads(text)["jobs"][0]["licenses"] == "power:full_node,fluent:1"
        assert len(text.splitlines()) == len(jobs) + 2  # one job a line


def test_unquoted_slurm_times_are_slurm_times_not_yaml_base_60_numbers(tmp_path):
    # YAML 1.1 reads 1:00:00 as the integer 3600, which as a time limit would be 60 hours.
    text = (
        "- {submit: 0, run_time: 10:00, user: a, time: 1:00:00}\n"
        "- {submit: 1, run_time: 5, user: b, time: 30:00}\n"
    )
    first, second = read_workload(write(tmp_path, text))
    assert (first.time_limit, first.run_time) == (60, 600.0)
    assert second.time_limit == 30


def test_a_json_object_finds_its_jobs_member_whatever_comes_before_it(tmp_path):
    text = '{"note": "jobs", "meta": {"jobs": 1},\n "jobs": [\n'
    text += '{"submit": 0, "run_time": 1, "user": "a", "nodes": 0}]}'
    with pytest.raises(WorkloadError, match=r"jobs\.json:3: nodes: 0 is less than 1"):
        read_workload(write(tmp_path, text, "jobs.json"))
