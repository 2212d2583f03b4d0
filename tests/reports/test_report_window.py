"""sreport's window as slurmdbd sets it (src/common/slurmdb_defs.c,
slurmdb_report_set_start_end_time): a given start or end is rounded to the nearest hour
(seconds >= 30 round the minute up first), the default is yesterday, and the window is
at least an hour. fsched rounded the start down and the end up."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from reports.selectors import window

pytestmark = pytest.mark.django_db


def t(hour: int, minute: int = 0, second: int = 0) -> datetime:
    return datetime(2026, 3, 10, hour, minute, second, tzinfo=UTC)


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        (t(10), t(12), (t(10), t(12))),
        (t(10, 29), t(12, 29, 29), (t(10), t(12))),
        (t(10, 30), t(12, 31), (t(11), t(13))),
        (t(10, 29, 30), t(11, 59, 59), (t(11), t(12))),
        # Less than an hour once rounded: one hour from the start.
        (t(10, 10), t(10, 20), (t(10), t(11))),
    ],
)
def test_given_ends_round_to_the_nearest_hour(settings, start, end, expected):
    settings.TIME_ZONE = "UTC"
    w = window(start, end, now=t(23))
    assert (w.start, w.end) == expected


def test_the_default_is_yesterday(settings):
    settings.TIME_ZONE = "UTC"
    w = window(None, None, now=t(15, 45))
    assert (w.start, w.end) == (datetime(2026, 3, 9, tzinfo=UTC), datetime(2026, 3, 10, tzinfo=UTC))
