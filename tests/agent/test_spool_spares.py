"""The spool's spare files (agent/spool.py): an acknowledged job's state and completion
files are written again for later jobs instead of new files being made, with nothing of
the earlier content left, never read as records, and gone when an agent starts."""

from __future__ import annotations

import os
from pathlib import Path

from agent import spool as spool_module
from agent.spool import Completion, JobState, Spool


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
