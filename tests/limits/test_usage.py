"""Usage accounting, decay and resets (limits.core.usage)."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from limits.core.usage import (
    DecayPolicy,
    RunningCharge,
    UsageRecord,
    assoc_key,
    charge_record,
    clear_usage,
    decay,
    decay_record,
    next_reset,
    parse_reset_period,
    qos_key,
    reset_due,
    run_minutes,
    usage_cycle,
)

DAY = 86400.0


@given(
    st.floats(min_value=0, max_value=1e12, allow_nan=False),
    st.floats(min_value=1, max_value=1e8, allow_nan=False),
)
def test_decay_halves_usage_in_one_half_life(usage, half_life):
    assert decay(usage, half_life, half_life) == pytest.approx(usage / 2)
    assert decay(decay(usage, half_life / 3, half_life), 2 * half_life / 3, half_life) == pytest.approx(
        usage / 2
    )


def test_half_life_zero_never_decays():
    assert decay(100.0, 10 * DAY, 0) == 100.0


def test_tres_decay_half_life_overrides_and_zero_never_replenishes():
    rec = UsageRecord(raw_usage=100.0, tres_seconds={"cpu": 600.0, "mem": 600.0}, wall_seconds=60.0)
    out = decay_record(rec, 3600, 3600, tres_half_life={"cpu": 0, "mem": 1800})
    assert out.tres_seconds["cpu"] == 600.0  # frozen allocation
    assert out.tres_seconds["mem"] == pytest.approx(150.0)  # two of its half-lives
    assert out.raw_usage == pytest.approx(50.0)  # fairshare keeps the cluster half-life
    assert out.wall_seconds == pytest.approx(30.0)


def test_no_decay_qos_keeps_its_record():
    rec = UsageRecord(raw_usage=100.0, tres_seconds={"cpu": 60.0}, wall_seconds=60.0)
    assert decay_record(rec, DAY, 3600, no_decay=True) == rec


def test_charge_uses_the_usage_factor():
    rec = charge_record(UsageRecord(), {"cpu": 4, "mem": 1000}, 60, billing=5.0, factor=0.5)
    assert rec.tres_mins("cpu") == pytest.approx(2.0)
    assert rec.tres_seconds["mem"] == pytest.approx(30_000)
    assert rec.raw_usage == pytest.approx(150.0)
    assert rec.wall_mins == pytest.approx(0.5)
    assert charge_record(UsageRecord(), {"cpu": 4}, 60, billing=4, factor=0) == UsageRecord()


def test_run_minutes_booked_with_start_factor():
    assert run_minutes({"cpu": 2}, 30 * 60, 1.5) == {"cpu": pytest.approx(90.0)}
    assert run_minutes({"cpu": 2, "mem": 0}, None, 1.0) == {"cpu": float("inf"), "mem": 0.0}


def test_usage_cycle_decays_then_charges_every_key():
    keys = (assoc_key("phys", "alice"), assoc_key("phys"), assoc_key("root"), qos_key("normal"))
    records = {assoc_key("phys"): UsageRecord(raw_usage=1000.0)}
    job = RunningCharge(keys=keys, tres={"cpu": 2}, billing=2.0, start_time=50.0, usage_factor=1.0)
    policy = DecayPolicy(half_life=100.0, no_decay=frozenset({qos_key("normal")}))
    out, reset = usage_cycle(records, [job], last=0.0, now=100.0, policy=policy, last_reset=0.0)
    assert not reset
    assert out[assoc_key("phys")].raw_usage == pytest.approx(500.0 + 2 * 50)
    assert out[assoc_key("phys", "alice")].tres_seconds == {"cpu": pytest.approx(100.0)}
    assert out[qos_key("normal")].wall_seconds == pytest.approx(50.0)


def test_usage_cycle_resets_on_boundary():
    start = datetime(2026, 11, 30, 23, 0, tzinfo=UTC).timestamp()
    records = {assoc_key("phys"): UsageRecord(raw_usage=10.0, tres_seconds={"cpu": 1.0})}
    policy = DecayPolicy(half_life=0, reset_period="DAILY")
    out, reset = usage_cycle(records, [], last=start, now=start + 1800, policy=policy, last_reset=start)
    assert not reset and out[assoc_key("phys")].raw_usage == 10.0
    out, reset = usage_cycle(records, [], last=start, now=start + 3600, policy=policy, last_reset=start)
    assert reset and out[assoc_key("phys")] == UsageRecord()


@pytest.mark.parametrize(
    ("period", "at", "expected"),
    [
        ("DAILY", datetime(2026, 3, 4, 15, 0), datetime(2026, 3, 5)),
        ("WEEKLY", datetime(2026, 3, 4, 15, 0), datetime(2026, 3, 8)),  # a Wednesday -> Sunday
        ("WEEKLY", datetime(2026, 3, 8, 0, 0), datetime(2026, 3, 15)),
        ("MONTHLY", datetime(2026, 12, 31, 23, 0), datetime(2027, 1, 1)),
        ("QUARTERLY", datetime(2026, 5, 17), datetime(2026, 7, 1)),
        ("QUARTERLY", datetime(2026, 11, 2), datetime(2027, 1, 1)),
        ("YEARLY", datetime(2026, 6, 1), datetime(2027, 1, 1)),
    ],
)
def test_next_reset_boundaries(period, at, expected):
    got = next_reset(period, at.replace(tzinfo=UTC).timestamp())
    assert got == expected.replace(tzinfo=UTC).timestamp()


def test_none_and_now_periods():
    assert next_reset("NONE", 123.0) is None
    assert not reset_due("NONE", 0.0, 1e12)
    # NOW clears at start or reconfigure (the service), never in a cycle.
    assert next_reset("NOW", 123.0) is None
    assert not reset_due("NOW", 100.0, 1e12)


@pytest.mark.parametrize(
    ("period", "at", "expected"),
    [
        # The day the clocks go forward in Paris: midnights at +01:00, then +02:00.
        ("DAILY", "2026-03-28T15:00+01:00", "2026-03-29T00:00+01:00"),
        ("DAILY", "2026-03-29T15:00+02:00", "2026-03-30T00:00+02:00"),
        ("WEEKLY", "2026-10-21T12:00+02:00", "2026-10-25T00:00+02:00"),
        ("MONTHLY", "2026-10-31T23:30+01:00", "2026-11-01T00:00+01:00"),
        ("YEARLY", "2026-12-31T23:30+01:00", "2027-01-01T00:00+01:00"),
    ],
)
def test_reset_boundaries_are_local_midnights(period, at, expected):
    paris = ZoneInfo("Europe/Paris")
    got = next_reset(period, datetime.fromisoformat(at).timestamp(), paris)
    assert got == datetime.fromisoformat(expected).timestamp()


def test_bad_reset_period():
    assert parse_reset_period("monthly") == "MONTHLY"
    with pytest.raises(ValueError, match="PriorityUsageResetPeriod=FORTNIGHTLY"):
        parse_reset_period("FORTNIGHTLY")


def test_clear_usage_zeroes_named_records():
    records = {assoc_key("a"): UsageRecord(raw_usage=5.0), assoc_key("b"): UsageRecord(raw_usage=7.0)}
    out = clear_usage(records, [assoc_key("a")])
    assert out[assoc_key("a")] == UsageRecord() and out[assoc_key("b")].raw_usage == 7.0
