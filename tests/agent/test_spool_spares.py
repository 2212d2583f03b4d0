"""The spool's spare files (agent/spool.py): an acknowledged job's state and completion
files are written again for later jobs instead of new files being made, with nothing of
the earlier content left, never read as records, and gone when an agent starts; a job's
directory (an agent not root) is kept for the next job, its pid and status emptied."""

from __future__ import annotations

import asyncio
import os
import pwd
from pathlib import Path

import pytest

from agent import spool as spool_module
from agent.jobs import FLUSH_WINDOW, JobManager
from agent.spool import Completion, JobState, Spool
from slurmwords import agent_messages as am
from tests.agent.harness import launch_object


def intent(job_id: int, launch: str = "launch=x") -> JobState:
    return JobState(
        job_id=job_id, node="node01", pid=0, pgid=0, started=1.0, start_ticks=5, start_ticks_max=0,
        status_file=f"/s/{job_id}/status", run=0, launch=launch,
    )  # fmt: skip


def completion(job_id: int, **over: object) -> Completion:
    fields = {"job_id": job_id, "node": "node01", "exit_code": 0, "signal": 0, "end_time": 2.0, "seq": job_id}
    return Completion(**{**fields, **over})  # type: ignore[arg-type]


def inode(path: Path) -> int:
    return os.stat(path).st_ino


def test_an_acknowledged_jobs_files_hold_the_next_jobs_records(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool")
    # Long records first, so that a shorter one written over them would show any leftover.
    os.close(spool.begin_launch(intent(1, launch="launch=" + "x" * 300)))
    spool.write_completions([completion(1, node="n" * 200, max_rss_kb=123456, total_cpu_secs=9.5)])
    state_ino, done_ino = inode(spool.state_dir / "1.json"), inode(spool.done_dir / "1.json")
    spool.remove_job(1)

    fd = spool.begin_launch(intent(2))
    spool.record_process(fd, intent(2).with_process(77, 5, 6))
    spool.write_completions([completion(3)])
    assert inode(spool.state_dir / "2.json") == state_ino  # the same files, written again
    assert inode(spool.done_dir / "3.json") == done_ino
    assert spool.states() == [intent(2).with_process(77, 5, 6)]
    assert spool.completions() == {3: completion(3)}


def test_a_spare_is_written_over_never_emptied_first(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A launch's and a completion's records and a kept directory's script go into spares
    without ``O_TRUNC``: on ext4 emptying a file frees its block and makes its close write
    the new data at once (spool._overwrite), 1.7-2.9 ms of the agent's loop a file here.
    The only truncations left are the kept directory's pid and status, emptied on ack."""
    spool = Spool(tmp_path / "spool")
    os.close(spool.begin_launch(intent(1, launch="launch=" + "x" * 300)))
    os.close(spool.prepare_job(1, "#!/bin/bash\n" + "echo long\n" * 50, None))
    spool.write_completions([completion(1, node="n" * 200)])
    spool.remove_job(1)
    opened: list[int] = []
    real_open = os.open

    def counting_open(path, flags, *args, **kwargs):  # type: ignore[no-untyped-def]
        opened.append(flags)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", counting_open)
    fd = spool.begin_launch(intent(2))
    spool.record_process(fd, intent(2).with_process(77, 5, 6))
    os.close(spool.prepare_job(2, "#!/bin/bash\ntrue\n", None))
    spool.write_completions([completion(2)])
    monkeypatch.undo()
    assert opened and not [flags for flags in opened if flags & os.O_TRUNC]
    # Written over a longer content: nothing of it is left.
    assert spool.states() == [intent(2).with_process(77, 5, 6)]
    assert (spool.job_dir(2) / "script").read_text() == "#!/bin/bash\ntrue\n"
    assert spool.completions() == {2: completion(2)}


def test_an_agent_starting_reads_no_spare_as_a_record_and_removes_them(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool")
    for job_id in (1, 2, 3):
        os.close(spool.begin_launch(intent(job_id)))
    spool.write_completions([completion(1), completion(2)])
    spool.remove_job(1)
    spool.remove_job(2)
    spares = [
        p.name for d in (spool.state_dir, spool.done_dir) for p in d.iterdir() if p.name.startswith(".")
    ]
    assert len(spares) == 4
    # An agent killed now: the next one finds job 3's intent and nothing of jobs 1 and 2.
    again = Spool(tmp_path / "spool")
    assert again.completions() == {}
    assert again.launches() == [intent(3)]
    assert [p.name for d in (again.state_dir, again.done_dir) for p in d.iterdir()] == ["3.json"]


def test_spares_are_kept_up_to_a_bound(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(spool_module, "_SPARES_MAX", 3)
    spool = Spool(tmp_path / "spool")
    spool.write_completions([completion(j) for j in range(10)])
    for j in range(10):
        spool.remove_job(j)
    assert len(list(spool.done_dir.iterdir())) == 3
    spool.write_completions([completion(j) for j in range(20, 25)])  # three spares, two new files
    assert spool.completions() == {j: completion(j) for j in range(20, 25)}
    assert len(list(spool.done_dir.iterdir())) == 5


def test_a_job_directory_is_kept_for_the_next_job_with_its_pid_and_status_emptied(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool")
    os.close(spool.prepare_job(1, "#!/bin/bash\n" + "echo long\n" * 50, None))
    d = spool.job_dir(1)
    (d / "pid").write_text("4242\n")
    (d / "status").write_text("3\n")
    ino = inode(d)
    spool.remove_job(1)
    assert not d.exists()

    os.close(spool.prepare_job(2, "#!/bin/bash\ntrue\n", None))
    again = spool.job_dir(2)
    assert inode(again) == ino
    assert (again / "script").read_text() == "#!/bin/bash\ntrue\n"
    assert (again / "pid").read_bytes() == b"" and (again / "status").read_bytes() == b""
    assert spool.read_pid(2) is None and spool.read_status(spool.status_path(2)) is None


def test_a_job_directory_with_files_of_the_jobs_own_is_removed_not_kept(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool")
    os.close(spool.prepare_job(1, "#!/bin/bash\ntrue\n", None))
    (spool.job_dir(1) / "left-behind").write_text("x")
    spool.remove_job(1)
    assert list(spool.jobs_dir.iterdir()) == []
    os.close(spool.prepare_job(2, "#!/bin/bash\ntrue\n", None))
    assert sorted(p.name for p in spool.job_dir(2).iterdir()) == ["script"]


def test_a_job_killed_before_its_status_in_a_kept_directory_is_not_read_with_the_last_ones(
    tmp_path: Path,
) -> None:
    """The first job leaves status 3; the second, in the same directory, kills its own
    wrapper before the wrapper writes any: it must end killed by signal 9, not exit 3."""
    sent: list[am.Message] = []

    async def ended(job_id: int) -> am.Completed:
        async with asyncio.timeout(10):
            while True:
                for m in sent:
                    if isinstance(m, am.Completed) and m.job_id == job_id:
                        return m
                await asyncio.sleep(FLUSH_WINDOW)

    async def main() -> None:
        spool = Spool(tmp_path / "spool")
        jobs = JobManager(spool, ["node01"], sent.append)
        try:
            jobs.launch(launch_object(1, "#!/bin/bash\nexit 3\n", tmp_path))
            assert (await ended(1)).exit_code == 3
            ino = inode(spool.job_dir(1))
            jobs.ack([1])
            jobs.launch(launch_object(2, "#!/bin/bash\nkill -9 $PPID\nsleep 5\n", tmp_path))
            assert inode(spool.job_dir(2)) == ino  # the kept directory
            done = await ended(2)
            assert (done.exit_code, done.signal) == (0, 9)
        finally:
            jobs.close()
            spool.close()

    asyncio.run(main())


@pytest.mark.skipif(os.geteuid() != 0, reason="a root agent's job of another user")
def test_a_directory_another_user_owned_is_never_kept(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool")
    nobody = pwd.getpwnam("nobody")
    os.close(spool.prepare_job(1, "#!/bin/bash\ntrue\n", (nobody.pw_uid, nobody.pw_gid)))
    spool.remove_job(1)
    assert list(spool.jobs_dir.iterdir()) == []  # removed, no spare
