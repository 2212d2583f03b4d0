"""What ``make run`` does when the controller or the agent it started exits by itself.

A crash (a non-zero status, or a signal other than the ones that ask a process to stop)
is logged with its status and the process is started again after a delay that doubles
from ``first`` up to ``cap`` and goes back to ``first`` once a run has lasted ``stable``
seconds, as systemd's ``Restart=on-failure`` with a growing ``RestartSec`` would.  A
process that stopped cleanly or was refused (status 0 or 2, TERM/INT/HUP) is not
restarted: someone meant it, or another start would meet the same refusal, and
``make run`` then stops the rest as before.  No Django here; the clock is passed in.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Protocol

# Exit statuses a restart cannot help: a clean stop, and bad usage or a refused key (2,
# the agent's REFUSED and argparse's usage error).
FINAL_STATUSES = frozenset({0, 2})
# Signals that ask a process to stop; systemd counts them as a clean exit too.
STOP_SIGNALS = frozenset({signal.SIGTERM, signal.SIGINT, signal.SIGHUP})


def describe(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "unknown signal"
        return f"was killed by signal {-returncode} ({name})"
    return f"exited with status {returncode}"


def crashed(returncode: int) -> bool:
    if returncode < 0:
        return -returncode not in STOP_SIGNALS
    return returncode not in FINAL_STATUSES


class Backoff:
    """Delays between restarts: ``first``, doubling to ``cap``; back to ``first`` after a
    run of ``stable`` seconds, so an old crash does not slow the next recovery."""

    def __init__(self, first: float = 1.0, cap: float = 30.0, stable: float = 60.0) -> None:
        self.first, self.cap, self.stable = first, cap, stable
        self._next = first

    def delay(self, ran_for: float) -> float:
        if ran_for >= self.stable:
            self._next = self.first
        delay = self._next
        self._next = min(delay * 2, self.cap)
        return delay


class Process(Protocol):
    pid: int
    returncode: int | None

    def poll(self) -> int | None: ...


class Supervised:
    """One process started by ``start``, restarted after crashes; ``poll`` is called from
    ``make run``'s loop with the current (monotonic) time."""

    def __init__(
        self,
        name: str,
        start: Callable[[], Process],
        *,
        now: float,
        say: Callable[[str], None],
        backoff: Backoff | None = None,
        running: Process | None = None,
    ) -> None:
        """``running``: the first run, already started by the caller."""
        self.name, self._start, self._say = name, start, say
        self.backoff = backoff or Backoff()
        self.proc = running if running is not None else start()
        self.started_at = now
        self.restart_at: float | None = None
        self.restarts = 0

    def poll(self, now: float) -> str | None:
        """Restart the process when it is due; the reason to stop everything, if any."""
        if self.restart_at is not None:
            if now >= self.restart_at:
                self.proc = self._start()
                self.started_at, self.restart_at = now, None
                self.restarts += 1
                self._say(f"{self.name} restarted (pid {self.proc.pid}, restart {self.restarts})")
            return None
        status = self.proc.poll()
        if status is None:
            return None
        what = f"{self.name} (pid {self.proc.pid}) {describe(status)}"
        if not crashed(status):
            return f"{what}; stopping"
        delay = self.backoff.delay(now - self.started_at)
        self.restart_at = now + delay
        self._say(f"{what} after {now - self.started_at:.0f} s; restarting it in {delay:g} s")
        return None
