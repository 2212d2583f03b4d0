"""A quantity over virtual time (CPUs allocated, an HRES layer's use) in bounded memory.

The event log of a long simulation changes a quantity hundreds of thousands of times; the
report keeps its exact integral, peak and a series of at most ``BINS`` points whatever the
number of changes.  The time axis is cut into ``BINS`` equal bins; when an event falls past
the last one, neighbouring bins are merged two by two and the width doubles, so the span
is never known in advance (the log says it on its last line only).  Each bin holds the
integral of the quantity over it, exactly, so a point is the time-weighted mean over its
bin; consecutive equal points are dropped, so a log that changes the quantity on whole
seconds within the first ``BINS`` seconds gets back its exact change points.
"""

from __future__ import annotations

import math

BINS = 512
FIRST_WIDTH = 1.0  # seconds; doubled as often as the span needs
DIGITS = 6  # points are rounded so that float noise does not make equal means differ


class StepSeries:
    """A step function of time, fed with ``set(t, value)`` in time order."""

    __slots__ = ("_since", "_sums", "_value", "_width", "integral", "peak")

    def __init__(self, value: float = 0.0) -> None:
        self._sums = [0.0] * BINS
        self._width = FIRST_WIDTH
        self._since = 0.0
        self._value = float(value)
        self.integral = 0.0  # value * seconds, from 0 to the last time fed
        self.peak = float(value)

    @property
    def value(self) -> float:
        return self._value

    def set(self, t: float, value: float) -> None:
        """The quantity is ``value`` from ``t`` on (``t`` never earlier than the last one)."""
        self.advance(t)
        self._value = float(value)
        self.peak = max(self.peak, self._value)

    def add(self, t: float, delta: float) -> None:
        self.set(t, self._value + delta)

    def advance(self, t: float) -> None:
        """Integrate the current value up to ``t``."""
        t0 = self._since
        if t <= t0:
            return
        self._since = t
        value = self._value
        if value == 0.0:
            self._cover(t)
            return
        self.integral += value * (t - t0)
        self._cover(t)
        width = self._width
        first, last = int(t0 // width), min(math.ceil(t / width) - 1, BINS - 1)
        for i in range(first, last + 1):
            lo, hi = max(t0, i * width), min(t, (i + 1) * width)
            if hi > lo:
                self._sums[i] += value * (hi - lo)

    def _cover(self, t: float) -> None:
        while t > self._width * BINS:
            sums = self._sums
            self._sums = [sums[2 * i] + sums[2 * i + 1] for i in range(BINS // 2)] + [0.0] * (BINS // 2)
            self._width *= 2

    def mean(self, span: float) -> float | None:
        """The time-weighted mean over [0, span] (the series advanced to ``span`` first)."""
        self.advance(span)
        return round(self.integral / span, DIGITS) if span > 0 else None

    def points(self, span: float) -> list[list[float]]:
        """``[[t, mean over the bin that starts at t], ...]``, consecutive equal values
        dropped; the last point holds until ``span``."""
        self.advance(span)
        out: list[list[float]] = []
        if span <= 0:
            return [[0.0, round(self._value, DIGITS)]]
        width = self._width
        for i in range(min(BINS, math.ceil(span / width))):
            lo, hi = i * width, min((i + 1) * width, span)
            mean = round(self._sums[i] / (hi - lo), DIGITS)
            if not out or out[-1][1] != mean:
                out.append([round(lo, DIGITS), mean])
        return out
