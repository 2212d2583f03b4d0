"""cluster/overview.py: the dashboard's read, its GPU share and its 24-hour trend (#15 point 6)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from cluster import overview
from cluster.core.states import NodeBase, NodeFlag
from cluster.models import Job, Node, OverviewSample

pytestmark = pytest.mark.django_db


def test_the_trend_takes_a_sample_every_five_minutes_and_keeps_a_day(demo):
    t0 = timezone.now()
    overview.read_overview(now=t0, record=True)
    assert OverviewSample.objects.count() == 1
    overview.read_overview(now=t0 + timedelta(minutes=1), record=True)
    assert OverviewSample.objects.count() == 1
    overview.read_overview(now=t0 + timedelta(minutes=5), record=True)
    assert OverviewSample.objects.count() == 2
    later = overview.read_overview(now=t0 + timedelta(hours=24, minutes=4), record=True)
    # The first sample is more than a day old: deleted; the second is kept, a third taken.
    assert list(OverviewSample.objects.order_by("time").values_list("time", flat=True)) == [
        t0 + timedelta(minutes=5),
        t0 + timedelta(hours=24, minutes=4),
    ]
    assert len(later.trend.times) == 2


def test_a_page_read_writes_nothing(demo, users, client):
    client.force_login(users["alice"])
    assert client.get("/").status_code == 200
    assert not OverviewSample.objects.exists()


def test_the_trend_is_drawn_over_the_last_day(demo):
    now = timezone.now()
    OverviewSample.objects.create(
        time=now - timedelta(hours=12), jobs_running=4, jobs_pending=2, cpus_alloc=36, cpus_total=144
    )
    trend = overview.read_overview(now=now).trend
    # Half way along the day; 4 running is the top of the jobs' scale, 2 pending half of it.
    assert trend.running_points.split()[0] == "144.0,0.0"
    assert trend.pending_points.split()[0] == "144.0,30.0"
    assert trend.cpu_points.split()[0] == "144.0,45.0"  # 25% of CPUs


def test_gpus_in_use_count_each_node_a_job_holds(demo):
    Node.objects.update(gres="")  # not the demo's own GPUs: these alone
    Node.objects.filter(name__in=["node01", "node02"]).update(gres="gpu:4")
    Node.objects.filter(name="node03").update(gres="gpu:tesla:2")
    Node.objects.filter(name__in=["node01", "node02"]).update(base_state=NodeBase.MIXED, flags=NodeFlag.NONE)
    now = timezone.now()
    Job.objects.create(
        id=1,
        user="alice",
        partition="debug",
        submit_time=now,
        state="RUNNING",
        gres="gpu:2",
        alloc={"node01": [1, 100], "node02": [1, 100]},
    )
    Job.objects.create(
        id=2, user="alice", partition="debug", submit_time=now, state="COMPLETED", gres="gpu:4"
    )
    figures = overview.read_figures(now=now)
    assert (figures.gpus.used, figures.gpus.total) == (4, 10)
    assert figures.gpus.pct == 40
    assert [b.label for b in overview.read_overview(now=now).shares] == ["CPUs", "Memory", "GPUs"]


def test_the_hres_panel_shows_each_resource_s_fullest_layers(demo, users):
    from cluster.services.jobs import job_submit
    from cluster.services.scheduling import schedule_pass

    Node.objects.filter(name="node05").update(base_state=NodeBase.IDLE, flags=NodeFlag.NONE)
    spec = {"wrap": "sleep 100", "work_dir": "/tmp", "licenses": "flat:6", "nodelist": "node05"}
    job_submit(user=users["alice"], spec=spec)
    schedule_pass()
    panel = next(p for p in overview.read_overview(now=timezone.now()).panels if p.title == "HRES use")
    bars = {b.label: (b.pct, b.text) for b in panel.bars}
    # node05 is in flat's low1 (12), mid1 (16) and top (24), each charged 6 (Mode 2).
    assert list(bars)[:3] == ["flat low1", "flat mid1", "flat top"]
    assert bars["flat low1"] == (50, "6/12") and bars["flat mid1"] == (38, "6/16")
    assert bars["flat top"] == (25, "6/24")
    assert {label.split()[0] for label in bars} == {"flat", "natural", "power"}
    assert len(bars) == 9
