"""A launch's state is one file (agent/spool.py): the intent's line renamed into place,
the started process's line appended through the same descriptor, with the containment's
record of the job's CPUs in it (no ``contain/`` file). What an agent killed at any point
of that leaves behind is read back as the intent or as the process, never lost."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from agent.containment import Containment
from agent.jobs import FLUSH_WINDOW, JobManager
from agent.spool import JobState, Spool
from tests.agent.harness import launch_object

INTENT = JobState(
    job_id=9, node="node01", pid=0, pgid=0, started=1.0, start_ticks=5, start_ticks_max=0,
    status_file="/s/9/status", run=1, launch="launch=9.1.ab",
)  # fmt: skip
CONTAIN = {"node": "node01", "ids": [2, 3], "mem_mb": None, "cgroup": False}


def test_the_process_line_appended_to_the_intent_is_the_jobs_state(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool")
    fd = spool.begin_launch(INTENT)
    assert spool.launches() == [INTENT]  # in place before the fork
    started = INTENT.with_process(4242, 5, 6, CONTAIN)
    spool.record_process(fd, started)
    assert spool.states() == [started] and spool.launches() == []
    assert [p.name for p in spool.state_dir.iterdir()] == ["9.json"]  # one file, no temporary
    lines = (spool.state_dir / "9.json").read_bytes().splitlines()
    assert [json.loads(line)["pid"] for line in lines] == [0, 4242]


def test_an_append_cut_short_by_a_kill_leaves_the_intent(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool")
    os.close(spool.begin_launch(INTENT))
    whole = json.dumps({**INTENT.__dict__, "pid": 4242, "pgid": 4242}).encode()
    path = spool.state_dir / "9.json"
    intent_line = path.read_bytes()
    for cut in (1, len(whole) // 2, len(whole) - 1):
        path.write_bytes(intent_line + whole[:cut])
        # The intent counts: recovery finds the wrapper by its pid file or in /proc.
        assert spool.launches() == [INTENT] and spool.states() == []


def test_an_older_agents_state_of_one_object_without_a_newline_is_read(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool")
    started = INTENT.with_process(4242, 5, 6)
    fields = {k: v for k, v in started.__dict__.items() if k != "contain"}  # before the field
    (spool.state_dir / "9.json").write_text(json.dumps(fields))
    assert spool.states() == [started]


def test_a_state_file_without_a_whole_record_is_removed(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool")
    (spool.state_dir / "9.json").write_bytes(b'{"job_id": 9, "no')
    assert spool.states() == [] and spool.launches() == []
    assert not (spool.state_dir / "9.json").exists()


def test_an_agent_restarted_on_the_spool_takes_back_the_cpus_from_the_jobs_state(tmp_path: Path) -> None:
    root = tmp_path / "spool"

    async def main() -> None:
        first_spool = Spool(root)
        first = JobManager(
            first_spool, ["node01"], lambda m: None,
            containment=Containment(record_dir=root / "contain", usable=[0, 1, 2, 3]),
        )  # fmt: skip
        first.launch(launch_object(5, "#!/bin/bash\nsleep 30\n", tmp_path, cpus_on_node=1))
        first.launch(launch_object(6, "#!/bin/bash\nsleep 30\n", tmp_path, cpus_on_node=2))
        await asyncio.sleep(3 * FLUSH_WINDOW)
        pids = {job_id: job.state.pid for job_id, job in first._running.items()}
        assert sorted(pids) == [5, 6]
        assert list((root / "contain").iterdir()) == []  # the record is in the state
        first.close()  # the jobs run on, for the next agent
        first_spool.close()

        second_spool = Spool(root)
        containment = Containment(record_dir=root / "contain", usable=[0, 1, 2, 3])
        second = JobManager(second_spool, ["node01"], lambda m: None, containment=containment)
        try:
            assert second.recover() == 2
            assert containment.book.ids(5, "node01") == (0,)
            assert containment.book.ids(6, "node01") == (1, 2)
            assert containment.book.take(7, "node01", 1) == (3,)  # none of the adopted jobs'
        finally:
            for pid in pids.values():
                os.killpg(pid, 9)
            await asyncio.sleep(3 * FLUSH_WINDOW)
            second.close()
            second_spool.close()

    asyncio.run(main())
