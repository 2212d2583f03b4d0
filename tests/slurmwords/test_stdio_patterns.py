"""sbatch's file name patterns (slurmwords.stdio_patterns), as Slurm expands them, and the
agent's and the controller's use of them."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agent.paths import JobFiles, job_files
from cluster.core.outputs import expand_output_path
from slurmwords.stdio_patterns import NO_VAL, PatternFields, expand

JOB = PatternFields(job_id=42, name="myjob", user="alice", node="node03")
TASK = PatternFields(job_id=57, name="arr", user="bob", node="node01", array_job_id=50, array_task_id=7)
STEP = PatternFields(job_id=128, name="s", user="u", node="n1", step_id=0)


def test_each_specifier() -> None:
    assert expand("%j|%x|%u|%N|%%", JOB) == "42|myjob|alice|node03|%"
    assert expand("slurm-%A_%a.out", TASK) == "slurm-50_7.out"
    assert expand("%j", TASK) == "57"


def test_every_specifier_sbatch_documents() -> None:
    """%J, %s, %n, %t and %b were left literal: two jobs wrote into one ``...-%J.err``."""
    assert expand("job-%J.err", JOB) == "job-42.err"  # the batch step: the job id alone
    assert expand("job-%J.err", TASK) == "job-57.err"
    assert expand("%J|%s", STEP) == "128.0|0"
    assert expand("%s|%n|%t", JOB) == "batch|0|0"
    assert expand("%b", TASK) == "7"
    assert expand("%b", PatternFields(job_id=1, array_job_id=1, array_task_id=23)) == "3"
    assert expand("%2t-%4J", JOB) == "0-0042"  # a node or task id is never padded


def test_outside_arrays_A_is_the_job_and_a_is_no_val() -> None:
    assert expand("%A-%a", JOB) == f"42-{NO_VAL}"


def test_zero_padding_of_numbers() -> None:
    assert expand("out-%3a-%6j", TASK) == "out-007-000057"
    assert expand("%4x", JOB) == "myjob"  # names are not padded
    assert expand("%12j", JOB) == "0000000042"  # at most 10 wide


def test_slurm_s_corner_cases() -> None:
    assert expand("a%qb", JOB) == "a%qb"  # no such specifier: kept as written
    assert expand("end%", JOB) == "end"  # a trailing "%" is dropped
    assert expand("end%3", JOB) == "end3"
    assert expand("a%3qb", JOB) == "a3qb"  # a width before a non-specifier: its last digit
    assert expand("a%12qb", JOB) == "a2qb"
    assert expand("%05j", JOB) == "5j"  # Slurm reads one digit when the number is under 10
    assert expand("%%j", JOB) == "%j"


def test_backslash_disables_expansion() -> None:
    assert expand("lit\\%j.out", JOB) == "lit%j.out"


@given(st.text().filter(lambda s: "%" not in s and "\\" not in s))
def test_text_without_specifiers_is_unchanged(text: str) -> None:
    assert expand(text, JOB) == text


@given(st.text(alphabet="%jJxusntbNAa0123-_./ab"))
def test_expansion_never_fails_and_drops_no_plain_text(pattern: str) -> None:
    out = expand(pattern, TASK)
    assert out.count("/") == pattern.count("/")


def test_job_files_defaults_and_resolution() -> None:
    base = {"job_id": 42, "name": "n", "user": "u", "batch_host": "node03", "work_dir": "/home/u/run"}
    assert job_files(base) == JobFiles("/home/u/run/slurm-42.out", None, None)
    array = {**base, "array_job_id": 40, "array_task_id": 2}
    assert job_files(array).stdout == "/home/u/run/slurm-40_2.out"
    custom = {**base, "std_out": "/abs/%x.o", "std_err": "sub/../%x.e", "std_in": "in-%j"}
    assert job_files(custom) == JobFiles("/abs/n.o", "/home/u/run/n.e", "/home/u/run/in-42")
    same = {**base, "std_out": "o-%j", "std_err": "o-42"}
    assert job_files(same).stderr is None  # one file for both streams
    assert job_files({**base, "std_err": "e-%J"}).stderr == "/home/u/run/e-42"


def test_the_controller_shows_the_names_the_agent_writes() -> None:
    for pattern in ("o-%J-%s.%t", "slurm-%A_%a.out", "%x\\%j", "/abs/%u-%3b"):
        job = {"job_id": 57, "name": "arr", "user": "bob", "batch_host": "node01", "work_dir": "/w"}
        job |= {"array_job_id": 50, "array_task_id": 7, "std_out": pattern}
        shown = expand_output_path(
            pattern,
            job_id=57,
            name="arr",
            user="bob",
            node="node01",
            array_job_id=50,
            array_task_id=7,
            work_dir="/w",
        )
        assert shown == job_files(job).stdout
