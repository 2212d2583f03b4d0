"""The agent tells the controller its starts in batches (#11 point 4): the starts of one
launch burst share one ``started_batch``, sent before the ends of the same flush, where
each start was a message (and a controller transaction) of its own."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

from agent.jobs import FLUSH_WINDOW, JobManager
from agent.spool import Spool
from slurmwords import agent_messages as am
from tests.agent.harness import launch_object

Scenario = Callable[[JobManager, list[am.Message]], Awaitable[None]]


def run(tmp_path: Path, scenario: Scenario) -> list[am.Message]:
    """What a real JobManager emits while ``scenario`` runs (its jobs killed at the end)."""
    sent: list[am.Message] = []

    async def main() -> None:
        spool = Spool(tmp_path / "spool")
        jobs = JobManager(spool, ["node01"], sent.append)
        try:
            await scenario(jobs, sent)
        finally:
            for job in list(jobs._running.values()):
                os.killpg(job.state.pgid, 9)
            jobs.close()
            spool.close()

    asyncio.run(main())
    return sent


async def until(done: Callable[[], bool]) -> None:
    async with asyncio.timeout(10):
        while not done():
            await asyncio.sleep(FLUSH_WINDOW)


def test_a_launch_burst_is_told_started_in_one_message(tmp_path: Path) -> None:
    async def scenario(jobs: JobManager, sent: list[am.Message]) -> None:
        for job_id in (41, 42, 43):  # in one loop iteration, as one pass's launches arrive
            jobs.launch(launch_object(job_id, "#!/bin/bash\nsleep 30\n", tmp_path))
        assert sent == []  # told at the flush, not one by one
        await until(lambda: bool(sent))
        await asyncio.sleep(3 * FLUSH_WINDOW)

    sent = run(tmp_path, scenario)
    assert len(sent) == 1 and isinstance(sent[0], am.StartedBatch)
    started = sent[0].started
    assert [(s.job_id, s.node, s.run) for s in started] == [(j, "node01", 0) for j in (41, 42, 43)]
    assert all(s.pid > 0 and s.time is not None for s in started)


def test_a_lone_start_is_a_plain_started_and_comes_before_its_end(tmp_path: Path) -> None:
    async def scenario(jobs: JobManager, sent: list[am.Message]) -> None:
        jobs.launch(launch_object(44, "#!/bin/bash\nexit 3\n", tmp_path, run=2))
        await until(lambda: any(isinstance(m, am.Completed) for m in sent))

    sent = run(tmp_path, scenario)
    kinds = [type(m) for m in sent]
    assert kinds.index(am.Started) < kinds.index(am.Completed)
    start = next(m for m in sent if isinstance(m, am.Started))
    end = next(m for m in sent if isinstance(m, am.Completed))
    assert (start.job_id, start.run, end.job_id, end.run, end.exit_code) == (44, 2, 44, 2, 3)
