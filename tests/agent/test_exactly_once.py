"""A launch runs once, whatever moment the agent dies at (issue 10, "A job can run twice").

Real agent processes are killed with the test-only FSCHED_AGENT_FAULT hook (``os._exit``
at that point of the launch, as a kill -9 would) and a new agent is started on the same
spool. Every job appends a line to a marker file: the lines count its runs.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agent.jobs import FAULT_STATUS
from tests.agent.harness import FakeController, launch_object
from tests.agent.test_agent_restart import group_alive, run, start_agent

# Long enough to outlive the restart of the agent that died after the fork: 0.6 s was
# not at load 5 on 2 cores (the next agent registered 0.64 s after the launch).
MARKER_SCRIPT = "#!/bin/bash\necho run >> marker\nsleep 2\nexit 3\n"


async def _crash_at(
    point: str, ctl: FakeController, tmp_path: Path, procs: list, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[type-arg]
    monkeypatch.setenv("FSCHED_AGENT_FAULT", point)
    procs.append(await start_agent(ctl, tmp_path, 1))
    monkeypatch.delenv("FSCHED_AGENT_FAULT")
    await ctl.expect("register")
    await ctl.send({"type": "launch", "job": launch_object(50, MARKER_SCRIPT, tmp_path)})
    assert await asyncio.wait_for(procs[0].wait(), 10) == FAULT_STATUS


def test_agent_dying_right_after_the_fork_has_its_wrapper_adopted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def scenario(ctl: FakeController, procs: list) -> None:  # type: ignore[type-arg]
        await _crash_at("after_fork", ctl, tmp_path, procs, monkeypatch)
        procs.append(await start_agent(ctl, tmp_path, 2))
        reg = await ctl.expect("register")
        [running] = reg["running"]
        assert (running["job_id"], running["node"], running["run"]) == (50, "node01", 0)
        assert group_alive(running["pid"])
        # A controller that never saw ``started`` may launch again: it is the same run.
        await ctl.send({"type": "launch", "job": launch_object(50, MARKER_SCRIPT, tmp_path)})
        started = await ctl.expect("started", job_id=50)
        assert started["pid"] == running["pid"]
        done = await ctl.expect("completed", job_id=50, timeout=5)
        assert (done["exit_code"], done["signal"]) == (3, 0)
        await ctl.nothing("completed", 0.8)
        assert (tmp_path / "marker").read_text() == "run\n"

    run(tmp_path, scenario)


def test_agent_dying_before_the_fork_leaves_a_launch_the_controller_relaunches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def scenario(ctl: FakeController, procs: list) -> None:  # type: ignore[type-arg]
        await _crash_at("before_fork", ctl, tmp_path, procs, monkeypatch)
        procs.append(await start_agent(ctl, tmp_path, 2))
        reg = await ctl.expect("register")
        assert reg["running"] == [] and reg["completions"] == []
        assert not (tmp_path / "spool" / "jobs" / "50").exists()  # the dropped intent
        assert not (tmp_path / "marker").exists()
        await ctl.send({"type": "launch", "job": launch_object(50, MARKER_SCRIPT, tmp_path)})
        await ctl.expect("started", job_id=50)
        done = await ctl.expect("completed", job_id=50, timeout=5)
        assert (done["exit_code"], done["signal"]) == (3, 0)
        await ctl.nothing("completed", 0.5)
        assert (tmp_path / "marker").read_text() == "run\n"

    run(tmp_path, scenario)


def test_wrapper_that_ended_while_no_agent_watched_is_completed_from_its_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def scenario(ctl: FakeController, procs: list) -> None:  # type: ignore[type-arg]
        await _crash_at("after_fork", ctl, tmp_path, procs, monkeypatch)
        for _ in range(100):  # the job (0.6 s) ends while no agent runs
            if (tmp_path / "spool" / "jobs" / "50" / "status").exists():
                break
            await asyncio.sleep(0.05)
        procs.append(await start_agent(ctl, tmp_path, 2))
        reg = await ctl.expect("register")
        assert reg["running"] == []
        [c] = reg["completions"]
        assert (c["job_id"], c["exit_code"], c["signal"]) == (50, 3, 0)
        assert (tmp_path / "marker").read_text() == "run\n"

    run(tmp_path, scenario)


def test_second_agent_on_the_same_spool_exits_naming_the_first(tmp_path: Path) -> None:
    async def scenario(ctl: FakeController, procs: list) -> None:  # type: ignore[type-arg]
        procs.append(await start_agent(ctl, tmp_path, 1))
        await ctl.expect("register")
        procs.append(await start_agent(ctl, tmp_path, 2))
        status = await asyncio.wait_for(procs[1].wait(), 10)
        assert status != 0
        log = (tmp_path / "agent2.log").read_text()
        assert f"is in use by another agent (pid {procs[0].pid})" in log
        await ctl.nothing("register", 0.3)  # the second agent never registered
        assert procs[0].returncode is None  # the first serves on

    run(tmp_path, scenario)
