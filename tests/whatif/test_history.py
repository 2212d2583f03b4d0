"""The what-if's history workload: the jobs that ended in the window, as a job list the
simulator's reader takes back with their requests and run times."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cluster.models import Job
from simulator.workloads import read_workload
from whatif.history import history_text

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)


def _job(pk: int, submit: datetime, start: datetime | None, end: datetime | None, **kw) -> None:
    Job.objects.create(
        id=pk, user="ann", partition="batch", submit_time=submit, start_time=start, end_time=end,
        state="COMPLETED" if start else "CANCELLED", **kw,
    )  # fmt: skip


def test_the_window_s_finished_jobs_come_back_as_sim_jobs(tmp_path):
    t0 = NOW - timedelta(hours=5)
    _job(1, t0, t0 + timedelta(seconds=30), t0 + timedelta(seconds=630), num_tasks=8, time_limit=20,
         licenses="flat:2", account="physics", mem_per_node=2000)  # fmt: skip
    _job(2, t0 + timedelta(seconds=60), t0 + timedelta(seconds=60), t0 + timedelta(seconds=70), exit_code=3)
    _job(3, t0, None, t0 + timedelta(seconds=5))  # cancelled before it started: left out
    _job(4, NOW - timedelta(days=9), NOW - timedelta(days=9), NOW - timedelta(days=8))  # outside
    path = tmp_path / "history.json"
    path.write_text(history_text(7, now=NOW))
    jobs = read_workload(path)
    assert [(j.job_id, j.submit, j.run_time) for j in jobs] == [(1, 0.0, 600.0), (2, 60.0, 10.0)]
    first = jobs[0]
    assert (first.ntasks, first.time_limit, first.licenses, first.account, first.mem_mb) == (
        8, 20, "flat:2", "physics", 2000,
    )  # fmt: skip
    assert jobs[1].exit_code == 3
