"""The ping's job list (issue 18): what the agent holds, as slurmd's registration lists
its jobs. Running jobs, held allocations and ended jobs not yet reported are listed; a
job whose completion was sent, or that the controller had killed, is not."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agent.jobs import FLUSH_WINDOW, JobManager
from slurmwords import agent_messages as am
from tests.agent.harness import launch_object
from tests.agent.test_start_reports import run, until


def test_the_list_holds_running_and_unreported_jobs_not_reported_ends(tmp_path: Path) -> None:
    seen: dict[str, list[int]] = {}

    async def scenario(jobs: JobManager, sent: list[am.Message]) -> None:
        jobs.launch(launch_object(51, "#!/bin/bash\nsleep 30\n", tmp_path))
        jobs.launch(launch_object(52, "#!/bin/bash\nexit 0\n", tmp_path))
        jobs.launch(launch_object(53, "#!/bin/bash\nsleep 30\n", tmp_path))
        seen["launched"] = jobs.held()  # before any report: all three
        # Its process started (under load a launch may still be starting when the kill comes).
        await until(lambda: 53 in jobs._running)
        jobs.kill_silently([53])  # registered.kill: no longer the controller's
        await until(lambda: any(isinstance(m, am.Completed) and m.job_id == 52 for m in sent))
        seen["reported"] = jobs.held()
        jobs.ack([52])
        await asyncio.sleep(2 * FLUSH_WINDOW)
        seen["acknowledged"] = jobs.held()

    run(tmp_path, scenario)
    assert seen == {"launched": [51, 52, 53], "reported": [51], "acknowledged": [51]}


def test_an_ended_job_is_listed_until_its_completion_is_sent(tmp_path: Path) -> None:
    seen: list[list[int]] = []

    async def scenario(jobs: JobManager, sent: list[am.Message]) -> None:
        jobs.launch(launch_object(54, "#!/bin/bash\nexit 0\n", tmp_path))
        # Each ping written while it runs or waits for the flush names it.
        while not any(isinstance(m, am.Completed) for m in sent):
            seen.append(jobs.held())
            await asyncio.sleep(FLUSH_WINDOW / 4)
        seen.append(jobs.held())

    run(tmp_path, scenario)
    assert all(held == [54] for held in seen[:-1]) and seen[-1] == []


def test_an_allocation_held_without_a_process_is_listed(tmp_path: Path) -> None:
    async def scenario(jobs: JobManager, sent: list[am.Message]) -> None:
        jobs.launch(launch_object(55, "", tmp_path, allocation=True))
        await until(lambda: bool(sent))
        assert jobs.held() == [55]

    run(tmp_path, scenario)


def test_a_ping_without_the_list_is_an_earlier_agents_and_decodes() -> None:
    old = am.decode({"type": "ping", "time": 1.0, "nodes": ["node01"]}, am.AGENT_MESSAGES)
    assert isinstance(old, am.Ping) and (old.jobs, old.seen) == (None, None)
    new = am.Ping(time=1.0, nodes=["node01"], jobs=[7, 9], seen=12)
    assert am.decode(new.to_wire(), am.AGENT_MESSAGES) == new
    assert "jobs" not in am.Ping(time=1.0, nodes=[]).to_wire()


def test_a_job_killed_silently_is_not_listed_while_its_end_waits_for_the_flush(tmp_path: Path) -> None:
    at_flush: list[tuple[bool, list[int]]] = []

    async def scenario(jobs: JobManager, sent: list[am.Message]) -> None:
        flush = jobs.flush

        def flush_seen() -> None:  # what a ping written just before this flush would list
            at_flush.append((57 in jobs._pending, jobs.held()))
            flush()

        jobs.flush = flush_seen  # type: ignore[method-assign]
        jobs.launch(launch_object(57, "#!/bin/bash\nsleep 30\n", tmp_path))
        await until(lambda: 57 in jobs._running)
        jobs.kill_silently([57])
        await until(lambda: 57 not in jobs._running and 57 not in jobs._pending)

    run(tmp_path, scenario)
    ended = [held for pending, held in at_flush if pending]
    assert ended and all(57 not in held for held in ended)
