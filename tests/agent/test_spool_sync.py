"""The spool's completions: fsynced together, each before its rename (agent/spool.py,
#18 benchmark: one fsync after another held the agent's loop ~3.5 ms per completion)."""

from __future__ import annotations

import os
import threading

import pytest

from agent import spool as spool_module
from agent.spool import Completion, Spool


def completions(n: int, first: int = 1) -> list[Completion]:
    return [
        Completion(
            job_id=first + i, node=f"node{i % 3:02d}", exit_code=i % 2, signal=0, end_time=100.0 + i, seq=i
        )
        for i in range(n)
    ]


def test_a_batch_of_completions_is_fsynced_concurrently_and_renamed_after(tmp_path, monkeypatch):
    spool = Spool(tmp_path / "spool")
    batch = completions(4)
    # Two file fsyncs must be under way at once to pass this barrier: one after another,
    # the first waits alone and the barrier breaks.
    together = threading.Barrier(2, timeout=5)
    real_fsync = os.fsync
    synced_before_rename: list[bool] = []

    def fsync(fd: int) -> None:
        if fd != spool._done_fd:
            name = os.readlink(f"/proc/self/fd/{fd}")
            synced_before_rename.append(os.path.basename(name).startswith("."))
            together.wait()
        real_fsync(fd)

    monkeypatch.setattr(spool_module.os, "fsync", fsync)
    spool.write_completions(batch)
    assert synced_before_rename == [True] * 4  # each file still had its temporary name
    assert spool.completions() == {c.job_id: c for c in batch}
    assert sorted(p.name for p in (tmp_path / "spool" / "done").iterdir()) == [
        "1.json",
        "2.json",
        "3.json",
        "4.json",
    ]


def test_more_completions_than_a_group_are_all_written(tmp_path):
    spool = Spool(tmp_path / "spool")
    batch = completions(spool_module._SYNC_GROUP * 2 + 3)
    spool.write_completions(batch)
    assert spool.completions() == {c.job_id: c for c in batch}


def test_a_failed_fsync_renames_nothing_and_raises(tmp_path, monkeypatch):
    spool = Spool(tmp_path / "spool")
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".2.json.tmp"):
            raise OSError(5, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(spool_module.os, "fsync", fsync)
    with pytest.raises(OSError, match="Input/output error"):
        spool.write_completions(completions(3))
    assert not any(p.name.endswith(".json") and not p.name.startswith(".") for p in spool.done_dir.iterdir())
