"""Containment's pieces (#16 point 4): CPU id picking, the RSS sum over a job's processes
read from /proc-like directories, and the watcher's out-of-memory decision on a real process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent import cpusets, rss_watch
from agent.cgroups import CgroupTree
from agent.containment import Containment, job_limits


def test_ids_are_the_lowest_that_no_other_job_of_the_node_holds() -> None:
    assert cpusets.pick_cpu_ids([], 2) == (0, 1)
    assert cpusets.pick_cpu_ids([(0, 1), (3,)], 3) == (2, 4, 5)
    book = cpusets.CpuBook()
    first = book.take(1, "node01", 2)
    second = book.take(2, "node01", 1)
    elsewhere = book.take(3, "node02", 1)
    assert (first, second, elsewhere) == ((0, 1), (2,), (0,))
    assert book.take(1, "node01", 2) == first  # asked again (a step on the node): the same ids
    assert book.take(1, "node02", 2) == (1, 2)  # the job on another node of this agent
    book.release(1)
    assert book.take(4, "node01", 3) == (0, 1, 3)
    assert book.take(5, "node02", 1) == (1,)


def test_ids_map_onto_the_hosts_usable_cpus_modulo_their_number() -> None:
    # A node declaring 4 CPUs on a host whose agent may use CPUs 4 and 6.
    assert cpusets.host_cpus((0, 1), (4, 6)) == (4, 6)
    assert cpusets.host_cpus((2, 3), (4, 6)) == (4, 6)
    assert cpusets.host_cpus((1, 2), (4, 6)) == (4, 6)
    assert cpusets.folds((0, 1), (4, 6)) is False
    assert cpusets.folds((1, 2), (4, 6)) is True
    with pytest.raises(ValueError, match="no usable CPU"):
        cpusets.host_cpus((0,), ())


def test_cpu_lists_are_written_and_read_as_the_kernel_does() -> None:
    assert cpusets.cpu_list([5, 0, 1, 2, 7, 8]) == "0-2,5,7-8"
    assert cpusets.parse_cpu_list("0-2,5,7-8\n") == {0, 1, 2, 5, 7, 8}
    assert cpusets.parse_cpu_list("") == set()


def _stat(pid: int, comm: str, ppid: int, sid: int, ticks: tuple[int, ...], *, rss_pages: int) -> str:
    times = " ".join(map(str, ticks))
    # Fields 3.. of proc(5): state ppid pgrp session tty tpgid flags minflt cminflt majflt
    # cmajflt, utime stime cutime cstime, priority nice threads itrealvalue starttime vsize rss
    rest = f"S {ppid} {sid} {sid} 0 -1 0 0 0 0 0 {times} 20 0 1 0 100 1000 {rss_pages}"
    return f"{pid} ({comm}) {rest} 0 0 0\n"


def test_a_jobs_rss_and_cpu_time_sum_its_tree_and_its_session(tmp_path: Path) -> None:
    procs = {
        100: _stat(100, "fsched-job", 1, 100, (1, 1, 5, 2), rss_pages=10),  # the wrapper, session leader
        101: _stat(101, "my script) S 1", 100, 100, (3, 0, 0, 0), rss_pages=20),  # a name to trip parsers
        102: _stat(102, "daemon", 101, 102, (0, 4, 0, 0), rss_pages=30),  # setsid'd: still a descendant
        103: _stat(103, "orphan", 1, 100, (2, 2, 0, 0), rss_pages=40),  # reparented, still in the session
        200: _stat(200, "other job", 1, 200, (50, 50, 0, 0), rss_pages=999),
    }
    for pid, text in procs.items():
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "stat").write_text(text)
    (tmp_path / "self").mkdir()  # not a pid: skipped
    (tmp_path / "300").mkdir()  # gone between the listing and the read: skipped
    found = rss_watch.scan(str(tmp_path))
    assert sorted(found) == [100, 101, 102, 103, 200]
    usage = rss_watch.job_usage(found, 100)
    assert usage.pids == (100, 101, 102, 103)
    assert usage.rss_kb == (10 + 20 + 30 + 40) * rss_watch.PAGE_KB
    assert usage.cpu_ticks == (1 + 1 + 5 + 2) + 3 + 4 + (2 + 2)
    assert rss_watch.job_usage(found, 555).pids == ()


def test_over_memory_is_strictly_above_the_limit_and_no_limit_never_is() -> None:
    assert rss_watch.over_memory(50 * 1024 + 1, 50)
    assert not rss_watch.over_memory(50 * 1024, 50)
    assert not rss_watch.over_memory(10**9, None)
    assert not rss_watch.over_memory(10**9, 0)


def test_launch_limits_come_from_the_launch_object() -> None:
    assert job_limits({"cpus_on_node": 3, "mem_on_node": 512}) == (3, 512)
    assert job_limits({"cpus_on_node": 2, "mem_on_node": 0}) == (2, None)
    assert job_limits({"cpus_on_node": None}) == (1, None)  # a controller of an earlier release


def _spawn(code: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", code], start_new_session=True)


def test_the_watcher_kills_a_job_over_its_memory_and_reports_out_of_memory(tmp_path: Path) -> None:
    c = Containment(record_dir=tmp_path / "contain", usable=sorted(os.sched_getaffinity(0)))
    err = tmp_path / "err"
    fd = os.open(err, os.O_WRONLY | os.O_CREAT, 0o600)
    with c.spawning(7, "node01", 1, 20) as held:
        proc = _spawn("import time; x = b'x' * (80 << 20); print('held', flush=True); time.sleep(30)")
        c.started(held, proc.pid, fd)
    os.close(fd)
    try:
        deadline = time.monotonic() + 20
        while proc.poll() is None and time.monotonic() < deadline:
            c.sample()
            time.sleep(0.05)
        assert proc.poll() == -signal.SIGKILL
        usage = c.ended(7, proc.pid)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    assert usage.out_of_memory
    assert usage.max_rss_kb is not None and usage.max_rss_kb > 20 * 1024
    assert "slurmstepd: error: StepId=7.batch exceeded memory limit (" in err.read_text()
    assert ", being killed" in err.read_text()
    assert not (tmp_path / "contain" / "7.json").exists()  # its record goes with it


def test_a_job_within_its_memory_runs_on_and_its_cpu_time_is_reported(tmp_path: Path) -> None:
    c = Containment(record_dir=tmp_path / "contain", usable=sorted(os.sched_getaffinity(0)))
    code = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.5: pass\n"
    with c.spawning(8, "node01", 1, 500) as held:
        proc = _spawn(code)
        c.started(held, proc.pid, None)
    assert (tmp_path / "contain" / "8.json").exists()
    while proc.poll() is None:
        c.sample()
        time.sleep(0.05)
    # poll() reaped it: the zombie's own reading is gone, the samples remain.
    usage = c.ended(8, 0)
    assert proc.returncode == 0 and not usage.out_of_memory
    assert usage.total_cpu_secs is not None and usage.total_cpu_secs > 0


def test_the_fork_is_bound_to_the_jobs_cpus_and_the_agent_thread_is_not(tmp_path: Path) -> None:
    usable = sorted(os.sched_getaffinity(0))
    c = Containment(usable=usable)
    before = os.sched_getaffinity(0)
    with c.spawning(1, "node01", 1, None) as first:
        one = _spawn("import time; time.sleep(5)")
        c.started(first, one.pid, None)
    assert os.sched_getaffinity(0) == before
    with c.spawning(2, "node01", 1, None) as second:
        two = _spawn("import time; time.sleep(5)")
        c.started(second, two.pid, None)
    try:
        assert os.sched_getaffinity(one.pid) == {usable[0]}
        assert os.sched_getaffinity(two.pid) == {usable[1 % len(usable)]}
        if len(usable) > 1:
            assert not os.sched_getaffinity(one.pid) & os.sched_getaffinity(two.pid)
    finally:
        for p in (one, two):
            p.kill()
            p.wait()


def test_an_agent_restarted_on_the_spool_takes_back_the_ids_of_the_jobs_it_adopts(tmp_path: Path) -> None:
    records = tmp_path / "contain"
    first = Containment(record_dir=records, usable=[0, 1, 2, 3])
    with first.spawning(5, "node01", 2, None) as held:
        proc = _spawn("import time; time.sleep(10)")
        first.started(held, proc.pid, None)
    try:
        second = Containment(record_dir=records, usable=[0, 1, 2, 3])
        second.adopted(5, proc.pid)
        assert second.book.ids(5, "node01") == (0, 1)
        assert second.book.take(6, "node01", 1) == (2,)  # not one of the adopted job's
        # A process caught in its exec has no memory to read yet: sample until it has.
        for _ in range(50):
            second.sample()
            if second.jobs[5].max_rss_kb > 0:
                break
            time.sleep(0.05)
        assert second.jobs[5].max_rss_kb > 0
    finally:
        proc.kill()
        proc.wait()


def test_the_start_up_line_says_why_there_is_no_cgroup(tmp_path: Path) -> None:
    (tmp_path / "cgroup.controllers").write_text("cpu io pids\n")
    tree, why = CgroupTree.prepare("scope", mount=tmp_path)
    assert tree is None
    if os.geteuid() == 0:
        assert why == f"cgroup v2 at {tmp_path} has no cpuset and no memory controller (bound to cgroup v1?)"
    else:
        assert why == "not root"
    line = Containment(usable=[0, 1]).describe(why)
    assert line.startswith("containment: CPUs 0-1 by sched_setaffinity; no cgroup (")
    assert line.endswith("memory by the RSS watcher every 1s (OverMemoryKill)")


def test_a_jobs_steps_get_its_own_cpus_and_they_are_freed_with_it() -> None:
    c = Containment(usable=[0, 1, 2, 3])
    with c.spawning(1, "node01", 2, None):
        pass
    assert c.step_cpus(1, "node01", 2) == (0, 1)
    assert c.step_cpus(2, "node01", 1) == (2,)
    assert c.step_cpus(1, "node02", 1) == (0,)  # another node of the job, served here too
    c.ended(1, 0)
    assert c.step_cpus(3, "node01", 2) == (0, 1)
    assert c.step_cpus(3, "node02", 1) == (0,)
