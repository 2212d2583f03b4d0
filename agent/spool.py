"""The agent's spool directory: what must outlive the agent process.

Layout (like slurmd's ``/var/spool/slurmd``)::

    <spool>/jobs/<job_id>/script      the batch script (0700, owned by the job's user)
    <spool>/jobs/<job_id>/status      the wrapper writes the script's exit status here
    <spool>/jobs/<job_id>/state.json  JobState: which process runs the job
    <spool>/done/<job_id>.json        a Completion not yet acknowledged by the controller
    <spool>/boot_time                 the boot time reported for the hosted nodes

A completion is written (fsync + atomic rename) before it is sent and deleted only on
``ack``: that is the "nothing lost" rule of ARCHITECTURE.md. ``state.json`` and the
script are not fsynced: they only matter while the machine (and so the job) is up.
The spool tree is world-traversable (0755) because, when the agent runs as root, a job
running as its user must be able to execute its script from there.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

# The status file holds "N\n"; a larger or partial content is treated as missing.
MAX_STATUS_LEN = 16
# The job script's file name; also the process name (comm) of the running script.
SCRIPT_NAME = "script"


@dataclass(frozen=True)
class JobState:
    """Which process is a job: enough to find it again after an agent restart."""

    job_id: int
    node: str
    pid: int  # the wrapper, leader of the job's process group
    pgid: int
    started: float
    # The process's start time in clock ticks since boot lies in [start_ticks,
    # start_ticks_max] (read around the fork): (pid, start time) guards against pid reuse.
    start_ticks: int
    start_ticks_max: int

    def is_process(self, ticks: int | None) -> bool:
        """Whether a process started at ``ticks`` is this job's (None: no such process)."""
        return ticks is not None and self.start_ticks <= ticks <= self.start_ticks_max

    status_file: str
    run: int = 0  # which run of the job (its restart count), echoed to the controller


@dataclass(frozen=True)
class Completion:
    """A job's end, as sent in ``completed`` and in ``register.completions``."""

    job_id: int
    node: str
    exit_code: int
    signal: int
    end_time: float
    seq: int
    run: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Spool:
    """File operations on one agent's spool directory."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.jobs_dir = self.root / "jobs"
        self.done_dir = self.root / "done"
        for d in (self.root, self.jobs_dir, self.done_dir):
            d.mkdir(parents=True, exist_ok=True)
            os.chmod(d, 0o755)  # noqa: S103 -- job users must reach their script
        # Kept open: every batch of completions ends with an fsync of this directory.
        self._done_fd = os.open(self.done_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)

    def close(self) -> None:
        if self._done_fd >= 0:
            os.close(self._done_fd)
            self._done_fd = -1

    # -- per-job files --------------------------------------------------------------

    def job_dir(self, job_id: int) -> Path:
        return self.jobs_dir / str(job_id)

    def prepare_job(self, job_id: int, script: str, owner: tuple[int, int] | None) -> tuple[str, str]:
        """Write the script (and, for another account, an empty status file); return their paths.

        ``owner`` (uid, gid) is the job's account when the agent runs as root: the
        script and status file are its own, the directory stays the agent's so the job
        cannot replace ``state.json``.
        """
        d = self.job_dir(job_id)
        if d.exists():  # a launch that died half-way, or a re-launch after ack
            shutil.rmtree(d, ignore_errors=True)
        d.mkdir(mode=0o755)
        script_path = d / SCRIPT_NAME
        fd = os.open(script_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o700)
        try:
            os.write(fd, script.encode())
            if owner is not None:
                os.fchown(fd, *owner)
        finally:
            os.close(fd)
        status_path = d / "status"
        if owner is not None:  # the job's account could not create it in our directory
            fd = os.open(status_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                os.fchown(fd, *owner)
            finally:
                os.close(fd)
        return str(script_path), str(status_path)

    def write_state(self, state: JobState) -> None:
        d = self.job_dir(state.job_id)
        tmp = d / "state.json.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        try:
            os.write(fd, json.dumps(asdict(state)).encode())
        finally:
            os.close(fd)
        os.replace(tmp, d / "state.json")

    def states(self) -> list[JobState]:
        """The jobs recorded as started; half-launched job directories are removed."""
        found: list[JobState] = []
        for d in sorted(self.jobs_dir.iterdir()):
            try:
                found.append(JobState(**json.loads((d / "state.json").read_text())))
            except FileNotFoundError:
                log.info("job %s: removing spool of a launch that never started", d.name)
                shutil.rmtree(d, ignore_errors=True)
            except (ValueError, TypeError, OSError) as exc:
                log.warning("job %s: unreadable spool state (%s), removed", d.name, exc)
                shutil.rmtree(d, ignore_errors=True)
        return found

    def job_ids(self) -> set[int]:
        return {int(d.name) for d in self.jobs_dir.iterdir() if d.name.isdigit()}

    @staticmethod
    def read_status(path: str) -> int | None:
        """The wait status the wrapper wrote, or None if it never finished writing it."""
        try:
            with open(path, "rb") as f:
                data = f.read(MAX_STATUS_LEN + 1)
        except OSError:
            return None
        # Only a complete "N\n" counts: the wrapper may have been killed mid-write.
        if not data.endswith(b"\n") or not data[:-1].isdigit():
            return None
        return int(data[:-1])

    # -- completions ----------------------------------------------------------------

    def write_completions(self, completions: list[Completion]) -> None:
        """Durably record completions: fsync each file, then the directory once."""
        for c in completions:
            final = self.done_dir / f"{c.job_id}.json"
            tmp = self.done_dir / f".{c.job_id}.json.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.write(fd, json.dumps(c.to_dict()).encode())
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, final)
        if completions:
            os.fsync(self._done_fd)

    def completions(self) -> dict[int, Completion]:
        found: dict[int, Completion] = {}
        for p in self.done_dir.iterdir():
            if p.name.startswith("."):  # a write interrupted before its rename
                p.unlink(missing_ok=True)
                continue
            try:
                c = Completion(**json.loads(p.read_text()))
            except (ValueError, TypeError, OSError) as exc:
                log.warning("unreadable spooled completion %s (%s), removed", p.name, exc)
                p.unlink(missing_ok=True)
                continue
            found[c.job_id] = c
        return found

    # -- cleanup --------------------------------------------------------------------

    def remove_job(self, job_id: int) -> None:
        """Forget a job: its completion file and its job directory."""
        (self.done_dir / f"{job_id}.json").unlink(missing_ok=True)
        d = self.job_dir(job_id)
        for name in (SCRIPT_NAME, "status", "state.json"):
            with contextlib.suppress(FileNotFoundError):
                (d / name).unlink()
        try:
            d.rmdir()
        except FileNotFoundError:
            pass
        except OSError:
            shutil.rmtree(d, ignore_errors=True)

    # -- boot time ------------------------------------------------------------------

    def read_boot_time(self) -> float | None:
        try:
            return float((self.root / "boot_time").read_text())
        except (OSError, ValueError):
            return None

    def write_boot_time(self, value: float) -> None:
        tmp = self.root / "boot_time.tmp"
        tmp.write_text(repr(value))
        os.replace(tmp, self.root / "boot_time")
