"""The agent's spool directory: what must outlive the agent process.

Layout (like slurmd's ``/var/spool/slurmd``)::

    <spool>/lock                   flock'ed by the agent for its whole life; holds its pid
    <spool>/state/<job_id>.json    JobState: the launch intent (pid 0), then its process,
                                   one JSON line each (the last complete one counts)
    <spool>/jobs/<job_id>/         the job's own directory, owned by the job's user
    <spool>/jobs/<job_id>/script   the batch script (0700)
    <spool>/jobs/<job_id>/pid      the wrapper writes its pid here first thing
    <spool>/jobs/<job_id>/status   the wrapper writes the script's exit status here
    <spool>/done/<job_id>.json     a Completion not yet acknowledged by the controller
    <spool>/boot_time              the boot time reported for the hosted nodes
    <spool>/rebooting              nodes whose RebootProgram ran (scontrol reboot), one a line
    <spool>/agent_id               the spool's id, part of the agent's id (``identity()``)

Private: the root and its directories are 0700 and every file the agent writes is 0600
(the script 0700), whatever the umask; a spool of an older version is fixed on start,
with a log line. Jobs never walk the spool's path: the agent opens the job's directory
and hands it to the wrapper as an inherited descriptor, which the wrapper reaches as
``/proc/self/fd/N``. That magic link skips the permission checks of the directories
above, and the job's user owns its own directory, so a job running as its user executes
its script (named ``script``, so its process name still says it runs) while no other
user can even list the spool. The intent and state files stay in ``state/``, out of the
job's reach, so a job cannot forge what the agent will adopt after a restart.

One agent per spool: ``lock()`` takes an exclusive ``flock`` on ``<spool>/lock`` and
keeps it until the process ends. A second agent waits ``LOCK_WAIT`` seconds (a dying
agent's forked child may hold the descriptor for an instant, until it execs) and then
fails with SpoolLocked naming the holder's pid.

Durability: a completion is written (fsync + atomic rename) before it is sent and deleted
only on ``ack``: so that nothing accepted is ever lost. The launch intent is
renamed into place before the fork but not fsynced, like the job's state and the script:
they only matter while the machine (and so the job) is up.

Spare files: the agent's own records (``state/``, ``done/``) are written into files of
earlier jobs, not new ones. An acknowledged job's files are renamed to ``.spare-N`` in
their directory, and the next record of that directory is written into a spare (written
over and cut to its length, ``_overwrite``, then renamed into place as a new file would
be). Creating a file cost
0.4-0.7 ms of CPU on the #18 benchmark's machine (ext4: the inode's allocation), against
0.05 to truncate and write an existing one and 0.02 a rename; a job made two. A spare has
a dot name, so it is never read as a record, and an agent starting removes what it finds
of them as it removes interrupted writes. The directories of the jobs that ran as the
agent's own user are kept too (``jobs/.spare-N``, renamed to the next such job's), with
their script, pid and status files: four creations a job, the wrapper's two included. A
directory a job's user owned (a root agent's job of another user) is never handed on.

A launch writes its state file once: the intent's line is renamed into place with its
descriptor kept open, and the started process's line (its pid, with the containment's
record of its CPUs) is appended through it after the fork. A new file and a rename for
the second record cost the agent a quarter of a millisecond of CPU a job (#18 profile).
The append needs no rename to be safe: a reader takes the last line that parses, and an
agent killed in the middle of that one ``write`` leaves at worst a line that does not,
so the intent counts, which recovery resolves from the wrapper's pid file or /proc as
it does for an agent killed just before the write.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import re
import secrets
import shutil
import stat
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

# The status file holds "N\n"; a larger or partial content is treated as missing.
MAX_STATUS_LEN = 16
# The job script's file name; also the process name (comm) of the running script.
SCRIPT_NAME = "script"
PID_NAME = "pid"
STATUS_NAME = "status"
DIR_MODE = 0o700
FILE_MODE = 0o600
LOCK_WAIT = 2.0  # seconds a second agent waits for the spool lock
_LOCK_POLL = 0.05
_IDENTITY = re.compile(r"[0-9a-f]{12}")
# Completions written before their fsyncs at most this many at a time: each holds a
# descriptor until synced, and the agent's jobs need theirs.
_SYNC_GROUP = 64
_SYNC_THREADS = 16
# Spare files kept per directory at most (each an inode and a block of the file system).
_SPARES_MAX = 512


class SpoolLocked(Exception):
    """Another live agent holds this spool."""


@dataclass(frozen=True)
class JobState:
    """Which process is a job: enough to find it again after an agent restart.

    ``pid`` 0 is a launch intent: written before the fork, the wrapper not yet known.
    """

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
    launch: str = ""  # the wrapper's last argument: finds it in /proc when its pid is unknown
    # What the job holds (agent/containment.py's record: its CPU ids, memory, cgroup),
    # for an agent that adopts it; None: not known (an intent, or an older agent's state,
    # whose record is a file of its own).
    contain: dict[str, Any] | None = None

    def with_process(
        self, pid: int, ticks: int, ticks_max: int, contain: dict[str, Any] | None = None
    ) -> JobState:
        return replace(self, pid=pid, pgid=pid, start_ticks=ticks, start_ticks_max=ticks_max, contain=contain)


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
    # Containment (agent/containment.py): None when not known.
    out_of_memory: bool | None = None
    max_rss_kb: int | None = None
    total_cpu_secs: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return _flat(self)


_FIELDS = {cls: tuple(f.name for f in fields(cls)) for cls in (JobState, Completion)}


def _private_dir(path: Path) -> None:
    """Create ``path`` 0700 or make it so, saying when an existing one was wider."""
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode != DIR_MODE:
        os.chmod(path, DIR_MODE)
        log.warning("spool directory %s was mode %04o, now %04o", path, mode, DIR_MODE)


class _Spares:
    """The spare files of one of the spool's directories (see the module docstring)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.free: list[str] = []
        self.made = 0

    def take(self) -> tuple[str, int] | None:
        """A spare open for writing over, not emptied (``_overwrite``): (its path, its fd);
        None when there is none."""
        while self.free:
            spare = self.free.pop()
            try:
                return spare, os.open(spare, os.O_WRONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
            except OSError:  # gone (a spool cleaned by hand): the next one, or a new file
                continue
        return None

    def keep(self, path: Path) -> None:
        """``path`` is no longer needed: a spare from now on, or removed past _SPARES_MAX."""
        if len(self.free) >= _SPARES_MAX:
            path.unlink(missing_ok=True)
            return
        self.made += 1
        spare = f"{self.directory}/.spare-{self.made}"
        try:
            os.rename(path, spare)
        except FileNotFoundError:
            return
        self.free.append(spare)


def _stage_private(path: Path, data: bytes, spares: _Spares | None = None) -> tuple[Path | str, int]:
    """``data`` written to the temporary file of ``path`` (a spare when ``spares`` has
    one), mode 0600: (its path, its open fd)."""
    spare = spares.take() if spares is not None else None
    if spare is not None:  # made here, 0600, by an earlier _stage_private
        tmp, fd = spare
    else:
        tmp = path.with_name(f".{path.name}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW, FILE_MODE)
    try:
        if spare is None:
            os.fchmod(fd, FILE_MODE)  # a leftover temporary file keeps its old mode otherwise
            os.write(fd, data)
        else:
            _overwrite(fd, data)
    except BaseException:
        os.close(fd)
        raise
    return tmp, fd


def _overwrite(fd: int, data: bytes) -> None:
    """Replace the content of the file open at ``fd`` (offset 0) with ``data``: written
    over the old bytes, then cut to its length, never emptied first.

    Emptying a file that has data (``O_TRUNC``) costs ext4 dearly: the truncation frees the
    file's block (with this machine's ``discard`` mount option, a discard request), and it
    marks the file for ``auto_da_alloc``, so that its close allocates and writes the new
    data at once instead of leaving it to the flusher. Measured here, a truncate, write and
    close of a 200-byte file took 0.09 ms of CPU and 1.7-2.9 ms of wall time (the agent's
    loop waiting), a write over it and ``ftruncate`` to a shorter non-zero length 0.007
    ms of either. A crash in between leaves a spare's or a temporary file's dot name, never
    a record's: a record is renamed into place only once written."""
    os.write(fd, data)
    os.ftruncate(fd, len(data))


def _write_private(path: Path, data: bytes, *, sync: bool = False) -> None:
    """Write ``data`` to ``path`` atomically (temporary file + rename), mode 0600."""
    tmp, fd = _stage_private(path, data)
    try:
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


_syncers: ThreadPoolExecutor | None = None


def _fsync_all(fds: list[int]) -> None:
    """fsync every descriptor, concurrently when there are several; the first error raised."""
    global _syncers  # noqa: PLW0603 - one small pool per agent process, made on first use
    if len(fds) <= 1:
        for fd in fds:
            os.fsync(fd)
        return
    if _syncers is None:
        _syncers = ThreadPoolExecutor(max_workers=_SYNC_THREADS, thread_name_prefix="spool-fsync")
    for _ in _syncers.map(os.fsync, fds):
        pass


def _flat(record: JobState | Completion) -> dict[str, Any]:
    """The record's fields as a dict, as ``dataclasses.asdict`` gives them, without its
    recursive deep copy (a third of the spool's CPU per job, profiled): every field is a
    scalar but JobState's ``contain``, which is only dumped, never changed."""
    return {name: getattr(record, name) for name in _FIELDS[type(record)]}


def _line(state: JobState) -> bytes:
    return json.dumps(_flat(state)).encode() + b"\n"


def _last_state(data: bytes) -> JobState:
    """The last line of a state file that is a whole record (see the module docstring);
    ValueError when none is."""
    for line in reversed(data.split(b"\n")):
        if line:
            try:
                return JobState(**json.loads(line))
            except (ValueError, TypeError):  # an append cut short, or not a record at all
                continue
    raise ValueError("no complete record")


def _read_small(path: str | Path) -> bytes | None:
    """At most MAX_STATUS_LEN + 1 bytes of a file the job may control (no symlinks)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        return os.read(fd, MAX_STATUS_LEN + 1)
    except OSError:
        return None
    finally:
        os.close(fd)


def _number(data: bytes | None) -> int | None:
    """The number in a complete ``N\\n`` (a partial write counts as missing)."""
    if data is None or not data.endswith(b"\n") or not data[:-1].isdigit():
        return None
    return int(data[:-1])


class Spool:
    """File operations on one agent's spool directory."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.jobs_dir = self.root / "jobs"
        self.done_dir = self.root / "done"
        self.state_dir = self.root / "state"
        for d in (self.root, self.jobs_dir, self.done_dir, self.state_dir):
            _private_dir(d)
        self._fix_file_modes()
        # Kept open: every batch of completions ends with an fsync of this directory.
        self._done_fd = os.open(self.done_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        self._state_spares = _Spares(self.state_dir)
        self._done_spares = _Spares(self.done_dir)
        # Job directories kept for later jobs of the agent's own user (``_keep_dir``).
        self._spare_dirs: list[str] = []
        self._dirs_made = 0
        self._euid = os.geteuid()
        self._lock_fd = -1

    def _fix_file_modes(self) -> None:
        fixed = 0
        for d in (self.root, self.done_dir, self.state_dir):
            for p in d.iterdir():
                with contextlib.suppress(OSError):
                    st = p.lstat()
                    if stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) & 0o077:
                        os.chmod(p, FILE_MODE)
                        fixed += 1
        if fixed:
            log.warning("spool %s: %d file(s) readable by others, now mode %04o", self.root, fixed, FILE_MODE)

    def close(self) -> None:
        if self._done_fd >= 0:
            os.close(self._done_fd)
            self._done_fd = -1
        if self._lock_fd >= 0:
            os.close(self._lock_fd)  # releases the lock
            self._lock_fd = -1

    # -- the lock -------------------------------------------------------------------

    def lock(self, wait: float = LOCK_WAIT) -> None:
        """Hold ``<spool>/lock`` for this process's life, or raise SpoolLocked."""
        path = self.root / "lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, FILE_MODE)
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
                    os.close(fd)
                    busy = f"spool {self.root} is in use by another agent (pid {holder})"
                    raise SpoolLocked(busy) from None
                time.sleep(_LOCK_POLL)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
        self._lock_fd = fd

    def _holds_lock(self) -> bool:
        """Whether the lock file in place is the one we hold (not recreated under us)."""
        if self._lock_fd < 0:
            return False
        try:
            return os.stat(self.root / "lock").st_ino == os.fstat(self._lock_fd).st_ino
        except FileNotFoundError:
            return False

    def check(self) -> None:
        """Make the spool usable again as it stands, or raise OSError / SpoolLocked.

        The root itself is not recreated: a missing spool may be an unmounted file
        system, and the administrator decides. Missing subdirectories are.
        """
        if not self.root.is_dir():
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(self.root))
        for d in (self.jobs_dir, self.done_dir, self.state_dir):
            _private_dir(d)
        if not self._holds_lock():
            self.lock(wait=0)
        probe = self.done_dir / ".probe"
        _write_private(probe, b"probe\n", sync=True)
        probe.unlink()
        if os.fstat(self._done_fd).st_ino != os.stat(self.done_dir).st_ino:
            os.close(self._done_fd)
            self._done_fd = os.open(self.done_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)

    # -- per-job files --------------------------------------------------------------

    def job_dir(self, job_id: int) -> Path:
        return self.jobs_dir / str(job_id)

    def prepare_job(self, job_id: int, script: str, owner: tuple[int, int] | None) -> int:
        """Write the job's directory and script; return a descriptor of the directory.

        ``owner`` (uid, gid) is the job's account when the agent runs as root: the
        directory and script become its own once written, so the wrapper, running as
        that account, writes its pid and status there.
        """
        data = script.encode()  # before any file exists: a lone surrogate fails here
        d = self.job_dir(job_id)
        if d.exists():  # a launch that died half-way, or a re-launch after ack
            shutil.rmtree(d, ignore_errors=True)
        spare = self._spare_dirs.pop() if owner is None and self._spare_dirs else None
        if spare is not None:
            try:
                os.rename(spare, d)
            except OSError:  # gone (a spool cleaned by hand): a new one
                spare = None
        if spare is None:
            d.mkdir(mode=DIR_MODE)
        dir_fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fchmod(dir_fd, DIR_MODE)
            # A spare directory's script is written over (_overwrite); its pid and status
            # were emptied.
            flags = os.O_CREAT | (os.O_NOFOLLOW if spare is not None else os.O_EXCL)
            fd = os.open(SCRIPT_NAME, os.O_WRONLY | os.O_CLOEXEC | flags, 0o700, dir_fd=dir_fd)
            try:
                _overwrite(fd, data)
                os.fchmod(fd, 0o700)
                if owner is not None:
                    os.fchown(fd, *owner)
            finally:
                os.close(fd)
            if owner is not None:
                os.fchown(dir_fd, *owner)
        except BaseException:
            os.close(dir_fd)
            raise
        return dir_fd

    def status_path(self, job_id: int) -> str:
        return str(self.job_dir(job_id) / STATUS_NAME)

    def read_pid(self, job_id: int) -> int | None:
        """The pid the job's wrapper recorded, if it got that far."""
        return _number(_read_small(self.job_dir(job_id) / PID_NAME))

    def write_state(self, state: JobState) -> None:
        _write_private(self.state_dir / f"{state.job_id}.json", _line(state))

    def begin_launch(self, intent: JobState) -> int:
        """Put the launch intent in place (written aside, renamed); return the descriptor
        of its file, open for ``record_process``."""
        path = self.state_dir / f"{intent.job_id}.json"
        tmp, fd = _stage_private(path, _line(intent), self._state_spares)
        try:
            os.replace(tmp, path)
        except BaseException:
            os.close(fd)
            raise
        return fd

    @staticmethod
    def record_process(fd: int, state: JobState) -> None:
        """Append the started process's state after its intent (``begin_launch``'s
        descriptor, closed here whatever happens)."""
        try:
            os.write(fd, _line(state))
        finally:
            os.close(fd)

    def _records(self) -> list[JobState]:
        """Every recorded launch; job directories nobody recorded are removed."""
        self._adopt_old_layout()
        found: dict[int, JobState] = {}
        for p in sorted(self.state_dir.iterdir()):
            if p.name.startswith("."):  # a write interrupted before its rename
                p.unlink(missing_ok=True)
                continue
            try:
                st = _last_state(p.read_bytes())
            except (ValueError, OSError) as exc:
                log.warning("unreadable spool state %s (%s), removed", p.name, exc)
                p.unlink(missing_ok=True)
                continue
            found[st.job_id] = st
        for d in self.jobs_dir.iterdir():
            if not d.name.isdigit() or int(d.name) not in found:
                log.info("job %s: removing spool of a launch that never started", d.name)
                shutil.rmtree(d, ignore_errors=True)
        return [found[k] for k in sorted(found)]

    def _adopt_old_layout(self) -> None:
        """Move ``jobs/<id>/state.json`` of an older agent to ``state/<id>.json``: its
        job may still run, and dropping the record would run it a second time."""
        for old in self.jobs_dir.glob("*/state.json"):
            new = self.state_dir / f"{old.parent.name}.json"
            with contextlib.suppress(OSError):
                os.chmod(old, FILE_MODE)
                os.replace(old, new)
                log.info("job %s: state moved to %s", old.parent.name, new)

    def states(self) -> list[JobState]:
        """The jobs recorded as started (their wrapper's pid known)."""
        return [st for st in self._records() if st.pid > 0]

    def launches(self) -> list[JobState]:
        """Launch intents whose wrapper's pid was never recorded by the agent."""
        return [st for st in self._records() if st.pid <= 0]

    def job_ids(self) -> set[int]:
        return {int(d.name) for d in self.jobs_dir.iterdir() if d.name.isdigit()}

    @staticmethod
    def read_status(path: str) -> int | None:
        """The wait status the wrapper wrote, or None if it never finished writing it."""
        # Only a complete "N\n" counts: the wrapper may have been killed mid-write.
        return _number(_read_small(path))

    # -- completions ----------------------------------------------------------------

    def write_completions(self, completions: list[Completion]) -> None:
        """Durably record completions: each file fsynced before its rename, then the
        directory once.

        A group's files are all written first and fsynced together, from a few threads:
        the file system's journal commits concurrent fsyncs as one (ext4's jbd2), where
        one fsync after another made a commit each and held the agent's loop ~3.5 ms per
        completion (measured here: 0.15 ms per file in a group of 16)."""
        for start in range(0, len(completions), _SYNC_GROUP):
            staged: list[tuple[Path, Path | str, int]] = []
            try:
                for c in completions[start : start + _SYNC_GROUP]:
                    path = self.done_dir / f"{c.job_id}.json"
                    data = json.dumps(c.to_dict()).encode()
                    staged.append((path, *_stage_private(path, data, self._done_spares)))
                _fsync_all([fd for _, _, fd in staged])
            finally:
                for _, _, fd in staged:
                    os.close(fd)
            for path, tmp, _ in staged:
                os.replace(tmp, path)
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
        """Forget a job: its completion, its state (their files kept as spares) and its job
        directory."""
        self._done_spares.keep(self.done_dir / f"{job_id}.json")
        self._state_spares.keep(self.state_dir / f"{job_id}.json")
        d = self.job_dir(job_id)
        if self._keep_dir(d):
            return
        for name in (SCRIPT_NAME, STATUS_NAME, PID_NAME):
            with contextlib.suppress(FileNotFoundError, NotADirectoryError):
                (d / name).unlink()
        try:
            d.rmdir()
        except FileNotFoundError:
            pass
        except OSError:  # the job left files of its own there
            shutil.rmtree(d, ignore_errors=True)

    def _keep_dir(self, d: Path) -> bool:
        """Keep a job's directory as a spare for the next job, its pid and status emptied
        (a job that dies before writing its own must not be read with this one's), when
        it holds only the files the launch makes and they and it are the agent's own (the
        job ran as the agent's user: the next to get it, ``prepare_job`` without an
        owner, runs as that user too). Else False: removed."""
        if len(self._spare_dirs) >= _SPARES_MAX:
            return False
        try:
            with os.scandir(d) as entries:
                found = {e.name: e.stat(follow_symlinks=False) for e in entries}
            if SCRIPT_NAME not in found or not set(found) <= {SCRIPT_NAME, PID_NAME, STATUS_NAME}:
                return False
            if os.lstat(d).st_uid != self._euid or any(
                not stat.S_ISREG(st.st_mode) or st.st_uid != self._euid or st.st_nlink != 1
                for st in found.values()
            ):
                return False
            for name in {PID_NAME, STATUS_NAME}.intersection(found):
                os.close(os.open(d / name, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC))
            self._dirs_made += 1
            spare = f"{self.jobs_dir}/.spare-{self._dirs_made}"
            os.rename(d, spare)
        except OSError:
            return False
        self._spare_dirs.append(spare)
        return True

    # -- boot time ------------------------------------------------------------------

    def identity(self) -> str:
        """The spool's own id, made once and kept in ``<spool>/agent_id``.

        Agents on one spool follow one another (its lock lets one live at a time), so an
        agent restarted on it is the same agent to the controller: it gets its nodes back
        at once, even while its predecessor's connection still looks open on a server
        process that was killed too. An agent with another spool is another agent.
        """
        path = self.root / "agent_id"
        known = _read_small(path)
        if known is not None and _IDENTITY.fullmatch(known.decode(errors="replace").strip()):
            return known.decode().strip()
        # Made aside and linked into place: of two agents starting on a new spool at once,
        # both read the one id that won (the loser then finds the lock taken).
        tmp = path.with_name(f".agent_id.{os.getpid()}")
        _write_private(tmp, f"{secrets.token_hex(6)}\n".encode(), sync=True)
        try:
            if known is not None:
                os.replace(tmp, path)  # unreadable as an id: replaced, not kept
            else:
                with contextlib.suppress(FileExistsError):
                    os.link(tmp, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        return (_read_small(path) or b"").decode(errors="replace").strip()

    def read_boot_time(self) -> float | None:
        try:
            return float((self.root / "boot_time").read_text())
        except (OSError, ValueError):
            return None

    def write_boot_time(self, value: float) -> None:
        _write_private(self.root / "boot_time", repr(value).encode())

    def mark_rebooting(self, node: str) -> None:
        """``node``'s RebootProgram is about to run: the next agent on this spool reports a
        new boot time for it, even if it adopts jobs of the other nodes."""
        names = self._rebooting() | {node}
        _write_private(self.root / "rebooting", "".join(f"{n}\n" for n in sorted(names)).encode(), sync=True)

    def unmark_rebooting(self, node: str) -> None:
        """Its RebootProgram failed and this agent lives on: no reboot happened."""
        names = self._rebooting() - {node}
        if names:
            _write_private(self.root / "rebooting", "".join(f"{n}\n" for n in sorted(names)).encode())
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.root / "rebooting")

    def take_rebooting(self) -> set[str]:
        """The nodes marked rebooting, and the marks gone (read once, at start)."""
        names = self._rebooting()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.root / "rebooting")
        return names

    def _rebooting(self) -> set[str]:
        try:
            text = (self.root / "rebooting").read_text()
        except (OSError, UnicodeDecodeError):
            return set()
        return {line.strip() for line in text.splitlines() if line.strip()}
