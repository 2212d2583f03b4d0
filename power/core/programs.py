"""Running the power programs as real processes ("Resume and Suspend Programs" in Slurm's
power_save.html).

No Django here: :class:`Spawner` starts a program, never waits for it in the caller (the
power cycle goes on), and a reaper thread per process reports its end through
``on_exit(run_id, exit_code, ended)``; the adapter (``power.services``) records it.

* Output is not logged: stdin, stdout and stderr are ``/dev/null``.
* Each program runs in its own session, so stopping the controller (Ctrl-C, SIGTERM)
  does not kill it: "any spawned program will continue to run".
* ``SLURM_RESUME_FILE``: the JSON is written to a private temporary file whose path is
  exported to the program; it is removed ``keep`` seconds (10) after the start, or when
  the controller shuts down (Slurm's power_save.html, "Fault Tolerance").
* :meth:`Spawner.wait_all` is the graceful shutdown: wait up to a limit for the programs
  still running, report the ones that outlive it, and leave them running.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

RESUME_FILE_KEEP = 10.0  # seconds a SLURM_RESUME_FILE stays readable, at least

OnExit = Callable[[int, int, float], None]  # (run id, exit code (-signal), end time)


class SpawnError(OSError):
    """The program could not be started (missing, not executable, fork failed)."""


def shutdown_wait_limit(suspend_timeout: float, resume_timeout: float) -> float:
    """How long a graceful shutdown waits for spawned programs: ten seconds, or the
    larger of SuspendTimeout and ResumeTimeout if that is less (Slurm's power_save.html,
    "Fault Tolerance")."""
    return min(10.0, max(suspend_timeout, resume_timeout))


@dataclass
class _Child:
    run_id: int
    popen: subprocess.Popen[bytes]
    argv: tuple[str, ...]
    thread: threading.Thread | None = None
    resume_file: Path | None = None
    timer: threading.Timer | None = field(default=None, repr=False)


class Spawner:
    """Starts programs and reaps them on threads of their own."""

    def __init__(
        self,
        on_exit: OnExit,
        *,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        resume_dir: str | os.PathLike[str] | None = None,
        resume_file_keep: float = RESUME_FILE_KEEP,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.on_exit = on_exit
        self.cwd = str(cwd) if cwd is not None else None
        self.env = dict(env) if env is not None else None
        self.resume_dir = Path(resume_dir) if resume_dir is not None else None
        self.keep = resume_file_keep
        self.clock = clock
        self._lock = threading.Lock()
        self._children: dict[int, _Child] = {}
        self._files: set[Path] = set()

    # -- starting ---------------------------------------------------------------------

    def spawn(
        self,
        run_id: int,
        argv: Iterable[str],
        *,
        env: Iterable[tuple[str, str]] = (),
        resume_file: str | None = None,
    ) -> int:
        """Start ``argv``; returns its pid.  :class:`SpawnError` if it cannot start."""
        argv = tuple(argv)
        environ = dict(self.env if self.env is not None else os.environ)
        environ.update(env)
        path = None
        if resume_file is not None:
            path = self._write_resume_file(run_id, resume_file)
            environ["SLURM_RESUME_FILE"] = str(path)
        try:
            popen = subprocess.Popen(
                argv,
                cwd=self.cwd,
                env=environ,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                close_fds=True,
            )
        except OSError as exc:
            if path is not None:
                self._remove(path)
            raise SpawnError(exc.errno, f"{argv[0]}: {exc.strerror or exc}") from exc
        child = _Child(run_id, popen, argv, resume_file=path)
        if path is not None:
            child.timer = threading.Timer(self.keep, self._remove, args=(path,))
            child.timer.daemon = True
            child.timer.start()
        child.thread = threading.Thread(
            target=self._reap, args=(child,), name=f"power-run-{run_id}", daemon=True
        )
        with self._lock:
            self._children[run_id] = child
        child.thread.start()
        log.debug("power run %d: started %s (pid %d)", run_id, " ".join(argv), popen.pid)
        return popen.pid

    def _write_resume_file(self, run_id: int, text: str) -> Path:
        directory = self.resume_dir or Path(tempfile.gettempdir())
        directory.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f"resume-{run_id}-", suffix=".json", dir=directory)
        with os.fdopen(fd, "w") as f:  # mkstemp: mode 0600, only the controller's user reads it
            f.write(text)
        path = Path(name)
        with self._lock:
            self._files.add(path)
        return path

    def _remove(self, path: Path) -> None:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        with self._lock:
            self._files.discard(path)

    # -- reaping ----------------------------------------------------------------------

    def _reap(self, child: _Child) -> None:
        code = child.popen.wait()
        ended = self.clock()
        with self._lock:
            self._children.pop(child.run_id, None)
        try:
            self.on_exit(child.run_id, code, ended)
        except Exception:
            log.exception("power run %d: recording its end failed", child.run_id)

    def running(self) -> list[int]:
        """Run ids of the programs still running."""
        with self._lock:
            return sorted(self._children)

    def wait_all(self, timeout: float) -> list[int]:
        """Wait up to ``timeout`` seconds for every running program (and its reaper);
        returns the run ids still running, which are left running."""
        deadline = time.monotonic() + max(0.0, timeout)
        with self._lock:
            children = list(self._children.values())
        for child in children:
            if child.thread is not None:
                child.thread.join(max(0.0, deadline - time.monotonic()))
        left = self.running()
        for run_id in left:
            child = self._children.get(run_id)
            argv = " ".join(child.argv) if child else "?"
            log.warning("power run %d (%s) still running at shutdown; left running", run_id, argv)
        return left

    def close(self) -> None:
        """Shutdown: the resume files go away (Slurm's power_save.html, "Fault Tolerance")."""
        with self._lock:
            children = list(self._children.values())
            files = list(self._files)
        for child in children:
            if child.timer is not None:
                child.timer.cancel()
        for path in files:
            self._remove(path)


__all__ = ["RESUME_FILE_KEEP", "SpawnError", "Spawner", "shutdown_wait_limit"]
