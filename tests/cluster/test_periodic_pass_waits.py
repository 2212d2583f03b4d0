"""A periodic pass (the whole queue, backfill) that finds the pass lock held waits for it.

Under a stream of submissions the scheduling loop runs event passes back to back; a
periodic pass tried once found the lock held nearly every time and was skipped, so
backfill never ran in distributed mode (cluster.tasks)."""

from __future__ import annotations

import threading
import time

import pytest

from cluster import cycles, tasks

pytestmark = pytest.mark.django_db(transaction=True)


def _hold_the_pass_lock(seconds: float, held: threading.Event) -> None:
    with cycles.cycle_lock("schedule") as got:
        assert got
        held.set()
        time.sleep(seconds)


@pytest.mark.parametrize("name", ["backfill", "schedule"])
def test_a_periodic_pass_runs_once_the_running_pass_ends(demo, name):
    held = threading.Event()
    other = threading.Thread(target=_hold_the_pass_lock, args=(0.5, held))
    other.start()
    held.wait(5)
    try:
        assert cycles.run_named(name) == "busy"  # what it answered before, and was skipped
        result = tasks.cycle(name)
    finally:
        other.join()
    assert result.startswith("pending=")
