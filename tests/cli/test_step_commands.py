"""squeue -s, scontrol show step and scancel JOBID.STEP on the API's step objects."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

from cli import scancel, squeue_steps
from cli.scontrol import render_record
from cli.scontrol_steps import step_record

NOW = datetime(2026, 1, 1, 12, 0, 5, tzinfo=UTC)
STEP = {"id": "12.0", "job_id": 12, "step_id": 0, "name": "hostname", "state": "RUNNING", "user": "alice",
        "partition": "debug", "node_list": "node[01-02]", "num_nodes": 2, "num_tasks": 4, "num_cpus": 4,
        "start_time": "2026-01-01T12:00:00+00:00", "time_limit": 60}  # fmt: skip


def test_squeue_s_prints_slurm_s_step_columns() -> None:
    lines = squeue_steps.format_steps([STEP], squeue_steps.STEP_FORMAT, header=True, now=NOW)
    assert lines == [
        "         STEPID     NAME PARTITION     USER      TIME NODELIST",
        "           12.0 hostname     debug    alice      0:05 node[01-02]",
    ]
    with pytest.raises(ValueError, match="Invalid job step format specification"):
        squeue_steps.format_steps([STEP], "%Z", header=False, now=NOW)


def test_squeue_s_filters_by_job_user_and_partition() -> None:
    ns = SimpleNamespace(jobs="12", user=None, partition=None)
    assert squeue_steps.selected([STEP, {**STEP, "job_id": 13}], ns) == [STEP]
    assert squeue_steps.selected([STEP], SimpleNamespace(jobs=None, user="bob", partition=None)) == []


def test_scontrol_show_step_uses_slurm_s_keys() -> None:
    text = render_record(step_record(STEP))
    assert text.startswith("StepId=12.0 UserId=alice StartTime=")
    assert "   State=RUNNING Partition=debug NodeList=node[01-02]\n" in text
    assert "   Nodes=2 CPUs=4 Tasks=4 Name=hostname Network=(null)\n" in text
    assert "TimeLimit=01:00:00" in text


def test_scancel_takes_steps_apart_from_jobs() -> None:
    steps, jobs = scancel.split_steps(["12.0,14,13.2", "15_[1,2]"])
    assert steps == [(12, 0), (13, 2)]
    assert scancel.parse_job_ids(jobs) == [14, "15_1", "15_2"]
    with pytest.raises(ValueError):
        scancel.split_steps(["12.x"])
