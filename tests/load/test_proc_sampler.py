"""The agent's reader of fed /proc files (agent.load_sampler): a first read that sets the
averages' start, samples after it, and files that go missing and come back."""

from __future__ import annotations

import logging

from agent.load_sampler import ProcLoad

MEMINFO = "MemFree: 1024 kB\nMemAvailable: 2097152 kB\n"
STAT = "cpu  {busy} 0 0 {idle} 0 0 0\nprocs_running 5\nprocs_blocked 1\n"


def test_reads_the_files_under_its_root(tmp_path):
    (tmp_path / "meminfo").write_text(MEMINFO)
    (tmp_path / "stat").write_text(STAT.format(busy=0, idle=0))
    load = ProcLoad(str(tmp_path))
    first = load.sample()
    assert (first.mem, first.ut, first.r1m, first.run_queue) == (2048, 0.0, 0.0, 5)  # E_0 = 0
    (tmp_path / "stat").write_text(STAT.format(busy=100, idle=0))
    second = load.sample()
    assert round(second.ut, 3) == 28.347 and second.r15s > 0
    assert load.latest == second


def test_a_missing_file_is_logged_once_and_the_reads_resume(tmp_path, caplog):
    load = ProcLoad(str(tmp_path))
    with caplog.at_level(logging.WARNING, logger="agent.load"):
        assert load.sample() is None
        assert load.sample() is None
    assert len([r for r in caplog.records if "load indices unavailable" in r.message]) == 1
    (tmp_path / "meminfo").write_text(MEMINFO)
    (tmp_path / "stat").write_text(STAT.format(busy=0, idle=0))
    assert load.sample().mem == 2048
    (tmp_path / "stat").write_text("cpu 1 2\n")  # not a stat file
    assert load.sample() is None and load.latest is None
