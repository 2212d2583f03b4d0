"""Distributed mode: Celery beat reads the cycles' rows through django-celery-beat's
DatabaseScheduler, so changing the scheduler's interval in the admin changes how often
passes run, without restarting beat (issue 15, acceptance).  A real beat and a real
worker run the passes; sdiag's counters count them."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from cluster.models import SchedulerStats
from cycles.models import CycleStatus

pytestmark = [
    pytest.mark.distributed,
    pytest.mark.skipif(
        not (os.environ.get("FSCHED_DATABASE_URL") and os.environ.get("FSCHED_REDIS_URL")),
        reason="needs FSCHED_DATABASE_URL and FSCHED_REDIS_URL",
    ),
    pytest.mark.django_db(transaction=True),
]

ROOT = Path(__file__).resolve().parents[2]
CELERY = str(Path(sys.executable).parent / "celery")


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


@pytest.fixture
def celery_env(tmp_path, demo):
    """The worker's and beat's environment: this test's database, not the cluster's."""
    db = connection.settings_dict
    url = f"postgres://{db['USER']}:{db.get('PASSWORD') or ''}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    return {
        **os.environ,
        "FSCHED_DATABASE_URL": url,
        "FSCHED_STATE_DIR": str(tmp_path),
        "FSCHED_SECRET_KEY": secrets.token_urlsafe(50),
        "FSCHED_CONF_DIR": str(ROOT / "examples" / "demo"),
    }


def test_beat_follows_an_admin_edit_of_the_scheduler_interval(client, users, celery_env, tmp_path):
    client.force_login(users["admin"])
    _change(client, "schedule", "3600")
    log = (tmp_path / "celery.log").open("wb")
    common = {"env": celery_env, "cwd": ROOT, "stdout": log, "stderr": subprocess.STDOUT}
    procs = [
        subprocess.Popen(
            [CELERY, "-A", "config", "worker", "-l", "warning", "-c", "2", "-P", "threads"], **common
        ),
        subprocess.Popen([CELERY, "-A", "config", "beat", "-l", "info"], **common),
    ]
    try:
        time.sleep(8)  # both up, beat's first look at the rows
        slow = _passes_within(4)

        _change(client, "schedule", "0.5")
        # DatabaseScheduler looks at the rows' change marker at least every 5 s.
        time.sleep(7)
        fast = _passes_within(4)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()
    out = (tmp_path / "celery.log").read_text(errors="replace")
    assert "DatabaseScheduler" in out  # beat said which scheduler it runs
    assert slow <= 1, out[-3000:]  # an hour apart (an event-driven pass at most)
    assert fast >= 4, out[-3000:]  # every 0.5 s: about eight, loosely
