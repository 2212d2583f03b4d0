"""The load indices' model (load.core.indices), with the exact vectors of the load
thresholds' acceptance: a step of the run queue, or of the CPU, at t=0, 5 s samples, and
checks every 30 s that see the sample taken at the same instant."""

from __future__ import annotations

import math

import pytest

from load.core.decisions import CHECK_INTERVAL
from load.core.indices import TAU, Sampler, available_mib, ema, read_stat

IDLE_STAT = "cpu  100 0 100 800 0 0 0 0 0 0\nprocs_running 1\nprocs_blocked 0\n"
MEMINFO = "MemTotal:       16000000 kB\nMemFree:         2000000 kB\nMemAvailable:    1331200 kB\n"


def _series(tau: float, level: float, samples: int) -> list[float]:
    """E_1..E_n for a step to ``level`` at t=0 from E_0 = 0."""
    e, out = 0.0, []
    for _ in range(samples):
        e = ema(e, level, tau)
        out.append(e)
    return out


def _first_above(series: list[float], threshold: float) -> int:
    return next(k for k, e in enumerate(series, 1) if e > threshold)


def _acted_on(sample: int) -> float:
    """The check that first sees sample k (taken at t = 5k)."""
    return math.ceil(5 * sample / CHECK_INTERVAL) * CHECK_INTERVAL


@pytest.mark.parametrize(
    ("index", "threshold", "sample", "check"),
    [("r15s", 2, 3, 30), ("r1m", 2, 9, 60), ("r1m", 3, 17, 90), ("r15m", 1, 52, 270)],
)
def test_a_run_queue_step_crosses_its_threshold_when_the_spec_says(index, threshold, sample, check):
    series = _series(TAU[index], 4, 400)
    assert _first_above(series, threshold) == sample
    assert _acted_on(sample) == check


def test_r1m_at_the_checks() -> None:
    series = _series(TAU["r1m"], 4, 24)
    assert [round(series[k - 1], 4) for k in (6, 12, 18, 24)] == [1.5739, 2.5285, 3.1075, 3.4587]


def test_ut_for_a_step_to_full_use() -> None:
    assert [round(e, 3) for e in _series(TAU["ut"], 100, 3)] == [28.347, 48.658, 63.212]


def _stat(busy: int, idle: int, running: int, blocked: int = 0) -> str:
    cpu = f"cpu  {busy} 0 0 {idle} 0 0 0 0 0 0\ncpu0 {busy} 0 0 {idle}\n"
    return cpu + f"procs_running {running}\nprocs_blocked {blocked}\n"


def test_the_sampler_reproduces_the_vectors_from_proc_text() -> None:
    """The same figures through the agent's reader: a run queue of 4 (procs_running 5, the
    reader taken off) and every CPU busy from t=0."""
    sampler = Sampler(MEMINFO, _stat(0, 0, 1))
    assert sampler.indices.r1m == 0 and sampler.indices.ut == 0  # E_0 = 0 at agent start
    got = []
    for k in range(1, 25):
        got.append(sampler.sample(MEMINFO, _stat(500 * k, 0, 5)))
    assert [round(got[k - 1].r1m, 4) for k in (6, 12, 18, 24)] == [1.5739, 2.5285, 3.1075, 3.4587]
    assert [round(i.ut, 3) for i in got[:3]] == [28.347, 48.658, 63.212]
    assert got[-1].run_queue == 4 and got[-1].mem == 1300


def test_the_reader_takes_itself_off_procs_running() -> None:
    """An idle node's /proc/stat says procs_running 1: the reader itself."""
    assert read_stat(_stat(1, 1, 1)).run_queue == 0
    assert read_stat(_stat(1, 1, 3, blocked=2)).run_queue == 4
    assert read_stat(_stat(1, 1, 0)).run_queue == 0  # never below zero


def test_ut_is_the_busy_share_of_all_time_fields() -> None:
    sampler = Sampler(MEMINFO, IDLE_STAT)
    later = "cpu  130 0 110 860 0 0 0 0 0 0\nprocs_running 1\nprocs_blocked 0\n"  # 40 busy of 100
    d = math.exp(-5 / 15)
    assert sampler.sample(MEMINFO, later).ut == pytest.approx((1 - d) * 40)


def test_available_memory() -> None:
    assert available_mib(MEMINFO) == 1300
    old_kernel = "MemFree: 1024 kB\nBuffers: 1024 kB\nCached: 2048 kB\n"
    assert available_mib(old_kernel) == 4
    with pytest.raises(ValueError, match="MemAvailable"):
        available_mib("SwapTotal: 0 kB\n")
