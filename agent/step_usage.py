"""The running steps' use, task by task, for sstat (docs/agent-protocol.md, ``step_usage``).

The containment's walk of /proc (agent/rss_watch.py, every ``--usage-interval`` seconds)
is handed to :meth:`StepUsageWatch.observe`, which reads each task's processes out of it:
a batch job's one task (task 0, the wrapper's tree and session) and each srun task this
agent started (its own tree and session). Like Slurm's jobacct_gather it keeps, per task,
the current value and the largest seen since the task started: RSS, virtual size and
major page faults from ``/proc/PID/stat``, CPU time (user + system, of the processes and
the children they reaped), bytes read and written (``rchar``/``wchar`` of
``/proc/PID/io``, where the agent may read it), and the CPU frequency that CPU time ran
at, weighted by it (:class:`CpuFrequency`).

The report goes with each heartbeat rather than on request: the controller answers sstat
from what it holds, with no round trip to a node inside an API request, and Slurm's own
figures are as old as its last poll (JobAcctGatherFrequency) too. A report holds every
step running on the agent's nodes, so a step missing from it has ended; once nothing runs,
one empty report says so and the agent falls silent until a step starts.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from agent import rss_watch
from slurmwords import agent_messages as am

if TYPE_CHECKING:
    from agent.containment import Containment
    from agent.steps import StepRunner

BATCH = "batch"
TaskKey = tuple[int, str, str, int]  # job, step ("batch" or its number), node, task


def read_io(pid: int, proc_root: str = "/proc") -> tuple[int, int] | None:
    """``rchar`` and ``wchar`` of ``/proc/PID/io`` (None: unreadable, as another user's is)."""
    try:
        with open(f"{proc_root}/{pid}/io", "rb") as f:
            data = f.read()
    except OSError:
        return None
    found: dict[bytes, int] = {}
    for line in data.splitlines():
        name, _, value = line.partition(b":")
        if name in (b"rchar", b"wchar"):
            with contextlib.suppress(ValueError):
                found[name] = int(value)
    if len(found) != 2:
        return None
    return found[b"rchar"], found[b"wchar"]


class CpuFrequency:
    """The frequency of a CPU as Slurm's jobacct_gather reads it: the CPU's
    ``cpufreq/cpuinfo_cur_freq`` (kHz) while the host scales frequencies; otherwise the
    first ``cpu MHz`` of /proc/cpuinfo (MHz), read once and kept, as Slurm keeps it."""

    def __init__(self, proc_root: str = "/proc", sys_root: str = "/sys") -> None:
        self.proc_root = proc_root
        self.sys_root = sys_root
        self.static: int | None = None

    def __call__(self, cpu: int) -> int:
        if self.static is not None:
            return self.static
        if cpu >= 0:
            try:
                with open(f"{self.sys_root}/devices/system/cpu/cpu{cpu}/cpufreq/cpuinfo_cur_freq", "rb") as f:
                    return int(f.read().split()[0])
            except (OSError, ValueError, IndexError):
                pass
        self.static = 0
        with contextlib.suppress(OSError), open(f"{self.proc_root}/cpuinfo", "rb") as f:
            for line in f:
                name, _, value = line.partition(b":")
                if name.strip() == b"cpu MHz":
                    with contextlib.suppress(ValueError):
                        self.static = int(float(value))
                    break
        return self.static


def weighted_frequency(weight: int, cpu_ms: int, freq: int) -> int:
    """Slurm's ``_update_weighted_freq``: the frequencies met, weighted by the CPU time
    spent at each (``weight``: their sum of products); the one met now before any CPU time."""
    return weight // cpu_ms if cpu_ms else freq


def _larger(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


def task_usage(
    task: int,
    pids: Iterable[int],
    procs: Mapping[int, rss_watch.ProcStat],
    io: Mapping[int, tuple[int, int] | None],
    before: am.TaskUsage | None,
) -> am.TaskUsage:
    """One task's sums over ``pids`` now, its maxima carried over from ``before``."""
    members = [procs[p] for p in pids if p in procs]
    rss = sum(p.rss_kb for p in members)
    vmem = sum(p.vsize_kb for p in members)
    pages = sum(p.majflt for p in members)
    cpu = round(sum(p.cpu_ticks for p in members) / rss_watch.CLOCK_TICKS, 2)
    counts = [io.get(p.pid) for p in members]
    readable = [c for c in counts if c is not None]
    read = sum(c[0] for c in readable) if readable else None
    written = sum(c[1] for c in readable) if readable else None
    if before is not None:
        # CPU time only grows while a process lives; one that ended took its time with it.
        cpu = max(cpu, before.cpu_secs)
    return am.TaskUsage(
        task=task,
        pids=[p.pid for p in members],
        rss_kb=rss,
        max_rss_kb=max(rss, before.max_rss_kb if before else 0),
        vmem_kb=vmem,
        max_vmem_kb=max(vmem, before.max_vmem_kb if before else 0),
        pages=pages,
        max_pages=max(pages, before.max_pages if before else 0),
        cpu_secs=cpu,
        read_bytes=read,
        max_read_bytes=_larger(read, before.max_read_bytes if before else None),
        write_bytes=written,
        max_write_bytes=_larger(written, before.max_write_bytes if before else None),
    )


class StepUsageWatch:
    """Each running task's use, kept from the containment's walks of /proc."""

    def __init__(self, containment: Containment, steps: StepRunner, *, proc_root: str = "/proc") -> None:
        self.containment = containment
        self.steps = steps
        self.proc_root = proc_root
        self.tasks: dict[TaskKey, am.TaskUsage] = {}
        self.frequency = CpuFrequency(proc_root)
        self._freq_weight: dict[TaskKey, int] = {}  # CPU ms times frequency, summed over samples
        self._reported_any = False

    def _roots(self) -> dict[TaskKey, int]:
        """Every running task and the pid its processes descend from."""
        roots: dict[TaskKey, int] = {}
        for job in self.containment.jobs.values():
            if job.pid > 0:
                roots[(job.job_id, BATCH, job.node, 0)] = job.pid
        for (job_id, step_id, node), step in list(self.steps.running.items()):
            for t in step.tasks:
                if t.popen.returncode is None:
                    roots[(job_id, str(step_id), node, t.task)] = t.popen.pid
        return roots

    def busy(self) -> bool:
        """Whether a step task runs (the containment walks /proc for its batch jobs anyway)."""
        return any(step.tasks for step in self.steps.running.values())

    def observe(self, procs: Mapping[int, rss_watch.ProcStat], children: Mapping[int, Iterable[int]]) -> None:
        """One walk of /proc: every running task's use now."""
        seen: dict[TaskKey, am.TaskUsage] = {}
        weights: dict[TaskKey, int] = {}
        for key, root in self._roots().items():
            pids = rss_watch.job_usage(procs, root, children).pids
            if not pids:
                continue
            io = {pid: read_io(pid, self.proc_root) for pid in pids}
            before = self.tasks.get(key)
            usage = task_usage(key[3], pids, procs, io, before)
            freq = self.frequency(procs[root].last_cpu if root in procs else -1)
            spent = round((usage.cpu_secs - (before.cpu_secs if before else 0)) * 1000)
            weights[key] = self._freq_weight.get(key, 0) + spent * freq
            cpu_freq = weighted_frequency(weights[key], round(usage.cpu_secs * 1000), freq)
            seen[key] = dataclasses.replace(usage, cpu_freq=cpu_freq)
        self.tasks = seen
        self._freq_weight = weights

    def report(self, nodes: list[str], now: float) -> am.StepUsage | None:
        """The message for this heartbeat; None when nothing ran since the last empty one."""
        live = self._roots()
        by_step: dict[tuple[int, str, str], list[am.TaskUsage]] = {}
        for key, usage in sorted(self.tasks.items()):
            if key in live:
                by_step.setdefault(key[:3], []).append(usage)
        if not by_step and not self._reported_any:
            return None
        self._reported_any = bool(by_step)
        steps = [
            am.StepUsageRecord(job_id=job_id, step=step, node=node, tasks=tasks)
            for (job_id, step, node), tasks in by_step.items()
        ]
        return am.StepUsage(time=now, nodes=list(nodes), steps=steps)


__all__ = ["BATCH", "CpuFrequency", "StepUsageWatch", "read_io", "task_usage", "weighted_frequency"]
