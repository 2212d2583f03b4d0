"""The running steps' use the agent reports with its heartbeats (agent/step_usage.py): a
real batch job that fills memory and burns CPU is reported with its figures, the largest
kept once the job gives its memory back, and an empty report says once that it ended."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import os
import socket
import sys
from pathlib import Path
from typing import Any

from agent import rss_watch
from agent.containment import Containment
from agent.step_usage import CpuFrequency, StepUsageWatch, read_io, task_usage, weighted_frequency
from agent.steps import StepRunner
from cli import step_output
from cli.step_run import Session
from slurmwords import agent_messages as am
from slurmwords import step_io
from tests.agent.harness import FakeController, launch_object, run_with_agent
from tests.agent.test_step_runner import NODE, launch

# 64 MiB written (touched, so resident) for half a second of CPU, given back, then CPU to
# 1.6 s: the job's CPU time (the hog's and its wrapper's) reaches 1 s only once the memory
# is given back, whenever the reports fall.
HOG = (
    "import time\n"
    "data = b'\\x01' * (64 << 20)\n"
    "while time.process_time() < 0.5: pass\n"
    "del data\n"
    "while time.process_time() < 1.6: pass\n"
    "time.sleep({hold})\n"
)


def hog_script(hold: float) -> str:
    return f"#!{sys.executable}\n{HOG.format(hold=hold)}"


def real_report(tmp_path: Path, job_id: int, *, hold: float = 30.0) -> dict[str, Any]:
    """The first ``step_usage`` of a real agent running a real hog as ``job_id`` in which
    the job's CPU time is past one second (the raw message, as the controller receives it)."""
    found: dict[str, Any] = {}

    async def scenario(ctl: FakeController, agent: Any) -> None:
        await ctl.send({"type": "launch", "job": launch_object(job_id, hog_script(hold), tmp_path)})
        while True:
            msg = await ctl.expect("step_usage", timeout=20)
            tasks = [t for s in msg["steps"] if s["job_id"] == job_id for t in s["tasks"]]
            if tasks and tasks[0]["cpu_secs"] >= 1.0:
                found.update(msg)
                return

    run_with_agent(tmp_path, scenario, usage_interval=0.2)
    return found


def test_a_running_batch_job_is_reported_with_its_memory_and_cpu(tmp_path: Path) -> None:
    msg = real_report(tmp_path, 71)
    decoded = am.decode(msg, am.AGENT_MESSAGES)
    assert isinstance(decoded, am.StepUsage)
    assert decoded.nodes == ["node01", "node02"]
    (step,) = decoded.steps
    assert (step.job_id, step.step, step.node) == (71, "batch", "node01")
    (task,) = step.tasks
    assert task.task == 0 and task.pids
    # The 64 MiB were resident at their peak, and were given back before the report.
    assert task.max_rss_kb >= 64 * 1024 > task.rss_kb
    assert task.max_vmem_kb >= task.max_rss_kb
    assert task.cpu_secs >= 1.0
    # As root or as the job's own user the agent reads /proc/PID/io.
    assert task.read_bytes is not None and task.max_read_bytes is not None
    assert task.cpu_freq == CpuFrequency()(0)  # this host's one frequency, weighted or not


def test_the_report_says_once_that_the_step_ended_then_nothing(tmp_path: Path) -> None:
    async def scenario(ctl: FakeController, agent: Any) -> None:
        assert agent.usage.report(["node01"], 0.0) is None  # nothing ran: nothing said
        await ctl.send({"type": "launch", "job": launch_object(72, hog_script(0), tmp_path)})
        while not agent.usage.tasks:
            await asyncio.sleep(0.05)
        running = agent.usage.report(["node01"], 1.0)
        assert running is not None and [s.job_id for s in running.steps] == [72]
        await ctl.expect("completed", timeout=20)
        ended = agent.usage.report(["node01"], 2.0)
        assert ended is not None and ended.steps == []  # the controller drops its rows
        assert agent.usage.report(["node01"], 3.0) is None  # and nothing more until a step starts

    run_with_agent(tmp_path, scenario, usage_interval=0.2)


def test_a_tasks_largest_figures_are_kept_across_samples(tmp_path: Path) -> None:
    me = os.getpid()
    big = rss_watch.ProcStat(me, 1, me, rss_kb=900, cpu_ticks=100, vsize_kb=2000, majflt=7)
    small = rss_watch.ProcStat(me, 1, me, rss_kb=300, cpu_ticks=250, vsize_kb=1500, majflt=9)
    first = task_usage(3, [me], {me: big}, {me: (10, 20)}, None)
    later = task_usage(3, [me], {me: small}, {me: None}, first)
    assert (later.rss_kb, later.max_rss_kb, later.vmem_kb, later.max_vmem_kb) == (300, 900, 1500, 2000)
    assert (later.pages, later.max_pages) == (9, 9)
    assert later.cpu_secs == round(250 / rss_watch.CLOCK_TICKS, 2)
    # /proc/PID/io unreadable this time: no current figure, the largest read still stands.
    assert (later.read_bytes, later.max_read_bytes, later.max_write_bytes) == (None, 10, 20)
    assert read_io(me) is not None and read_io(2**30) is None


def test_an_srun_steps_tasks_are_reported_each_with_its_own_figures(tmp_path: Path) -> None:
    """A real step (agent/steps.py talking to a real srun session): each task's own
    processes, apart from each other and from any batch job."""
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.6: pass\n"

    async def go() -> list[am.StepUsage]:
        key = step_io.new_key()
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        session = Session(None, 5, {"step_id": 0, "num_tasks": 2, "nodes": [{"name": NODE, "tasks": [0, 1]}]},
                          key, {"input": "none"})  # fmt: skip
        session.out = step_output.TaskOutput(io.BytesIO(), io.BytesIO(), ntasks=2, label=True)
        containment = Containment(usable=sorted(os.sched_getaffinity(0)), interval=0.1)
        runner = StepRunner([NODE], containment, lambda _m: None, clock=lambda: 1.0, root_jobs=True)
        watch = StepUsageWatch(containment, runner)
        containment.watchers.append(watch)
        runner.launch(dataclasses.replace(launch(sock.getsockname()[1], key, tmp_path),
                                          argv=[sys.executable, "-c", burn]))  # fmt: skip
        srun = asyncio.create_task(session.run(sock))
        reports = []
        while not srun.done():
            containment.sample()  # what the containment's loop does every interval
            report = watch.report([NODE], 1.0)
            if report is not None and report.steps:
                reports.append(report)
            await asyncio.wait({srun}, timeout=0.1)
        return reports

    reports = asyncio.run(go())
    assert {(s.job_id, s.step, s.node) for r in reports for s in r.steps} == {(5, "0", NODE)}
    # Each task's latest figures (a task that ended first leaves the later reports).
    last = {t.task: t for r in reports for s in r.steps for t in s.tasks}
    assert sorted(last) == [0, 1]
    assert not set(last[0].pids) & set(last[1].pids)
    assert all(t.cpu_secs > 0 and t.max_rss_kb > 0 for t in last.values())


def test_the_cpu_frequency_is_read_as_slurms_jobacct_gather_reads_it(tmp_path: Path) -> None:
    proc, sys_root = tmp_path / "proc", tmp_path / "sys"
    proc.mkdir()
    cpuinfo = "processor\t: 0\ncpu MHz\t\t: 2596.126\n\nprocessor\t: 1\ncpu MHz\t\t: 1200.0\n"
    (proc / "cpuinfo").write_text(cpuinfo)
    scaled = sys_root / "devices/system/cpu/cpu1/cpufreq"
    scaled.mkdir(parents=True)
    (scaled / "cpuinfo_cur_freq").write_text("2100000\n")
    freq = CpuFrequency(str(proc), str(sys_root))
    assert freq(1) == 2100000  # scaling on that CPU: its kHz
    assert freq(0) == 2596  # none: /proc/cpuinfo's first "cpu MHz", whole MHz
    assert freq(1) == 2596  # and kept from then on, as Slurm keeps it
    # 1 s at 1000, then 3 s at 2000: 1750; before any CPU time, the one met now.
    assert weighted_frequency(1000 * 1000 + 3000 * 2000, 4000, 2000) == 1750
    assert weighted_frequency(0, 0, 2596) == 2596
