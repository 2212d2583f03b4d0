"""The controller's processes collect their youngest generation after 20,000 net
allocations, not CPython's 700 (cluster/collector.py): a Celery worker, and the simulator's
engine while it runs, restored after."""

from __future__ import annotations

import gc

import pytest

from cluster import collector


@pytest.fixture
def threshold():
    before = gc.get_threshold()
    yield before
    gc.set_threshold(*before)


def test_tune_raises_only_the_youngest_threshold(threshold) -> None:
    gc.set_threshold(700, 10, 10)
    collector.tune()
    assert gc.get_threshold() == (collector.YOUNGEST, 10, 10)
    gc.set_threshold(50_000, 5, 7)  # set higher by someone else: left so
    collector.tune()
    assert gc.get_threshold() == (50_000, 5, 7)


def test_tuned_restores_the_thresholds(threshold) -> None:
    gc.set_threshold(700, 10, 10)
    with collector.tuned():
        assert gc.get_threshold()[0] == collector.YOUNGEST
    assert gc.get_threshold() == (700, 10, 10)


def test_the_engine_runs_tuned(threshold, monkeypatch, tmp_path) -> None:
    from simulator import engine

    seen = []
    monkeypatch.setattr(engine.Engine, "_run", lambda self: seen.append(gc.get_threshold()))
    gc.set_threshold(700, 10, 10)
    engine.Engine(conf_dir=tmp_path, jobs=[], out_dir=tmp_path / "out", workload_name="t").run()
    assert seen == [(collector.YOUNGEST, 10, 10)]
    assert gc.get_threshold() == (700, 10, 10)


def test_a_celery_worker_starts_tuned(threshold) -> None:
    from config import celery

    gc.set_threshold(700, 10, 10)
    celery._collector_for_worker()
    assert gc.get_threshold() == (collector.YOUNGEST, 10, 10)
