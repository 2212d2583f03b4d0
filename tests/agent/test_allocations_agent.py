"""Allocation-only jobs and the job credential on the agent (#16 point 2): salloc's job
starts no process, is reported running, and ends when the controller's cancel comes,
with the status of a release; a batch job's processes get FSCHED_JOB_CREDENTIAL and
FSCHED_URL in their environment, never on a command line."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

from agent.allocations import api_url
from agent.daemon import Agent
from agent.jobs import JobManager
from agent.spool import Spool
from slurmwords import agent_messages as am
from tests.agent.harness import FakeController, launch_object, run_with_agent
from tests.agent.test_prolog_agent import _rules, _script
from tests.agent.test_start_reports import until


def _run(tmp_path: Path, scenario, **manager) -> list[am.Message]:
    sent: list[am.Message] = []

    async def main() -> None:
        spool = Spool(tmp_path / "spool")
        jobs = JobManager(spool, ["node01"], sent.append, **manager)
        try:
            await scenario(jobs, sent)
        finally:
            for job in list(jobs._running.values()):
                os.killpg(job.state.pgid, 9)
            jobs.close()
            spool.close()

    asyncio.run(main())
    return sent


def test_an_allocation_starts_no_process_and_ends_with_its_release(tmp_path: Path) -> None:
    async def scenario(jobs: JobManager, sent: list[am.Message]) -> None:
        jobs.launch(launch_object(61, "", tmp_path, allocation=True, credential="61.secret"))
        await until(lambda: any(isinstance(m, am.Started) for m in sent))
        assert jobs._running == {}  # no process
        assert [(r.job_id, r.pid) for r in jobs.running()] == [(61, 0)]
        jobs.signal(61, "USR1")  # nothing to signal: ignored, not an error
        jobs.cancel(61, 0.0, (3, 0))
        await until(lambda: any(isinstance(m, am.Completed) for m in sent))
        assert jobs.running() == []

    sent = _run(tmp_path, scenario)
    end = next(m for m in sent if isinstance(m, am.Completed))
    assert (end.job_id, end.exit_code, end.signal) == (61, 3, 0)
    assert not any(isinstance(m, am.LaunchFailed) for m in sent)
    assert not (tmp_path / "slurm-61.out").exists()  # nothing ran, nothing wrote


def test_a_cancelled_allocation_ends_as_killed(tmp_path: Path) -> None:
    async def scenario(jobs: JobManager, sent: list[am.Message]) -> None:
        jobs.launch(launch_object(62, "", tmp_path, allocation=True))
        await until(lambda: any(isinstance(m, am.Started) for m in sent))
        jobs.cancel(62, 30.0)
        await until(lambda: any(isinstance(m, am.Completed) for m in sent))

    end = next(m for m in _run(tmp_path, scenario) if isinstance(m, am.Completed))
    assert (end.exit_code, end.signal) == (0, signal.SIGTERM)


def test_a_batch_job_gets_its_credential_and_the_controllers_url(tmp_path: Path) -> None:
    script = (
        "#!/bin/bash\n"
        'echo "cred=$FSCHED_JOB_CREDENTIAL url=$FSCHED_URL"\n'
        "tr '\\0' ' ' < /proc/$$/cmdline; echo\n"
    )

    async def scenario(jobs: JobManager, sent: list[am.Message]) -> None:
        jobs.launch(launch_object(63, script, tmp_path, credential="63.s3cret"))
        await until(lambda: any(isinstance(m, am.Completed) for m in sent))

    url = api_url("ws://ctl.example:8000/ws/agent/")
    assert url == "http://ctl.example:8000"
    _run(tmp_path, scenario, api_url=url)
    out = next(tmp_path.glob("slurm-63.out")).read_text()
    lines = out.splitlines()
    assert lines[0] == "cred=63.s3cret url=http://ctl.example:8000"
    assert "63.s3cret" not in lines[1]  # not on the command line


def test_an_allocation_runs_the_prolog_and_epilog_and_no_task_scripts(tmp_path: Path, work: Path) -> None:
    log = tmp_path / "hooks.log"
    hooks = {
        name: _script(tmp_path / name, f'echo "{name} $SLURM_JOB_ID" >> {log}\n')
        for name in ("prolog", "epilog", "task_prolog", "task_epilog")
    }

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        await ctl.send({"type": "launch", "job": launch_object(9, "", work, allocation=True)})
        started = await ctl.expect("started", job_id=9)
        assert started["pid"] == 0
        await ctl.send({"type": "cancel", "job_id": 9, "kill_wait": 0, "exit_code": 0, "exit_signal": 0})
        done = await ctl.expect("completed", job_id=9)
        assert (done["exit_code"], done["signal"]) == (0, 0)
        await ctl.expect("prolog_epilog", job_id=9)

    rules = _rules(
        prolog=(hooks["prolog"],),
        epilog=(hooks["epilog"],),
        task_prolog=(hooks["task_prolog"],),
        task_epilog=(hooks["task_epilog"],),
    )
    run_with_agent(tmp_path, scenario, rules=rules)
    assert log.read_text().split("\n")[:2] == ["prolog 9", "epilog 9"]
