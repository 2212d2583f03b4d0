"""The spool's completions: fsynced together, each before its rename (agent/spool.py,
#18 benchmark: one fsync after another held the agent's loop ~3.5 ms per completion),
and its records' dicts as dataclasses.asdict gives them."""

from __future__ import annotations

import dataclasses
import json
import os
import threading

import pytest

from agent import spool as spool_module
from agent.spool import Completion, JobState, Spool


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


@pytest.mark.parametrize(
    "record",
    [
        *completions(2),
        Completion(
            job_id=9,
            node="n",
            exit_code=0,
            signal=9,
            end_time=1.5,
            seq=3,
            run=2,
            out_of_memory=True,
            max_rss_kb=2048,
            total_cpu_secs=0.25,
        ),
        JobState(
            job_id=5,
            node="node01",
            pid=0,
            pgid=0,
            started=1.0,
            start_ticks=7,
            start_ticks_max=0,
            status_file="/s/5/status",
            run=1,
            launch="launch=5.1.ab",
        ),
    ],
)
def test_records_serialize_as_asdict_does(record, tmp_path):
    assert spool_module._flat(record) == dataclasses.asdict(record)
    assert list(spool_module._flat(record)) == list(dataclasses.asdict(record))  # same key order
    if isinstance(record, JobState):
        spool = Spool(tmp_path / "spool")
        spool.write_state(record)
        assert json.loads((spool.state_dir / "5.json").read_bytes()) == dataclasses.asdict(record)
