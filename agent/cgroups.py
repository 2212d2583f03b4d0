"""Jobs in cgroup v2: a cpuset and ``memory.max`` per job, when the agent may make them.

The tree is ``<cgroup2 mount>/fsched/<scope>/job_<id>``: the controllers must be enabled
in each parent's ``cgroup.subtree_control``, and cgroup v2 lets a cgroup that holds
processes (the agent's own) have no controlled children, so the tree hangs from the
mount's root, where that rule does not apply, as slurmd's hangs from its own slice.
``<scope>`` keeps two agents of one host (two test clusters) apart.

A job's wrapper is moved in right after the fork (Python cannot ``clone`` into a
cgroup); whatever it forked in that instant is moved after it, until a pass finds no
process of the session outside (a process forked by one already inside is born inside).
The CPU affinity was set before the fork (agent/containment.py), so nothing runs on
other CPUs meanwhile.

With a memory limit, ``memory.swap.max`` is 0 where the kernel has it (Slurm's
``ConstrainSwapSpace=yes`` with ``AllowedSwapSpace=0``): a job over its memory is
OOM-killed instead of swapping. ``memory.events``' ``oom_kill`` count tells afterwards
that it happened.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterable
from pathlib import Path

log = logging.getLogger(__name__)

NEEDED = ("cpuset", "memory")


def cgroup2_mount(mounts: str = "/proc/self/mounts") -> Path | None:
    """Where cgroup v2 is mounted (``/sys/fs/cgroup``, or ``.../unified`` on a hybrid host)."""
    try:
        with open(mounts, encoding="utf-8") as f:
            for line in f:
                parts = line.split()
                if len(parts) > 2 and parts[2] == "cgroup2":
                    return Path(parts[1])
    except OSError:
        return None
    return None


def _words(path: Path) -> set[str]:
    try:
        return set(path.read_text().split())
    except OSError:
        return set()


def _enable(cgroup: Path) -> None:
    """Give ``cgroup``'s children the cpuset and memory controllers."""
    if not set(NEEDED) <= _words(cgroup / "cgroup.subtree_control"):
        (cgroup / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in NEEDED))


class CgroupTree:
    """This agent's part of the cgroup v2 hierarchy."""

    def __init__(self, base: Path) -> None:
        self.base = base

    @classmethod
    def prepare(cls, scope: str, mount: Path | None = None) -> tuple[CgroupTree | None, str]:
        """The tree ready for jobs, or None and why not (for the start-up line)."""
        if os.geteuid() != 0:
            return None, "not root"
        mount = mount or cgroup2_mount()
        if mount is None:
            return None, "cgroup v2 is not mounted"
        missing = [c for c in NEEDED if c not in _words(mount / "cgroup.controllers")]
        if missing:
            lacking = " and no ".join(missing)
            return None, f"cgroup v2 at {mount} has no {lacking} controller (bound to cgroup v1?)"
        try:
            _enable(mount)
            top = mount / "fsched"
            top.mkdir(exist_ok=True)
            _enable(top)
            base = top / scope
            base.mkdir(exist_ok=True)
            _enable(base)
        except OSError as exc:
            return None, f"cgroup v2 at {mount} is not writable ({exc.strerror or exc})"
        return cls(base), f"cgroup v2 at {base}"

    def path(self, job_id: int) -> Path:
        return self.base / f"job_{job_id}"

    def create(self, job_id: int, cpus: str, mem_mb: int | None) -> Path:
        path = self.path(job_id)
        path.mkdir(exist_ok=True)
        (path / "cpuset.cpus").write_text(cpus)
        if mem_mb:
            (path / "memory.max").write_text(str(mem_mb * 1024 * 1024))
            if (path / "memory.swap.max").exists():
                (path / "memory.swap.max").write_text("0")
        return path

    def move(self, job_id: int, pids: Iterable[int]) -> int:
        """Move ``pids`` into the job's cgroup; the number of processes moved."""
        procs = self.path(job_id) / "cgroup.procs"
        inside = {int(p) for p in _words(procs)}
        moved = 0
        for pid in pids:
            if pid in inside:
                continue
            with contextlib.suppress(ProcessLookupError, FileNotFoundError):  # ended meanwhile
                procs.write_text(str(pid))
                moved += 1
        return moved

    def oom_kills(self, job_id: int) -> int:
        """How many processes of the job the kernel killed for its memory."""
        try:
            text = (self.path(job_id) / "memory.events").read_text()
        except OSError:
            return 0
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0

    def remove(self, job_id: int) -> None:
        try:
            self.path(job_id).rmdir()
        except FileNotFoundError:
            pass
        except OSError as exc:  # processes left that no kill reached: logged, not fatal
            log.warning("job %d: cgroup %s not removed: %s", job_id, self.path(job_id), exc.strerror)


__all__ = ["CgroupTree", "cgroup2_mount"]
