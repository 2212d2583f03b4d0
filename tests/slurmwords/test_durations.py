"""Slurm's time limits, durations and timestamps (slurmwords.durations)."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slurmwords.durations import (
    TIMESTAMP_FORMAT,
    format_duration,
    format_duration_long,
    format_minutes,
    format_minutes_long,
    format_timestamp,
    parse_duration_seconds,
    parse_job_time_limit,
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


@pytest.mark.parametrize(
    "text",
    ["", " ", "INVALID", "1:", ":30", "1-2:", "-", "1 -2", "1- 2", "+5", "1:2:", "1-2:3:", "5\n6", "0x10"],
)
def test_parse_time_limit_rejects_malformed_fields(text: str) -> None:
    with pytest.raises(ValueError, match="Invalid time limit specification"):
        parse_time_limit(text)


@pytest.mark.parametrize("text", ["", "abc", "-5", "1-", "1-2-3", "1:2:3:4", "30s", "1.5", "1-2:3:4:5", "١٢"])
def test_parse_time_limit_rejects_junk(text: str) -> None:
    with pytest.raises(ValueError, match="Invalid time limit specification"):
        parse_time_limit(text)


def test_parse_duration_seconds_keeps_seconds() -> None:
    assert parse_duration_seconds("1:05") == 65
    assert parse_duration_seconds("1:90") == 150  # not range checked
    assert parse_duration_seconds("2-3") == 2 * 86400 + 3 * 3600  # D-H
    assert parse_duration_seconds("2-3:04") == 2 * 86400 + 3 * 3600 + 4 * 60  # D-H:M
    assert parse_duration_seconds("1:02:03") == 3723  # H:M:S
    assert parse_duration_seconds("007") == 7 * 60
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
        (90.9, "1:30"),  # fractions of a second are dropped
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
    assert format_minutes(-1) == "INVALID"


@pytest.mark.parametrize(
    ("seconds", "short", "long"),
    [
        (0, "0:00", "00:00:00"),
        (5, "0:05", "00:00:05"),
        (65, "1:05", "00:01:05"),
        (3723, "1:02:03", "01:02:03"),
        (93784, "1-02:03:04", "1-02:03:04"),
        (100 * 86400, "100-00:00:00", "100-00:00:00"),
        (-1, "INVALID", "INVALID"),
        (None, "UNLIMITED", "UNLIMITED"),
    ],
)
def test_durations_as_squeue_and_scontrol_print_them(seconds, short, long) -> None:
    assert format_duration(seconds) == short
    assert format_duration_long(seconds) == long


def test_limits_in_minutes_name_no_limit_as_the_command_does() -> None:
    assert format_minutes(60) == "1:00:00"
    assert format_minutes(2880) == "2-00:00:00"
    assert format_minutes(None, "infinite") == "infinite"  # sinfo
    assert format_minutes(0, "infinite") == "0:00"
    assert format_minutes_long(60) == "01:00:00"
    assert format_minutes_long(None, "NONE") == "NONE"  # scontrol's DefaultTime
    assert format_minutes_long(None, "") == ""  # sacctmgr's MaxWall
    assert format_minutes_long(1440 + 90, "") == "1-01:30:00"


def test_minutes_round_up_exactly_past_float_precision() -> None:
    seconds = 10**20 + 1
    assert parse_time_limit(str(seconds // 60) + ":" + str(seconds % 60)) == seconds // 60 + 1


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


def test_format_timestamp() -> None:
    assert format_timestamp(datetime(2026, 11, 30, 10, 0, tzinfo=UTC)) == "2026-11-30T10:00:00"
    assert format_timestamp(None) == "Unknown"
    assert format_timestamp(None, none="None") == "None"  # a node's BootTime
    eight = timezone(timedelta(hours=8))
    assert format_timestamp(datetime(2026, 11, 30, 10, 0, 5, 999_999, tzinfo=eight)) == "2026-11-30T10:00:05"
    assert TIMESTAMP_FORMAT == "%Y-%m-%dT%H:%M:%S"


# The grammar as regular expressions, one per form: the parser reads the same strings.
_N = "([0-9]+)"
_FORMS = [
    (f"{_N}", (60,)),
    (f"{_N}:{_N}", (60, 1)),
    (f"{_N}:{_N}:{_N}", (3600, 60, 1)),
    (f"{_N}-{_N}", (86400, 3600)),
    (f"{_N}-{_N}:{_N}", (86400, 3600, 60)),
    (f"{_N}-{_N}:{_N}:{_N}", (86400, 3600, 60, 1)),
]


def _by_the_forms(text: str) -> int | None:
    import re

    for form, weights in _FORMS:
        if m := re.fullmatch(form, text.strip()):
            return sum(int(g) * w for g, w in zip(m.groups(), weights, strict=True))
    raise ValueError(text)


@given(st.text(alphabet="0123456789-: ", max_size=12) | st.text(max_size=8))
def test_the_parser_reads_what_the_forms_read(text: str) -> None:
    if text.strip().upper() in ("UNLIMITED", "INFINITE", "-1"):
        assert parse_duration_seconds(text) is None
        return
    try:
        expected = _by_the_forms(text)
    except ValueError:
        with pytest.raises(ValueError, match="Invalid time limit specification"):
            parse_duration_seconds(text)
    else:
        assert parse_duration_seconds(text) == expected


def test_the_cli_pays_no_import_for_the_words() -> None:
    """squeue and sinfo import these on every run (cli/__init__.py's start-up budget)."""
    code = (
        "import sys\n"
        "import slurmwords.durations, slurmwords.memory, slurmwords.hostlists\n"
        "print(sorted({'re', 'typing', 'datetime', 'math', 'dataclasses'} & set(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "[]\n", done.stderr
