"""Slurm time, duration and memory formats (cluster.slurmtime)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cluster.slurmtime import (
    format_duration,
    format_duration_long,
    format_memory_mb,
    format_minutes,
    format_minutes_long,
    format_timestamp,
    parse_begin_time,
    parse_duration_seconds,
    parse_job_time_limit,
    parse_memory_mb,
    parse_time_limit,
)

# --- time limits ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "minutes"),
    [
        ("0", 0),
        ("30", 30),
        ("90", 90),  # fields are not range checked, as in Slurm
        ("0:30", 1),  # seconds round up
        ("1:00", 1),
        ("1:01", 2),
        ("5:00", 5),
        ("1:00:00", 60),
        ("1:30:01", 91),
        ("2-3", 2 * 1440 + 180),
        ("2-03:04", 2 * 1440 + 184),
        ("2-03:04:05", 2 * 1440 + 185),
        ("7-00:00:00", 7 * 1440),
        (" 45 ", 45),
        ("UNLIMITED", None),
        ("unlimited", None),
        ("INFINITE", None),
        ("-1", None),
    ],
)
def test_parse_time_limit(text: str, minutes: int | None) -> None:
    assert parse_time_limit(text) == minutes


@pytest.mark.parametrize("text", ["", "abc", "-5", "1-", "1-2-3", "1:2:3:4", "30s", "1.5", "1-2:3:4:5", "١٢"])
def test_parse_time_limit_rejects_junk(text: str) -> None:
    with pytest.raises(ValueError, match="Invalid time limit specification"):
        parse_time_limit(text)


def test_parse_duration_seconds_keeps_seconds() -> None:
    assert parse_duration_seconds("1:05") == 65
    assert parse_duration_seconds("1-00:00:01") == 86401
    assert parse_duration_seconds("INFINITE") is None


def test_job_time_limit_zero_means_no_limit() -> None:
    # sbatch(1): "A time limit of zero requests that no time limit be imposed."
    assert parse_job_time_limit("0") is None
    assert parse_job_time_limit("0:00") is None
    assert parse_job_time_limit("0:01") == 1
    assert parse_job_time_limit("10") == 10
    assert parse_job_time_limit("UNLIMITED") is None


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0:00"),
        (5, "0:05"),
        (65, "1:05"),
        (3599, "59:59"),
        (3600, "1:00:00"),
        (36000, "10:00:00"),
        (86399, "23:59:59"),
        (86400, "1-00:00:00"),
        (2 * 86400 + 3 * 3600 + 4 * 60 + 5, "2-03:04:05"),
        (None, "UNLIMITED"),
        (-1, "INVALID"),
    ],
)
def test_format_duration(seconds: int | None, text: str) -> None:
    assert format_duration(seconds) == text


def test_format_minutes_and_long_forms() -> None:
    assert format_minutes(30) == "30:00"
    assert format_minutes(1440) == "1-00:00:00"
    assert format_minutes(None) == "UNLIMITED"
    assert format_minutes_long(30) == "00:30:00"
    assert format_minutes_long(None) == "UNLIMITED"
    assert format_duration_long(0) == "00:00:00"
    assert format_duration_long(90061) == "1-01:01:01"
    assert format_duration_long(-5) == "INVALID"


@given(st.integers(min_value=0, max_value=10**8))
def test_format_duration_round_trips(seconds: int) -> None:
    assert parse_duration_seconds(format_duration(seconds)) == seconds
    assert parse_duration_seconds(format_duration_long(seconds)) == seconds


@given(st.integers(min_value=0, max_value=10**7) | st.none())
def test_format_minutes_round_trips(minutes: int | None) -> None:
    assert parse_time_limit(format_minutes(minutes)) == minutes
    assert parse_time_limit(format_minutes_long(minutes)) == minutes


@given(st.integers(min_value=0, max_value=10**8))
def test_seconds_round_up_to_minutes(seconds: int) -> None:
    minutes = parse_time_limit(format_duration(seconds))
    assert minutes is not None
    assert (minutes - 1) * 60 < seconds <= minutes * 60 or seconds == minutes == 0


# --- memory ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "mb"),
    [
        ("500", 500),
        ("0", 0),
        ("100M", 100),
        ("4G", 4096),
        ("4g", 4096),
        ("2GB", 2048),
        ("1T", 1024 * 1024),
        ("512K", 1),  # kilobytes round up
        ("1025K", 2),
        ("1024K", 1),
    ],
)
def test_parse_memory_mb(text: str, mb: int) -> None:
    assert parse_memory_mb(text) == mb


@pytest.mark.parametrize("text", ["-1", "-4G", "", "G", "4X", "4.5G", "4 G", "lots", "4GiB"])
def test_parse_memory_mb_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="Invalid memory specification") as info:
        parse_memory_mb(text)
    assert repr(text) in str(info.value)


@given(st.integers(min_value=0, max_value=2**40))
def test_memory_round_trips(mb: int) -> None:
    assert parse_memory_mb(format_memory_mb(mb)) == mb


def test_format_memory_mb() -> None:
    assert format_memory_mb(2000) == "2000M"
    assert format_memory_mb(4096) == "4G"
    assert format_memory_mb(1024 * 1024) == "1T"


# --- timestamps and --begin -------------------------------------------------------------

NOW = datetime(2026, 11, 30, 10, 0, 0, 250_000, tzinfo=UTC)


def test_format_timestamp() -> None:
    assert format_timestamp(datetime(2026, 11, 30, 10, 0, tzinfo=UTC)) == "2026-11-30T10:00:00"
    assert format_timestamp(None) == "Unknown"


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
