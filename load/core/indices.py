"""The load indices a node agent samples from /proc every 5 seconds (fsched's own load
thresholds; docs/load-thresholds.md has the model with a worked example).

Each smoothed index is an exponential moving average over samples 5 s apart:

    E_k = d * E_(k-1) + (1 - d) * x_k,   d = exp(-5 / tau),   E_0 = 0 at agent start

* ``mem``: MemAvailable of /proc/meminfo, else MemFree + Buffers + Cached, in MiB; the
  latest sample, not smoothed.
* ``ut``: 100 - idle% over the interval between two reads of /proc/stat's ``cpu`` line
  (idle over the sum of all its time fields), smoothed with tau = 15 s.
* ``r15s``, ``r1m``, ``r15m``: the run queue, ``procs_running + procs_blocked`` of
  /proc/stat, smoothed with tau = 15 s, 60 s and 900 s.  The reader is itself running
  when it reads /proc/stat, so one is taken off ``procs_running`` (never below zero): an
  idle node reads 0, not 1.  A fed stat file (``fsched agent --proc-root``) is read the
  same way: write it as the kernel would, the reader counted.

Pure: text in, figures out; the sampler keeps its own state and is stepped by its caller.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

SAMPLE_INTERVAL = 5.0  # seconds between samples
TAU = {"ut": 15.0, "r15s": 15.0, "r1m": 60.0, "r15m": 900.0}
KIB_PER_MIB = 1024


def decay(tau: float, interval: float = SAMPLE_INTERVAL) -> float:
    """The weight ``d`` the previous average keeps at each sample."""
    return math.exp(-interval / tau)


def ema(previous: float, sample: float, tau: float) -> float:
    d = decay(tau)
    return d * previous + (1 - d) * sample


def available_mib(meminfo: str) -> int:
    """MemAvailable (or MemFree + Buffers + Cached on kernels without it), in MiB."""
    fields: dict[str, int] = {}
    for line in meminfo.splitlines():
        name, _, rest = line.partition(":")
        words = rest.split()
        if words and words[0].isdigit():
            fields[name.strip()] = int(words[0])  # kB, as the kernel writes every line
    if "MemAvailable" in fields:
        kib = fields["MemAvailable"]
    elif "MemFree" in fields:
        kib = fields["MemFree"] + fields.get("Buffers", 0) + fields.get("Cached", 0)
    else:
        raise ValueError("meminfo has neither MemAvailable nor MemFree")
    return kib // KIB_PER_MIB


@dataclass(frozen=True)
class StatSample:
    """What one read of /proc/stat gives: the ``cpu`` line's times and the run queue."""

    idle: int
    total: int
    run_queue: int


def read_stat(stat: str) -> StatSample:
    """The aggregate ``cpu`` line (idle, and the sum of all its time fields) and the run
    queue ``procs_running - 1 + procs_blocked`` (the reader taken off, never below 0)."""
    cpu: list[int] | None = None
    running = blocked = None
    for line in stat.splitlines():
        words = line.split()
        if not words:
            continue
        if words[0] == "cpu":
            cpu = [int(w) for w in words[1:]]
        elif words[0] == "procs_running":
            running = int(words[1])
        elif words[0] == "procs_blocked":
            blocked = int(words[1])
    if cpu is None or len(cpu) < 4:
        raise ValueError("stat has no cpu line with an idle field")
    if running is None or blocked is None:
        raise ValueError("stat has no procs_running and procs_blocked lines")
    return StatSample(idle=cpu[3], total=sum(cpu), run_queue=max(running - 1, 0) + blocked)


@dataclass(frozen=True)
class Indices:
    """A node's load indices as the agent reports them with each heartbeat."""

    mem: int
    ut: float
    r15s: float
    r1m: float
    r15m: float
    run_queue: int  # the instantaneous run queue of the latest sample (anti-thrashing)

    def to_wire(self) -> dict[str, float | int]:
        return {
            "mem": self.mem,
            "ut": round(self.ut, 3),
            "r15s": round(self.r15s, 4),
            "r1m": round(self.r1m, 4),
            "r15m": round(self.r15m, 4),
            "run_queue": self.run_queue,
        }


class Sampler:
    """The agent's smoothing state: made from the reads at agent start (every average
    E_0 = 0, and the cpu times the first utilisation is measured from), then given the new
    reads every 5 s by ``sample``."""

    def __init__(self, meminfo: str, stat: str) -> None:
        self._stat = read_stat(stat)
        self.indices = Indices(
            mem=available_mib(meminfo), ut=0.0, r15s=0.0, r1m=0.0, r15m=0.0, run_queue=self._stat.run_queue
        )

    def sample(self, meminfo: str, stat: str) -> Indices:
        now = read_stat(stat)
        busy = utilisation(self._stat, now)
        self._stat = now
        e = self.indices
        q = now.run_queue
        self.indices = Indices(
            mem=available_mib(meminfo),
            ut=ema(e.ut, busy, TAU["ut"]),
            r15s=ema(e.r15s, q, TAU["r15s"]),
            r1m=ema(e.r1m, q, TAU["r1m"]),
            r15m=ema(e.r15m, q, TAU["r15m"]),
            run_queue=q,
        )
        return self.indices


def utilisation(before: StatSample, after: StatSample) -> float:
    """100 - idle% between two reads; 0 when no time passed (or the counters went back,
    as after a CPU is taken offline)."""
    total = after.total - before.total
    idle = after.idle - before.idle
    if total <= 0 or idle < 0:
        return 0.0
    return max(0.0, min(100.0, 100.0 * (1 - idle / total)))
