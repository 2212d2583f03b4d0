"""CPU and memory containment of the jobs of one agent, and their usage for accounting.

- CPUs: each job gets ids of its node (agent/cpusets.py), mapped onto the host's CPUs.
  The agent sets its launching thread's affinity to them just before the fork and back
  after it: the job's wrapper is born bound, and its descendants inherit the mask
  (Linux's ``sched_setaffinity`` with pid 0 binds the calling thread only, so the rest
  of the agent is untouched). As root with a writable cgroup v2, the job's cgroup gets
  the same CPUs as its cpuset (agent/cgroups.py), which a job cannot widen.
- Memory: the job's MB on the node (``mem_on_node`` of the launch, 0 or absent: no
  limit) become ``memory.max`` of its cgroup; without a cgroup the RSS watcher kills
  the job whose processes' summed RSS goes over it (Slurm's
  ``JobAcctGatherParams=OverMemoryKill``), with slurmstepd's message on its stderr. Either
  way the completion says ``out_of_memory`` and the controller records OUT_OF_MEMORY.
- Usage: every ``interval`` seconds one walk of /proc (agent/rss_watch.py) gives each
  job's RSS and CPU time; the maximum RSS and the CPU time go with the completion
  (``max_rss_kb``, ``total_cpu_secs``). At the end the wrapper, a zombie not reaped yet,
  still shows its own CPU time and that of every child it reaped: the larger of that and
  the last sample is reported.

What a job holds (``record``) goes into the job's state in the spool (agent/spool.py), with
its pid: an agent restarted while jobs run adopts them with their CPU ids. Agents before
that kept it in a file of its own, ``<spool>/contain/<job_id>.json`` (agent-owned,
0700), still read for the jobs they started, and still written when ``started`` is asked
to (a Containment used without a job manager).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from agent import cpusets, rss_watch
from agent.cgroups import CgroupTree

log = logging.getLogger(__name__)

DEFAULT_INTERVAL = 1.0  # seconds between /proc walks (fsched agent --usage-interval)
# Slurm's code for "out of memory" (SIG_OOM, 253): sacct prints its ExitCode as 0:125.
OOM_SIGNAL = 125


@dataclass(frozen=True)
class JobUsage:
    """What a completion reports of the job's use (None: not known)."""

    out_of_memory: bool = False
    max_rss_kb: int | None = None
    total_cpu_secs: float | None = None


class UsageWatcher(Protocol):
    """Takes each walk of /proc too (agent/step_usage.py): one walk serves every reader."""

    def busy(self) -> bool: ...  # whether it needs a walk when no batch job runs

    def observe(self, procs: Mapping[int, rss_watch.ProcStat], children: Mapping[int, list[int]]) -> None: ...


@dataclass
class Contained:
    job_id: int
    node: str
    ids: tuple[int, ...]
    host: tuple[int, ...]
    mem_mb: int | None
    pid: int = 0
    err_fd: int | None = None
    max_rss_kb: int = 0
    cpu_ticks: int = 0
    sampled: bool = False
    oom: bool = False
    cgroup: bool = False  # its cgroup was made (before the fork)
    in_cgroup: bool = False  # and its processes are in it: the kernel holds its memory
    filed: bool = False  # its record is a file of its own in record_dir, removed at its end


class Containment:
    """The containment of one agent's jobs (see the module docstring)."""

    def __init__(
        self,
        *,
        record_dir: str | os.PathLike[str] | None = None,
        usable: Sequence[int] | None = None,
        cgroups: CgroupTree | None = None,
        interval: float = DEFAULT_INTERVAL,
        proc_root: str = "/proc",
    ) -> None:
        self.affinity = hasattr(os, "sched_setaffinity")
        self.usable = tuple(sorted(usable if usable is not None else self._own_cpus()))
        self.cgroups = cgroups
        self.interval = interval
        self.proc_root = proc_root
        self.book = cpusets.CpuBook()
        self.jobs: dict[int, Contained] = {}
        self.watchers: list[UsageWatcher] = []
        self.record_dir = Path(record_dir) if record_dir is not None else None
        if self.record_dir is not None:
            self.record_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(self.record_dir, 0o700)

    @staticmethod
    def _own_cpus() -> Sequence[int]:
        try:
            return sorted(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            return list(range(os.cpu_count() or 1))

    @classmethod
    def detect(
        cls, spool_root: str | os.PathLike[str], scope: str, *, interval: float = DEFAULT_INTERVAL
    ) -> Containment:
        """What this host lets the agent enforce, logged in one line."""
        cgroups, why = CgroupTree.prepare(scope)
        c = cls(record_dir=Path(spool_root) / "contain", cgroups=cgroups, interval=interval)
        log.info("%s", c.describe(why))
        return c

    def describe(self, cgroup_why: str) -> str:
        cpus = cpusets.cpu_list(self.usable)
        binding = "sched_setaffinity" if self.affinity else "no sched_setaffinity (CPUs not bound)"
        if self.cgroups is not None:
            return (
                f"containment: CPUs {cpus} by {binding} and cgroup cpuset, memory by cgroup "
                f"memory.max ({cgroup_why}); usage sampled every {self.interval:g}s"
            )
        return (
            f"containment: CPUs {cpus} by {binding}; no cgroup ({cgroup_why}): memory by the RSS "
            f"watcher every {self.interval:g}s (OverMemoryKill)"
        )

    # -- launch ------------------------------------------------------------------------

    @contextlib.contextmanager
    def spawning(self, job_id: int, node: str, cpus: int, mem_mb: int | None) -> Iterator[Contained]:
        """Around the fork of the job's wrapper: its CPUs picked and the thread bound."""
        ids = self.book.take(job_id, node, cpus)
        host = cpusets.host_cpus(ids, self.usable)
        if cpusets.folds(ids, self.usable):
            log.info(
                "job %d: CPU ids %s of %s fold onto host CPUs %s (this host has %d usable CPUs)",
                job_id, cpusets.cpu_list(ids), node, cpusets.cpu_list(host), len(self.usable),
            )  # fmt: skip
        job = Contained(job_id, node, ids, host, mem_mb or None)
        saved = None
        try:
            if self.cgroups is not None:
                try:
                    self.cgroups.create(job_id, cpusets.cpu_list(host), job.mem_mb)
                    job.cgroup = True
                except OSError as exc:  # the job still runs, held by affinity and the watcher
                    why = exc.strerror or exc
                    log.warning("job %d: no cgroup (%s): memory by the RSS watcher", job_id, why)
                    self.cgroups.remove(job_id)
            if self.affinity:
                saved = os.sched_getaffinity(0)
                os.sched_setaffinity(0, host)
            yield job
        except BaseException:
            self.book.release(job_id)
            if self.cgroups is not None:
                self.cgroups.remove(job_id)
            raise
        finally:
            if saved is not None:
                os.sched_setaffinity(0, saved)

    def started(
        self, job: Contained, pid: int, err_fd: int | None, *, file_record: bool = True
    ) -> dict[str, Any]:
        """The wrapper exists: move it into its cgroup, keep its stderr for our messages.
        Returns what the job holds, for an agent that adopts it (``adopted``); kept in
        ``record_dir`` too unless ``file_record`` is false (the caller keeps it)."""
        job.pid = pid
        if err_fd is not None:
            with contextlib.suppress(OSError):
                if stat.S_ISREG(os.fstat(err_fd).st_mode):
                    job.err_fd = os.dup(err_fd)
        self.jobs[job.job_id] = job
        self._move_in(job)
        record = self._record_of(job)
        if file_record:
            self._record(job, record)
        log.info(
            "job %d: bound to CPU ids %s of %s (host CPUs %s)%s",
            job.job_id, cpusets.cpu_list(job.ids), job.node, cpusets.cpu_list(job.host),
            f", memory limit {job.mem_mb} MB" if job.mem_mb else "",
        )  # fmt: skip
        return record

    def _move_in(self, job: Contained) -> None:
        if self.cgroups is None or not job.cgroup:
            return
        try:
            # Until a pass finds every process of the job inside.
            while self.cgroups.move(
                job.job_id, rss_watch.job_usage(rss_watch.scan(self.proc_root), job.pid).pids
            ):
                pass
        except OSError as exc:  # past the fork the job runs whatever happens
            log.warning("job %d: not moved into its cgroup (%s): memory by the RSS watcher",
                        job.job_id, exc.strerror or exc)  # fmt: skip
            return
        job.in_cgroup = True

    def adopted(self, job_id: int, pid: int, record: Mapping[str, Any] | None = None) -> None:
        """A job of a previous agent still runs: take back its ids from its record (as
        ``started`` returned it; None: the file an older agent kept)."""
        filed = record is None
        if record is None:
            record = self._read_record(job_id)
        if record is None:
            return
        ids = tuple(int(i) for i in record.get("ids", ()))
        node = str(record.get("node", ""))
        self.book.restore(job_id, node, ids)
        mem = record.get("mem_mb")
        host = cpusets.host_cpus(ids, self.usable)
        job = Contained(job_id, node, ids, host, int(mem) if isinstance(mem, int) and mem > 0 else None, pid)
        job.cgroup = job.in_cgroup = bool(record.get("cgroup"))
        job.filed = filed
        self.jobs[job_id] = job

    def step_cpus(
        self, job_id: int, node: str, count: int, which: Sequence[int] | None = None
    ) -> tuple[int, ...]:
        """The host CPUs for a job step's tasks on ``node``: the job's own ids there, taken
        now if the job has none on it yet (a node of the job other than its batch host);
        ``which``: only those of them (indices into the job's ``count`` ids: a step's CPUs).
        The step's launcher binds its tasks to them and calls :meth:`release` once the job
        has nothing left on a node that is not its batch host."""
        ids = self.book.take(job_id, node, count)
        if which is not None:
            ids = tuple(ids[i % len(ids)] for i in which) if ids else ids
        return cpusets.host_cpus(ids, self.usable)

    def release(self, job_id: int) -> None:
        self.book.release(job_id)

    # -- watching ----------------------------------------------------------------------

    def sample(self) -> None:
        """One /proc walk: every job's RSS and CPU time; kill the jobs over their memory."""
        if not self.jobs and not any(w.busy() for w in self.watchers):
            return
        procs = rss_watch.scan(self.proc_root)
        children = rss_watch.children_of(procs)
        for watcher in self.watchers:
            watcher.observe(procs, children)
        for job in list(self.jobs.values()):
            if job.pid <= 0 or job.oom:
                continue
            usage = rss_watch.job_usage(procs, job.pid, children)
            if not usage.pids:
                continue
            job.sampled = True
            job.max_rss_kb = max(job.max_rss_kb, usage.rss_kb)
            job.cpu_ticks = max(job.cpu_ticks, usage.cpu_ticks)
            if not job.in_cgroup and rss_watch.over_memory(usage.rss_kb, job.mem_mb):
                self._kill_over_memory(job, usage)

    def _kill_over_memory(self, job: Contained, usage: rss_watch.Usage) -> None:
        job.oom = True
        used, limit = usage.rss_kb * 1024, (job.mem_mb or 0) * 1024 * 1024
        # slurmstepd's words (jobacct_gather's OverMemoryKill), on the job's stderr.
        message = f"StepId={job.job_id}.batch exceeded memory limit ({used} > {limit}), being killed"
        log.warning("job %d: %s", job.job_id, message)
        self._tell_job(job, f"slurmstepd: error: {message}\n")
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(job.pid, signal.SIGKILL)
        for pid in usage.pids:  # those that left the process group
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    def tell(self, job_id: int, text: str) -> bool:
        """Append ``text`` to the job's stderr file; False when it has none here."""
        job = self.jobs.get(job_id)
        if job is None or job.err_fd is None:
            return False
        self._tell_job(job, text)
        return True

    @staticmethod
    def _tell_job(job: Contained, text: str) -> None:
        if job.err_fd is not None:
            with contextlib.suppress(OSError):
                os.write(job.err_fd, text.encode())

    async def run(self) -> None:
        """Sample every ``interval`` seconds for as long as the agent runs."""
        while True:
            await asyncio.sleep(self.interval)
            try:
                self.sample()
            except Exception:  # one odd /proc entry must not stop the watcher
                log.exception("usage sampling failed")

    # -- the end -----------------------------------------------------------------------

    def ended(self, job_id: int, pid: int) -> JobUsage:
        """The job's wrapper has exited (not reaped yet): its usage, and its ids freed."""
        job = self.jobs.pop(job_id, None)
        self.book.release(job_id)
        if job is None or job.filed:  # (a job not adopted may have a file all the same)
            self._drop_record(job_id)
        if job is None:
            return JobUsage()
        final = rss_watch.read_stat(pid, self.proc_root) if pid > 0 else None
        ticks = max(job.cpu_ticks, final.cpu_ticks if final is not None else 0)
        oom = job.oom
        if self.cgroups is not None and job.cgroup:
            kills = self.cgroups.oom_kills(job_id)
            if kills:
                oom = True
                # slurmstepd's words (task/cgroup) for kernel OOM kills.
                plural = "s" if kills > 1 else ""
                self._tell_job(
                    job,
                    f"slurmstepd: error: Detected {kills} oom_kill event{plural} in StepId={job_id}.batch. "
                    "Some of the step tasks have been OOM Killed.\n",
                )
            self.cgroups.remove(job_id)
        if job.err_fd is not None:
            os.close(job.err_fd)
        sampled = job.sampled or final is not None
        return JobUsage(
            out_of_memory=oom,
            max_rss_kb=job.max_rss_kb if sampled else None,
            total_cpu_secs=round(ticks / rss_watch.CLOCK_TICKS, 2) if sampled else None,
        )

    # -- records -----------------------------------------------------------------------

    def _record_path(self, job_id: int) -> Path | None:
        return None if self.record_dir is None else self.record_dir / f"{job_id}.json"

    @staticmethod
    def _record_of(job: Contained) -> dict[str, Any]:
        return {"node": job.node, "ids": list(job.ids), "mem_mb": job.mem_mb, "cgroup": job.in_cgroup}

    def _record(self, job: Contained, data: dict[str, Any]) -> None:
        path = self._record_path(job.job_id)
        if path is None:
            return
        job.filed = True
        try:
            tmp = path.with_name(f".{path.name}.tmp")
            tmp.write_text(json.dumps(data))
            os.replace(tmp, path)
        except OSError as exc:  # the job runs regardless; a restart only forgets its ids
            log.warning("job %d: containment record not written: %s", job.job_id, exc.strerror)

    def _read_record(self, job_id: int) -> dict[str, object] | None:
        path = self._record_path(job_id)
        if path is None:
            return None
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def _drop_record(self, job_id: int) -> None:
        path = self._record_path(job_id)
        if path is not None:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    def close(self) -> None:
        for job in self.jobs.values():
            if job.err_fd is not None:
                os.close(job.err_fd)
                job.err_fd = None


def job_limits(job: dict[str, object] | object) -> tuple[int, int | None]:
    """(CPUs on the node, MB of memory or None) from a launch object."""
    get = getattr(job, "get", None)
    if get is None:
        return 1, None
    cpus = int(get("cpus_on_node") or 1)
    mem = get("mem_on_node")
    return max(cpus, 1), (int(mem) if mem else None)


__all__ = ["DEFAULT_INTERVAL", "OOM_SIGNAL", "Containment", "JobUsage", "job_limits"]
