"""``--begin`` times (slurmwords.begin_time)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slurmwords.begin_time import parse_begin_time

NOW = datetime(2026, 11, 30, 10, 0, 0, 250_000, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("now", datetime(2026, 11, 30, 10, 0, 0, tzinfo=UTC)),
        ("now+60", datetime(2026, 11, 30, 10, 1, 0, tzinfo=UTC)),
        ("now+90seconds", datetime(2026, 11, 30, 10, 1, 30, tzinfo=UTC)),
        ("now+5minutes", datetime(2026, 11, 30, 10, 5, tzinfo=UTC)),
        ("now+1hour", datetime(2026, 11, 30, 11, 0, tzinfo=UTC)),
        ("now+2days", datetime(2026, 12, 2, 10, 0, tzinfo=UTC)),
        ("now+1week", datetime(2026, 12, 7, 10, 0, tzinfo=UTC)),
        ("NOW + 2 HOURS", datetime(2026, 11, 30, 12, 0, tzinfo=UTC)),
        ("now-10minutes", datetime(2026, 11, 30, 9, 50, tzinfo=UTC)),
        ("16:00", datetime(2026, 11, 30, 16, 0, tzinfo=UTC)),
        ("16:00:30", datetime(2026, 11, 30, 16, 0, 30, tzinfo=UTC)),
        ("09:00", datetime(2026, 12, 1, 9, 0, tzinfo=UTC)),  # already past today: tomorrow
        ("10:00", datetime(2026, 12, 1, 10, 0, tzinfo=UTC)),
        ("4:00 PM", datetime(2026, 11, 30, 16, 0, tzinfo=UTC)),
        ("12:30am", datetime(2026, 12, 1, 0, 30, tzinfo=UTC)),
        ("2026-12-01T08:00:00", datetime(2026, 12, 1, 8, 0, tzinfo=UTC)),
        ("2026-12-01T08:00", datetime(2026, 12, 1, 8, 0, tzinfo=UTC)),
        ("2026-12-01", datetime(2026, 12, 1, 0, 0, tzinfo=UTC)),
        ("2026-12-01 08:00", datetime(2026, 12, 1, 8, 0, tzinfo=UTC)),
        ("midnight", datetime(2026, 12, 1, 0, 0, tzinfo=UTC)),
        ("noon", datetime(2026, 11, 30, 12, 0, tzinfo=UTC)),
        ("teatime", datetime(2026, 11, 30, 16, 0, tzinfo=UTC)),
        ("today", datetime(2026, 11, 30, 0, 0, tzinfo=UTC)),
        ("Tomorrow", datetime(2026, 12, 1, 0, 0, tzinfo=UTC)),
        ("tomorrow 16:00", datetime(2026, 12, 1, 16, 0, tzinfo=UTC)),
        ("tomorrowT08:30", datetime(2026, 12, 1, 8, 30, tzinfo=UTC)),
        ("1201", datetime(2026, 12, 1, 0, 0, tzinfo=UTC)),
        ("12/24", datetime(2026, 12, 24, 0, 0, tzinfo=UTC)),
        ("12/24/27", datetime(2027, 12, 24, 0, 0, tzinfo=UTC)),
        ("11/29", datetime(2027, 11, 29, 0, 0, tzinfo=UTC)),  # no year and past: next year
        ("12.24-18:00", datetime(2026, 12, 24, 18, 0, tzinfo=UTC)),
        ("uts1800000000", datetime.fromtimestamp(1800000000, tz=UTC)),
    ],
)
def test_parse_begin_time(text: str, expected: datetime) -> None:
    assert parse_begin_time(text, NOW) == expected


def test_parse_begin_time_keeps_the_time_zone() -> None:
    tz = timezone(timedelta(hours=8))
    now = datetime(2026, 11, 30, 23, 30, tzinfo=tz)
    result = parse_begin_time("tomorrow", now)
    assert result == datetime(2026, 12, 1, 0, 0, tzinfo=tz)
    assert result.utcoffset() == timedelta(hours=8)
    assert parse_begin_time("now+1hour", now).tzinfo is tz


@pytest.mark.parametrize(
    "text",
    [
        "",
        "x",
        "later",
        "now+",
        "now+1fortnight",
        "25:00",
        "12:60",
        "13:00pm",
        "2026-13-01",
        "2026-02-30",
        "02/30",
        "now 16:00",
        "nowhere",
        "uts12",
        "16",
    ],
)
def test_parse_begin_time_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="Invalid time specification"):
        parse_begin_time(text, NOW)


@given(st.integers(min_value=0, max_value=10**7))
def test_begin_now_plus_seconds(seconds: int) -> None:
    assert parse_begin_time(f"now+{seconds}", NOW) == NOW.replace(microsecond=0) + timedelta(seconds=seconds)
