"""Slurm's memory sizes (slurmwords.memory)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slurmwords.memory import format_memory_mb, parse_memory_mb


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
        ("0K", 0),
        ("2kb", 1),
        (" 8G ", 8192),
        ("3Tb", 3 * 1024 * 1024),
    ],
)
def test_parse_memory_mb(text: str, mb: int) -> None:
    assert parse_memory_mb(text) == mb


@pytest.mark.parametrize(
    "text", ["-1", "-4G", "", "G", "4X", "4.5G", "4 G", "lots", "4GiB", "4B", "4GBB", "4P", "١٢", "+4"]
)
def test_parse_memory_mb_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="Invalid memory specification") as info:
        parse_memory_mb(text)
    assert repr(text) in str(info.value)


@given(st.integers(min_value=0, max_value=2**30 - 1))
def test_memory_round_trips_below_a_petabyte(mb: int) -> None:
    # Slurm's str_to_mbytes takes no P, though its printer writes one.
    assert parse_memory_mb(format_memory_mb(mb)) == mb


def test_format_memory_mb() -> None:
    assert format_memory_mb(2000) == "2000M"
    assert format_memory_mb(500) == "500M"
    assert format_memory_mb(1536) == "1536M"
    assert format_memory_mb(4096) == "4G"
    assert format_memory_mb(1024 * 1024) == "1T"
    assert format_memory_mb(2 * 1024 * 1024) == "2T"
    assert format_memory_mb(1024**3) == "1P"
    assert format_memory_mb(1024**4) == "1024P"  # P is the largest unit
    assert format_memory_mb(0) == "0"
    assert format_memory_mb(None) == "0"  # a job without --mem (squeue %m)
    with pytest.raises(ValueError, match="Invalid memory size"):
        format_memory_mb(-1)


def test_tres_memory_prints_the_same() -> None:
    from slurmwords.tres import format_count

    for mb in (1, 1536, 4096, 1024**2, 1024**3):
        assert format_count("mem", mb) == format_memory_mb(mb)
    assert format_count("mem", 0) == "0"
    assert format_count("cpu", 4096) == "4096"


@given(st.text(alphabet="0123456789KkMmGgTtPpBb -", max_size=8) | st.text(max_size=6))
def test_the_parser_reads_what_the_grammar_reads(text: str) -> None:
    import math
    import re

    m = re.fullmatch(r"([0-9]+)(?:([KkMmGgTt])[Bb]?)?", text.strip())
    if m is None:
        with pytest.raises(ValueError, match="Invalid memory specification"):
            parse_memory_mb(text)
        return
    value, unit = int(m.group(1)), (m.group(2) or "M").upper()
    expected = math.ceil(value / 1024) if unit == "K" else value * {"M": 1, "G": 1024, "T": 1024**2}[unit]
    assert parse_memory_mb(text) == expected
