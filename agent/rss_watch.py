"""A job's memory and CPU time from /proc: one walk of it per interval serves every job.

Each pass reads ``/proc/<pid>/stat`` once per process (one file: parent, session, CPU
times and RSS are all in it). A job's processes are the wrapper's descendants (through
``PPid``) and whatever is still in its session (the wrapper is the session leader:
orphans reparented to init stay in it). Their RSS is summed, as Slurm's
jobacct_gather/linux sums a task's processes; their CPU time is ``utime + stime`` plus
``cutime + cstime``, the time of the children they reaped, so a short-lived child's
time is not lost once its parent has waited for it.

The walk is cheap (a few hundred small reads), but it is still done once for all jobs,
never once per job.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class ProcStat:
    pid: int
    ppid: int
    sid: int
    rss_kb: int
    cpu_ticks: int  # utime + stime + cutime + cstime
    vsize_kb: int = 0
    majflt: int = 0  # major page faults (Slurm's "pages")
    last_cpu: int = -1  # the CPU it last ran on


@dataclass(frozen=True)
class Usage:
    rss_kb: int
    cpu_ticks: int
    pids: tuple[int, ...]

    @property
    def cpu_secs(self) -> float:
        return self.cpu_ticks / CLOCK_TICKS


def parse_stat(pid: int, data: bytes, page_kb: int = PAGE_KB) -> ProcStat | None:
    """One ``/proc/<pid>/stat`` (the command name may hold spaces and parentheses)."""
    rest = data[data.rfind(b")") + 2 :].split()
    if len(rest) < 22:
        return None
    try:
        ppid, sid = int(rest[1]), int(rest[3])
        # fields 14-17 (utime stime cutime cstime) and 24 (rss, pages)
        ticks = sum(int(x) for x in rest[11:15])
        rss = int(rest[21]) * page_kb
        # fields 12 (majflt), 23 (vsize, bytes) and 39 (processor)
        majflt, vsize = int(rest[9]), int(rest[20]) // 1024
        last_cpu = int(rest[36]) if len(rest) > 36 else -1
    except ValueError:
        return None
    return ProcStat(pid=pid, ppid=ppid, sid=sid, rss_kb=max(rss, 0), cpu_ticks=ticks,
                    vsize_kb=max(vsize, 0), majflt=max(majflt, 0), last_cpu=last_cpu)  # fmt: skip


def read_stat(pid: int, proc_root: str = "/proc") -> ProcStat | None:
    try:
        with open(f"{proc_root}/{pid}/stat", "rb") as f:
            return parse_stat(pid, f.read())
    except OSError:
        return None


def scan(proc_root: str = "/proc") -> dict[int, ProcStat]:
    """Every process under ``proc_root`` (processes gone meanwhile are skipped)."""
    found: dict[int, ProcStat] = {}
    try:
        entries = os.scandir(proc_root)
    except OSError:
        return found
    with entries:
        for entry in entries:
            if entry.name.isdigit() and (st := read_stat(int(entry.name), proc_root)) is not None:
                found[st.pid] = st
    return found


def children_of(procs: Mapping[int, ProcStat]) -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for st in procs.values():
        children.setdefault(st.ppid, []).append(st.pid)
    return children


def job_usage(
    procs: Mapping[int, ProcStat], root: int, children: Mapping[int, Iterable[int]] | None = None
) -> Usage:
    """The sum over ``root``, its descendants and its session's processes."""
    children = children if children is not None else children_of(procs)
    members: set[int] = {pid for pid, st in procs.items() if st.sid == root}
    if root in procs:
        members.add(root)
    stack = [root, *members]
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in members:
                members.add(child)
                stack.append(child)
    return Usage(
        rss_kb=sum(procs[p].rss_kb for p in members),
        cpu_ticks=sum(procs[p].cpu_ticks for p in members),
        pids=tuple(sorted(members)),
    )


def over_memory(rss_kb: int, limit_mb: int | None) -> bool:
    """Whether a job using ``rss_kb`` is over its limit (None or 0: no limit).

    Slurm's OverMemoryKill kills when the sampled use is strictly above the limit.
    """
    return bool(limit_mb) and rss_kb > limit_mb * 1024  # type: ignore[operator]


__all__ = ["ProcStat", "Usage", "children_of", "job_usage", "over_memory", "parse_stat", "read_stat", "scan"]
