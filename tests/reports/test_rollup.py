"""The rollup cycle (reports.services.report_rollup) over a fixed history: the hour and day
rows carry the figures added up by hand (tests/reports/history.py); a second run changes
nothing; only new hours are rolled, and a job that changes late rolls its hours again."""

from __future__ import annotations

from datetime import timedelta

import pytest

from cluster.models import Event, Job
from reports import selectors
from reports.models import AssocUsage, ClusterUsage, JobUsage, Period, RollupState
from reports.services import report_rollup
from tests.reports.history import at, make_history

MIN = 60


@pytest.fixture
def history(db):
    make_history()


def rows(model):
    return sorted(
        tuple(v for k, v in r.items() if k != "id")
        for r in model.objects.order_by("period", "start").values()
    )


def test_hours_carry_the_figures_added_up_by_hand(history):
    report_rollup(now=at(1, day=6))
    w = selectors.window(at(10), at(12))
    (cpu,) = selectors.cluster_utilization(w, ["cpu"])
    assert cpu["count"] == 8
    assert {k: cpu[k] / MIN for k in ("alloc", "down", "pdown", "plan", "idle", "reported")} == {
        "alloc": 405, "down": 240, "pdown": 0, "plan": 60, "idle": 255, "reported": 960,
    }  # fmt: skip
    usage = selectors.assoc_usage(w, ["cpu"])
    assert {k: v["cpu"] / MIN for k, v in usage.items()} == {
        ("physics", "alice"): 180, ("chem", "bob"): 180, ("theory", "carol"): 45,
    }  # fmt: skip


def test_a_day_report_reads_the_day_rows_and_agrees_with_the_hours(history):
    report_rollup(now=at(1, day=6))
    day = ClusterUsage.objects.get(period=Period.DAY, tres="cpu")
    assert day.start == at(0)
    # Rolled from 09:00 (the first record): 15 hours of 8 CPUs.
    assert day.count == 8
    assert day.alloc_secs / MIN == 2 * 90 + 2 * 120 + 45
    assert day.down_secs / MIN == 4 * 13 * 60  # n2 from 11:00 to midnight
    assert day.plan_secs / MIN == 2 * 10 + 2 * 30  # job 1 from 09:50, job 2 from 10:00
    w = selectors.window(at(0), at(0, day=6))
    # The whole day comes from the one day row, not from its hours.
    assert list(selectors._rows_in(ClusterUsage, w).values_list("period", flat=True).distinct()) == [
        Period.DAY
    ]
    (cpu,) = selectors.cluster_utilization(w, ["cpu"])
    assert cpu["alloc"] == day.alloc_secs and cpu["reported"] == 8 * 15 * 3600
    jobs = JobUsage.objects.filter(period=Period.DAY)
    assert sum(j.started for j in jobs) == 3 and sum(j.ended for j in jobs) == 3
    assert sum(j.wait_secs for j in jobs) == 10 * MIN + 30 * MIN


def test_running_again_changes_nothing(history):
    report_rollup(now=at(1, day=6))
    before = (rows(ClusterUsage), rows(AssocUsage), rows(JobUsage))
    assert report_rollup(now=at(1, 30, day=6)).startswith("rolled 0 hours")
    assert (rows(ClusterUsage), rows(AssocUsage), rows(JobUsage)) == before


def test_only_new_hours_are_rolled_and_a_late_change_rolls_its_hours_again(history):
    report_rollup(now=at(12, 10))
    assert RollupState.objects.get().rolled_to == at(12)
    assert ClusterUsage.objects.filter(period=Period.HOUR, start=at(12)).count() == 0
    # A completion that arrives late: job 2 ended at 11:00, not 12:30, recorded at 13:05.
    Job.objects.filter(id=2).update(end_time=at(11))
    Event.objects.filter(job_id=2, new_state="COMPLETED").update(time=at(13, 5))
    summary = report_rollup(now=at(13, 10))
    assert summary.startswith("rolled 2 hours")  # 11:00 again (job 2's new end) and 12:00
    w = selectors.window(at(10), at(12))
    assert selectors.assoc_usage(w, ["cpu"])[("chem", "bob")]["cpu"] / MIN == 2 * 30
    # A job that ran for hours and ends now changes no rolled hour.
    Job.objects.create(
        id=4, user="dan", account="chem", partition="debug", num_tasks=1, node_list="n1",
        submit_time=at(8), start_time=at(8), end_time=at(14, 5), state="COMPLETED",
    )  # fmt: skip
    Event.objects.create(
        time=at(14, 5), kind=Event.Kind.JOB, job_id=4, old_state="RUNNING", new_state="COMPLETED"
    )
    assert report_rollup(now=at(14, 10)).startswith("rolled 1 hours")


def test_a_first_run_over_a_long_history_catches_up_a_week_at_a_time(history):
    report_rollup(now=at(0, day=25))
    assert RollupState.objects.get().rolled_to == at(9) + timedelta(days=7)
    report_rollup(now=at(0, day=25))
    assert RollupState.objects.get().rolled_to == at(9) + timedelta(days=14)
