"""slurmdbd's PurgeJobAfter/PurgeEventAfter (FSCHED_PURGE_JOB_AFTER, FSCHED_PURGE_EVENT_AFTER):
the rollup cycle deletes the ended jobs and the events older than the age once they are
rolled up, and the reports still show them from the rollup tables."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cluster import extensions
from cluster.models import Event, Job
from cluster.services.purge import PURGE_REASON
from reports import selectors
from reports.core.retention import RetentionError, purge_cutoff
from reports.services import report_rollup
from tests.reports.history import at, make_history

NOW = datetime(2026, 3, 31, 12, tzinfo=UTC)


def test_slurmdbd_ages():
    assert purge_cutoff("12", NOW, name="PurgeJobAfter") == datetime(2025, 3, 28, 12, tzinfo=UTC)
    assert purge_cutoff("1month", NOW, name="PurgeJobAfter") == datetime(2026, 2, 28, 12, tzinfo=UTC)
    assert purge_cutoff("30days", NOW, name="PurgeJobAfter") == datetime(2026, 3, 1, 12, tzinfo=UTC)
    assert purge_cutoff("12hours", NOW, name="PurgeJobAfter") == datetime(2026, 3, 31, 0, tzinfo=UTC)
    assert purge_cutoff("", NOW, name="PurgeJobAfter") is None
    for bad in ("soon", "0days", "-3", "12 weeks"):
        with pytest.raises(RetentionError, match=f"PurgeEventAfter={bad}"):
            purge_cutoff(bad, NOW, name="PurgeEventAfter")


def test_the_rollup_is_a_cycle_of_the_cluster(db):
    assert "report_rollup" in {c.name for c in extensions.cycles()}


def test_purge_after_the_rollup_keeps_the_reports(db, settings):
    make_history()
    Job.objects.create(
        id=9, user="dave", account="chem", partition="debug", submit_time=at(10), state="PENDING"
    )
    settings.FSCHED_PURGE_JOB_AFTER = "1days"
    settings.FSCHED_PURGE_EVENT_AFTER = "24hours"
    summary = report_rollup(now=at(12, day=6))
    # Older than a day: jobs 1 and 3 (job 2 ended at 12:30) and the six events before noon;
    # the pending job stays.
    assert summary.endswith("purged 2 jobs, 6 events")
    assert sorted(Job.objects.values_list("id", flat=True)) == [2, 9]
    assert not Event.objects.filter(time__lt=at(12)).exists()
    assert Event.objects.filter(reason=PURGE_REASON).get().detail["deleted"]["jobs"] == 2
    usage = selectors.assoc_usage(selectors.window(at(10), at(12)), ["cpu"])
    assert usage[("physics", "alice")]["cpu"] == 2 * 90 * 60
    # Ten minutes on, nothing more is older than a day: no second record.
    report_rollup(now=at(12, 10, day=6))
    assert Event.objects.filter(reason=PURGE_REASON).count() == 1


def test_nothing_is_purged_before_it_is_rolled_up(db, settings):
    make_history()
    settings.FSCHED_PURGE_JOB_AFTER = "1hours"
    # A first run over a long history rolls a week at a time: the jobs of 5 January are
    # rolled by then, so the cut-off is the watermark, not an hour ago.
    report_rollup(now=at(0, day=2 + 28))
    assert Job.objects.count() == 0
    Job.objects.create(id=10, user="dave", account="chem", partition="debug", submit_time=at(10, day=29),
                       start_time=at(10, day=29), end_time=at(11, day=29), state="COMPLETED")  # fmt: skip
    report_rollup(now=at(0, day=30))
    assert Job.objects.filter(id=10).exists()  # 29 January is not rolled up yet


def test_a_bad_age_purges_nothing_and_says_why(db, settings):
    make_history()
    settings.FSCHED_PURGE_JOB_AFTER = "soon"
    assert "not purged: PurgeJobAfter=soon" in report_rollup(now=at(1, day=6))
    assert Job.objects.count() == 3
