"""Embedded mode: changing the scheduler's interval in the admin changes how often the
cycle thread runs passes, without a restart (issue 15, acceptance).  The passes are
counted as sdiag counts them (SchedulerStats' main cycles)."""

from __future__ import annotations

import time

import pytest

from cluster import cycles
from cluster.models import SchedulerStats
from cycles.models import CycleStatus


def _passes() -> int:
    row = SchedulerStats.objects.first()
    return row.main_cycles if row else 0


def _change(client, name: str, interval: str) -> None:
    status = CycleStatus.objects.get(task__name=name)
    response = client.post(
        f"/admin/cycles/cyclestatus/{status.pk}/change/", {"interval": interval, "enabled": "on"}
    )
    assert response.status_code == 302, response.content.decode()[:2000]


def _passes_within(seconds: float) -> int:
    before = _passes()
    time.sleep(seconds)
    return _passes() - before


@pytest.mark.django_db(transaction=True)
def test_an_admin_edit_of_the_scheduler_interval_is_in_force_without_a_restart(client, users, demo):
    client.force_login(users["admin"])
    _change(client, "schedule", "3600")
    thread = cycles.EmbeddedCycles()
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while _passes() == 0 and time.monotonic() < deadline:  # the first pass, at the start
            time.sleep(0.05)
        assert _passes() == 1
        slow = _passes_within(2.5)

        _change(client, "schedule", "0.2")
        time.sleep(cycles.ROWS_POLL + 0.5)  # the thread's next look at the rows
        fast = _passes_within(2.5)
    finally:
        thread.stop()
    assert slow == 0  # an hour apart: none in the window
    assert fast >= 4  # every 0.2 s: about a dozen, loosely
