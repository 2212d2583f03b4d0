"""The cyclic garbage collector's youngest threshold for the controller's long-lived
processes (the server's workers, the simulator's engine).

CPython collects its youngest generation after 700 net container allocations. A process
holding a large heap (the passes' kept snapshot, the limits' and HRES' state, thousands of
jobs) reads rows by the thousand between passes, and each collection walks the objects
that survived the last one: at 10,000 nodes the simulator's first two minutes spent 5.9
of 20.8 s in 3,388 collections, most of them while a read of 10,000 node names or a
submission was allocating its rows. At 20,000 the same run made 179 collections in 0.55
s, with the same event log. Reference counting still frees everything that is not a
cycle at once; only cyclic garbage waits longer (the scheduler's pass already turns the
collector off while it runs, cluster.services.scheduling._collector_off).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

YOUNGEST = 20_000


def tune() -> None:
    """Raise the youngest generation's threshold to :data:`YOUNGEST` (never lower it)."""
    youngest, middle, oldest = gc.get_threshold()
    if youngest and youngest < YOUNGEST:
        gc.set_threshold(YOUNGEST, middle, oldest)


@contextlib.contextmanager
def tuned() -> Iterator[None]:
    """:func:`tune` for a while (a simulation inside another process), then as it was."""
    before = gc.get_threshold()
    tune()
    try:
        yield
    finally:
        gc.set_threshold(*before)
