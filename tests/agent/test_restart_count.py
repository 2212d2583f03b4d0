"""SLURM_RESTART_COUNT: a job's script can tell which run of it this is, as in Slurm."""

from __future__ import annotations

from agent.jobs import Account, job_environment


def test_the_run_of_a_requeued_job_is_its_restart_count():
    first = job_environment({"job_id": 7, "batch_host": "node01"}, Account(name="alice"))
    third = job_environment({"job_id": 7, "batch_host": "node01", "run": 2}, Account(name="alice"))
    assert first["SLURM_RESTART_COUNT"] == "0"
    assert third["SLURM_RESTART_COUNT"] == "2"
