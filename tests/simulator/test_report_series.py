"""A quantity over virtual time in bounded memory (simulator/report_series.py)."""

from __future__ import annotations

import pytest

from simulator.report_series import BINS, StepSeries


def test_whole_second_changes_come_back_exactly() -> None:
    s = StepSeries()
    s.set(3, 2)
    s.add(7, 3)
    s.set(9, 0)
    assert s.points(12) == [[0, 0], [3, 2], [7, 5], [9, 0]]
    assert s.peak == 5
    assert s.mean(12) == pytest.approx((2 * 4 + 5 * 2) / 12, abs=1e-6)


def test_a_long_span_merges_bins_and_keeps_the_integral() -> None:
    # 1024 s > 512 bins of 1 s: the bins become 2 s wide. 2 until t=601, 0 after: the bin
    # [600, 602) holds 2 for one second of two, a mean of 1.
    s = StepSeries()
    s.set(0, 2)
    s.set(601, 0)
    assert s.points(1024) == [[0, 2], [600, 1], [602, 0]]
    assert s.mean(1024) == pytest.approx(2 * 601 / 1024, abs=1e-6)
    assert s.peak == 2


def test_points_stay_bounded_however_many_changes() -> None:
    s = StepSeries()
    for t in range(100_000):
        s.set(t * 3.5, t % 7)
    points = s.points(350_000)
    assert len(points) <= BINS
    # The mean of t % 7 over whole cycles is 3; the integral is exact, not sampled.
    assert s.mean(350_000) == pytest.approx(3, abs=1e-4)
    assert s.peak == 6
