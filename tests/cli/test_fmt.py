"""Slurm's time, size, field-width and hostlist spellings (cli/fmt.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cli.fmt import (
    Field,
    expand_hostlist,
    fold_hostlist,
    fold_ids,
    limit_short,
    mem_str,
    mins2time_str,
    pad,
    parse_format,
    render,
    secs2time_short,
    secs2time_str,
    slurm_time,
)


@pytest.mark.parametrize(
    ("secs", "short", "long"),
    [
        (0, "0:00", "00:00:00"),
        (5, "0:05", "00:00:05"),
        (65, "1:05", "00:01:05"),
        (3723, "1:02:03", "01:02:03"),
        (93784, "1-02:03:04", "1-02:03:04"),
        (-1, "INVALID", "INVALID"),
        (None, "UNLIMITED", "UNLIMITED"),
    ],
)
def test_durations_as_squeue_and_scontrol_print_them(secs, short, long):
    assert secs2time_short(secs) == short
    assert secs2time_str(secs) == long


def test_limits_in_minutes():
    assert limit_short(60) == "1:00:00"
    assert limit_short(30) == "30:00"
    assert limit_short(2880) == "2-00:00:00"
    assert limit_short(None, "infinite") == "infinite"
    assert mins2time_str(60) == "01:00:00"
    assert mins2time_str(None) == "UNLIMITED"


def test_timestamps_print_local_without_zone():
    assert slurm_time("2024-03-01T10:00:05Z") == "2024-03-01T10:00:05"
    assert slurm_time("2024-03-01T10:00:05+00:00") == "2024-03-01T10:00:05"
    assert slurm_time(None) == "N/A"
    assert slurm_time("", "Unknown") == "Unknown"


def test_memory_sizes_use_the_largest_exact_unit():
    assert mem_str(0) == "0"
    assert mem_str(500) == "500M"
    assert mem_str(4096) == "4G"
    assert mem_str(1536) == "1536M"
    assert mem_str(2 * 1024 * 1024) == "2T"


def test_format_spec_parsing():
    assert parse_format("%.18i %-10j%5P|%%%#N") == [
        Field("i", 18, True),
        " ",
        Field("j", 10, False),
        Field("P", 5, False),
        "|%",
        Field("N", 0, False, auto=True),
    ]
    with pytest.raises(ValueError):
        parse_format("%.18")


def test_padding_justifies_and_cuts_like_slurm():
    assert pad("wrap", 8, right=True) == "    wrap"
    assert pad("wrap", 8) == "wrap    "
    assert pad("a_very_long_name", 8, right=True) == "a_very_l"
    assert pad("a_very_long_name", 8) == "a_very_l"
    assert pad("NODELIST", 4, cut=False) == "NODELIST"
    assert pad("x", 0) == "x"


def test_render_a_line():
    tokens = parse_format("%.5i|%-4j|")
    values = {"i": "12", "j": "jobname"}
    assert render(tokens, lambda f: values[f.kind]) == "   12|jobn|"


def test_hostlists_fold_and_expand():
    assert fold_hostlist(["node01", "node02", "node03", "node05"]) == "node[01-03,05]"
    assert fold_hostlist(["node10", "node09", "node01"]) == "node[01,09-10]"
    assert fold_hostlist(["n1", "n2", "n10"]) == "n[1-2,10]"
    assert fold_hostlist(["gpu1", "node01", "login"]) == "gpu1,login,node01"
    assert fold_hostlist(["node05"]) == "node05"
    assert fold_hostlist([]) == ""
    assert expand_hostlist("node[01-03,05],gpu1") == ["node01", "node02", "node03", "node05", "gpu1"]
    assert expand_hostlist("r[1-2]n[1-2]") == ["r1n1", "r1n2", "r2n1", "r2n2"]
    assert expand_hostlist("") == []
    for bad in ("node[01-", "node[a-b]", "node]"):
        with pytest.raises(ValueError):
            expand_hostlist(bad)


def test_array_ids_fold():
    assert fold_ids([3, 4, 5, 9, 1]) == "1,3-5,9"


@given(st.sets(st.integers(min_value=0, max_value=300), min_size=1, max_size=40), st.sampled_from([0, 2, 3]))
def test_fold_then_expand_round_trips(numbers, width):
    names = [f"node{str(n).zfill(width)}" for n in numbers]
    assert sorted(expand_hostlist(fold_hostlist(names))) == sorted(set(names))
