"""The load check stops early when no node has fresh indices, and its prune when no sample
is past the retention (load.services._fresh_indices, load.history.prune): on random rows
and times, inside the simulator's keep() (the newest and oldest times kept between checks)
and outside, each shortcut answers what a read of the rows answers."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from cluster.services import pass_snapshot
from load import history, services
from load.models import NodeLoad, NodeLoadSample

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 1, 2, tzinfo=UTC)


def _reading(node: str, at: datetime) -> None:
    NodeLoad.objects.update_or_create(
        node=node,
        defaults={"mem": 1, "ut": 0.0, "r15s": 0.0, "r1m": 0.0, "r15m": 0.0, "run_queue": 0, "at": at},
    )


def _sample(node: str, at: datetime) -> None:
    NodeLoadSample.objects.create(node=node, time=at, mem=1, ut=0.0, r15s=0.0, r1m=0.0, r15m=0.0)


def _steps(seed: int) -> None:
    """Random writes and checks; every check compared with a read of the rows."""
    rng = random.Random(seed)
    now = T0
    retention = history.retention()
    for _ in range(40):
        roll = rng.random()
        if roll < 0.3:
            # Whole seconds, and sometimes exactly on the freshness limit.
            _reading(f"n{rng.randint(1, 4)}", now - timedelta(seconds=rng.choice([0, 5, 29, 30, 31, 300])))
        elif roll < 0.5:
            _sample(
                f"n{rng.randint(1, 4)}", now - retention + timedelta(seconds=rng.choice([-60, -1, 0, 1, 600]))
            )
        elif roll < 0.55:
            NodeLoad.objects.filter(node=f"n{rng.randint(1, 4)}").delete()
        now += timedelta(seconds=rng.choice([0, 1, 10, 30, 31, 600]))
        fresh = NodeLoad.objects.filter(at__gte=now - services.STALE_AFTER).exists()
        assert services._fresh_indices(now) == fresh
        past = NodeLoadSample.objects.filter(time__lt=now - retention).count()
        assert history.prune(now=now) == past
        assert not NodeLoadSample.objects.filter(time__lt=now - retention).exists()


@pytest.mark.parametrize("seed", range(20))
def test_the_shortcuts_answer_what_the_rows_say_inside_keep(seed) -> None:
    with pass_snapshot.keep():
        _steps(seed)


@pytest.mark.parametrize("seed", range(5))
def test_the_shortcuts_answer_what_the_rows_say_outside_keep(seed) -> None:
    _steps(seed)


def test_a_check_without_fresh_indices_says_so_and_prunes() -> None:
    _reading("n1", T0 - timedelta(seconds=31))
    _sample("n1", T0 - history.retention() - timedelta(seconds=1))
    assert services.load_check(now=T0) == "no node with thresholds and indices"
    assert not NodeLoadSample.objects.exists()
