"""The load indices' history for the node page's chart (load/history.py): the load check
keeps at most one sample per node per check and per FSCHED_LOAD_SAMPLE_INTERVAL, all in
one insert, never one per heartbeat; and deletes the samples past the retention."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from cluster import extensions
from cluster.services.configuration import config_load
from config import settings as defaults  # the module's values, not a test's overrides
from load.models import NodeLoadSample
from load.services import load_check
from tests.load.test_check import CALM
from tests.load.test_config import EXAMPLE, write

NODES = [f"n{i:03d}" for i in range(40)]
INDICES = {k: v for k, v in CALM.items() if k != "run_queue"}


def heartbeat(names: list[str], *, at, **indices) -> None:
    """What an agent's heartbeat does with its figures (the load extension's hook)."""
    figures = {**CALM, **indices}
    extensions.node_heartbeat({n: {"indices": figures} for n in names}, now=at)


def sample_inserts(queries) -> list[str]:
    return [q["sql"] for q in queries if q["sql"].startswith('INSERT INTO "load_nodeloadsample"')]


@pytest.fixture
def cluster(db, tmp_path):
    config_load(path=write(tmp_path, EXAMPLE.replace(" State=CLOUD", "")))
    return tmp_path


def test_one_insert_per_check_and_one_row_per_node_per_interval(cluster, settings):
    settings.FSCHED_LOAD_SAMPLE_INTERVAL = 60
    settings.FSCHED_LOAD_INTERVAL = 30
    t0 = timezone.now()
    # Heartbeats every 5 s between checks write the latest figures only, no history.
    for k in range(6):
        heartbeat(NODES, at=t0 + timedelta(seconds=5 * k), ut=float(k))
    assert NodeLoadSample.objects.count() == 0
    check = t0 + timedelta(seconds=26)
    with CaptureQueriesContext(connection) as queries:
        load_check(now=check)
    assert len(sample_inserts(queries)) == 1
    rows = NodeLoadSample.objects.order_by("node")
    assert [r.node for r in rows] == NODES
    assert {(r.ut, r.time) for r in rows} == {(5.0, t0 + timedelta(seconds=25))}  # the latest figures
    # The same check again, or the next one 30 s on: too soon for a node sampled 30 s ago.
    load_check(now=check)
    heartbeat(NODES, at=t0 + timedelta(seconds=55), ut=55.0)
    with CaptureQueriesContext(connection) as queries:
        load_check(now=t0 + timedelta(seconds=56))
    assert sample_inserts(queries) == []
    assert NodeLoadSample.objects.count() == len(NODES)
    # The check 60 s on samples every node again, in one insert; a silent node is skipped.
    heartbeat(NODES[1:], at=t0 + timedelta(seconds=85), ut=85.0)
    with CaptureQueriesContext(connection) as queries:
        load_check(now=t0 + timedelta(seconds=86))
    assert len(sample_inserts(queries)) == 1
    assert NodeLoadSample.objects.count() == 2 * len(NODES) - 1
    assert not NodeLoadSample.objects.filter(node=NODES[0], ut=85.0).exists()
    assert set(NodeLoadSample.objects.filter(ut=85.0).values_list("node", flat=True)) == set(NODES[1:])


def test_an_interval_shorter_than_the_check_samples_every_check_once(cluster, settings):
    settings.FSCHED_LOAD_SAMPLE_INTERVAL = 5
    settings.FSCHED_LOAD_INTERVAL = 30
    t0 = timezone.now()
    heartbeat(["compute1"], at=t0)
    load_check(now=t0)
    load_check(now=t0 + timedelta(seconds=1))  # no new figures: no new sample
    assert NodeLoadSample.objects.count() == 1
    heartbeat(["compute1"], at=t0 + timedelta(seconds=30), mem=1250)
    load_check(now=t0 + timedelta(seconds=30))
    assert list(NodeLoadSample.objects.order_by("time").values_list("mem", flat=True)) == [5000, 1250]


def test_samples_past_the_retention_are_pruned_by_the_check(cluster, settings):
    settings.FSCHED_LOAD_HISTORY_HOURS = 24
    now = timezone.now()
    for hours in (30, 24.5, 23.5, 1):
        NodeLoadSample.objects.create(node="compute1", time=now - timedelta(hours=hours), **INDICES)
    with CaptureQueriesContext(connection) as queries:
        assert load_check(now=now) == "no node with thresholds and indices"  # pruned all the same
    deletes = [q["sql"] for q in queries if q["sql"].startswith("DELETE")]
    assert len(deletes) == 1  # one statement, not a row at a time
    times = NodeLoadSample.objects.values_list("time", flat=True)
    kept = sorted(round((now - t).total_seconds() / 3600, 1) for t in times)
    assert kept == [1.0, 23.5]
    settings.FSCHED_LOAD_HISTORY_HOURS = 0.5
    load_check(now=now)
    assert NodeLoadSample.objects.count() == 0


def test_the_default_keeps_a_day():
    assert defaults.FSCHED_LOAD_HISTORY_HOURS >= 24
    assert defaults.FSCHED_LOAD_SAMPLE_INTERVAL >= defaults.FSCHED_LOAD_INTERVAL

