"""How fast this machine runs Python right now: a fixed loop, timed.

The 2-core virtual machines these figures come from change speed from one second to the
next (the same loop measured 206 to 373 ms in five consecutive runs): print this beside
every figure so that figures from different times can be compared, with the load average
(1, 5, 15 minutes) that other work put on the machine meanwhile.
"""

from __future__ import annotations

import os
import statistics
import time


def loop_ms() -> float:
    start = time.perf_counter()
    total = 0
    for i in range(3_000_000):
        total += i
    return (time.perf_counter() - start) * 1000


def describe(runs: int = 5) -> str:
    times = sorted(loop_ms() for _ in range(runs))
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    return (
        f"machine reference: a 3M-step Python loop takes {statistics.median(times):.0f} ms "
        f"(min {times[0]:.0f}, max {times[-1]:.0f}; lower is faster); load average {load}"
    )


if __name__ == "__main__":
    print(describe())
