"""--simulate-exec (the scale benchmarks' agents): a job starts no process, is reported
running, and completes by itself after its FSCHED_SIM_RUN_TIME, or at once without it;
a cancel ends it sooner; a bad run time is a launch failure naming the variable."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

from agent.jobs import JobManager
from agent.main import parse_config
from agent.spool import Spool
from slurmwords import agent_messages as am
from tests.agent.harness import launch_object
from tests.agent.test_start_reports import until


def _run(tmp_path: Path, scenario) -> list[am.Message]:
    sent: list[am.Message] = []

    async def main() -> None:
        spool = Spool(tmp_path / "spool")
        jobs = JobManager(spool, ["node01"], sent.append, simulate_exec=True)
        try:
            await scenario(jobs, sent)
        finally:
            jobs.close()
            spool.close()

    asyncio.run(main())
    return sent


def _env(**extra: str) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", **extra}


def test_a_job_holds_its_node_for_its_run_time_without_a_process(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    script = f"#!/bin/bash\ntouch {marker}\n"

    async def scenario(jobs: JobManager, sent: list[am.Message]) -> None:
        began = time.monotonic()
        jobs.launch(launch_object(71, script, tmp_path, environment=_env(FSCHED_SIM_RUN_TIME="0.3")))
        await until(lambda: any(isinstance(m, am.Started) for m in sent))
        assert jobs._running == {}
        assert [(r.job_id, r.pid) for r in jobs.running()] == [(71, 0)]
        await until(lambda: any(isinstance(m, am.Completed) for m in sent))
        assert time.monotonic() - began >= 0.3  # not before its run time

    sent = _run(tmp_path, scenario)
    end = next(m for m in sent if isinstance(m, am.Completed))
    assert (end.job_id, end.exit_code, end.signal) == (71, 0, 0)
    assert not marker.exists()  # the script never ran
    assert not (tmp_path / "slurm-71.out").exists()


def test_without_a_run_time_it_completes_at_once_and_a_cancel_ends_a_long_one(tmp_path: Path) -> None:
    async def scenario(jobs: JobManager, sent: list[am.Message]) -> None:
        jobs.launch(launch_object(72, "", tmp_path, environment=_env()))
        jobs.launch(launch_object(73, "", tmp_path, environment=_env(FSCHED_SIM_RUN_TIME="3600")))
        await until(lambda: any(isinstance(m, am.Completed) and m.job_id == 72 for m in sent))
        jobs.cancel(73, 30.0)
        await until(lambda: any(isinstance(m, am.Completed) and m.job_id == 73 for m in sent))

    ends = {m.job_id: m for m in _run(tmp_path, scenario) if isinstance(m, am.Completed)}
    assert (ends[72].exit_code, ends[72].signal) == (0, 0)
    assert ends[73].signal == signal.SIGTERM


def test_a_bad_run_time_is_a_launch_failure(tmp_path: Path) -> None:
    async def scenario(jobs: JobManager, sent: list[am.Message]) -> None:
        jobs.launch(launch_object(74, "", tmp_path, environment=_env(FSCHED_SIM_RUN_TIME="soon")))
        await until(lambda: any(isinstance(m, am.LaunchFailed) for m in sent))

    failed = next(m for m in _run(tmp_path, scenario) if isinstance(m, am.LaunchFailed))
    assert "FSCHED_SIM_RUN_TIME" in failed.error


def test_the_flag_reaches_the_agents_configuration(monkeypatch) -> None:
    monkeypatch.setenv("FSCHED_AGENT_KEY", "k" * 43)
    config, _ = parse_config(["--nodes", "n1", "--simulate-exec"])
    assert config.simulate_exec is True
    assert parse_config(["--nodes", "n1"])[0].simulate_exec is False
