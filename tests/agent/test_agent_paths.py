"""Output file name patterns (agent.paths), as slurmstepd expands them."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agent.paths import NO_VAL, JobFiles, PatternFields, expand_pattern, job_files

JOB = PatternFields(job_id=42, name="myjob", user="alice", node="node03")
TASK = PatternFields(job_id=57, name="arr", user="bob", node="node01", array_job_id=50, array_task_id=7)


def test_each_specifier() -> None:
    assert expand_pattern("%j|%x|%u|%N|%%", JOB) == "42|myjob|alice|node03|%"
    assert expand_pattern("slurm-%A_%a.out", TASK) == "slurm-50_7.out"
    assert expand_pattern("%j", TASK) == "57"


def test_outside_arrays_A_is_the_job_and_a_is_no_val() -> None:
    assert expand_pattern("%A-%a", JOB) == f"42-{NO_VAL}"


def test_zero_padding_of_numbers() -> None:
    assert expand_pattern("out-%3a-%6j", TASK) == "out-007-000057"
    assert expand_pattern("%4x", JOB) == "myjob"  # names are not padded


def test_unknown_and_trailing_percents_are_kept() -> None:
    assert expand_pattern("a%qb", JOB) == "a%qb"
    assert expand_pattern("end%", JOB) == "end%"
    assert expand_pattern("end%3", JOB) == "end%3"
    assert expand_pattern("%%j", JOB) == "%j"


def test_backslash_disables_expansion() -> None:
    assert expand_pattern("lit\\%j.out", JOB) == "lit%j.out"


@given(st.text().filter(lambda s: "%" not in s and "\\" not in s))
def test_text_without_specifiers_is_unchanged(text: str) -> None:
    assert expand_pattern(text, JOB) == text


@given(st.text(alphabet="%jxuNAa0123-_./ab"))
def test_expansion_never_fails_and_drops_no_plain_text(pattern: str) -> None:
    out = expand_pattern(pattern, TASK)
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
