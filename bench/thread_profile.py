"""Every thread of a process under cProfile, with the thread's own CPU time as the clock.

For ``bench.cluster_throughput --profile DIR``: the server and the agent import this from
a ``sitecustomize`` the bench puts on their PYTHONPATH, with ``FSCHED_BENCH_PROFILE=DIR``.
CPU (``time.thread_time``), not wall time: a thread waiting on the disk, a lock or the
machine's other load costs nothing here, so the figures say what a job costs to run.

Started threads are caught by ``threading.setprofile`` (Python 3.11 has no
``setprofile_all_threads``), the main thread at import. The bench asks for the figures
by writing a label into ``DIR/<pid>.mark`` (a watcher thread polls for it): each
thread's stats since start are written as ``DIR/<label>/<pid>-<n>-<thread name>.prof``
(pstats' format), and the mark is removed once they are. What a stretch of the run cost
is the difference of two labels' dumps (``delta``).
"""

from __future__ import annotations

import cProfile
import marshal
import os
import threading
import time
from pathlib import Path

_POLL = 0.2  # seconds between looks for the mark
_profiles: list[tuple[str, cProfile.Profile]] = []
_lock = threading.Lock()


def _new(name: str) -> None:
    profile = cProfile.Profile(time.thread_time)
    with _lock:
        _profiles.append((name, profile))
    profile.enable()


def _thread_start(frame, event, arg):  # type: ignore[no-untyped-def]
    # Called once in each new thread before its run(): the thread's own profiler takes
    # over the thread's profile hook from here.
    _new(threading.current_thread().name)


def _dump(out: Path) -> None:
    pid = os.getpid()
    out.mkdir(exist_ok=True)
    with _lock:
        profiles = list(_profiles)
    for n, (name, profile) in enumerate(profiles):
        # snapshot_stats, not create_stats: that one would disable the profiler, and only
        # in this thread at that.
        profile.snapshot_stats()
        safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)
        path = out / f"{pid}-{n}-{safe}.prof"
        with open(path, "wb") as f:
            marshal.dump(profile.stats, f)


def _watch(out: Path) -> None:
    mark = out / f"{os.getpid()}.mark"
    while True:
        time.sleep(_POLL)
        try:
            label = mark.read_text().strip()
        except FileNotFoundError:
            continue
        _dump(out / label)
        mark.unlink()


def install(out: str) -> None:
    """Profile this process's threads; dump them on request into ``out``."""
    path = Path(out)
    _new("MainThread")
    threading.setprofile(_thread_start)
    watcher = threading.Thread(target=_watch, args=(path,), name="profile-watcher", daemon=True)
    # The watcher itself need not be profiled: start it before it could be.
    threading.setprofile(None)
    watcher.start()
    threading.setprofile(_thread_start)


def delta(after: dict, before: dict) -> dict:
    """pstats' stats of ``after`` minus those of ``before`` (functions not called between
    the two are left out)."""
    out = {}
    for func, now in after.items():
        then = before.get(func)
        if then is None:
            out[func] = now
            continue
        counts = tuple(a - b for a, b in zip(now[:4], then[:4], strict=True))
        callers = {k: _minus(v, then[4].get(k)) for k, v in now[4].items()}
        if counts[1] > 0:
            out[func] = (*counts, callers)
    return out


def _minus(now, then):  # type: ignore[no-untyped-def]
    if then is None:
        return now
    if isinstance(now, tuple):
        return tuple(a - b for a, b in zip(now, then, strict=True))
    return now - then


SITECUSTOMIZE = """import os
if os.environ.get("FSCHED_BENCH_PROFILE"):
    from bench import thread_profile
    thread_profile.install(os.environ["FSCHED_BENCH_PROFILE"])
"""
