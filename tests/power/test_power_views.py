"""The Power page: counts, plot data from node events, program runs with failures."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from power.models import PowerRun
from power.selectors import category, power_history

pytestmark = pytest.mark.django_db


def test_categories_of_long_states():
    assert category("IDLE+CLOUD+POWERED_DOWN") == "powered_down"
    assert category("MIXED+CLOUD+POWERING_UP") == "powering_up"
    assert category("IDLE+POWERING_DOWN") == "powering_down"
    assert category("IDLE+POWER_DOWN") == "up"


def test_history_replays_node_events(demo):
    from cluster.models import Event

    now = timezone.now()
    Event.objects.filter(kind="config").update(time=now - timedelta(minutes=30))  # the controller's start
    t1, t2 = now - timedelta(minutes=10), now - timedelta(minutes=5)
    Event.objects.create(time=t1, kind="node", node="cloud01", old_state="IDLE+CLOUD+POWERED_DOWN",
                         new_state="IDLE+CLOUD+POWERING_UP")  # fmt: skip
    Event.objects.create(time=t2, kind="node", node="cloud01", old_state="IDLE+CLOUD+POWERING_UP",
                         new_state="IDLE+CLOUD+POWERED_DOWN")  # fmt: skip
    h = power_history(now)
    assert h["counts"]["powered_down"] == 4 and h["counts"]["up"] == 32
    assert h["chart"]["series"]["powering_up"] == [0, 1, 0, 0]
    assert h["chart"]["series"]["powered_down"] == [4, 3, 4, 4]
    cloud01 = [s["category"] for s in h["timeline"] if s["node"] == "cloud01"]
    assert cloud01 == ["powered_down", "powering_up", "powered_down"]
    assert {s["node"] for s in h["timeline"]} == {"cloud01", "cloud02", "cloud03", "cloud04"}


def test_history_starts_no_earlier_than_the_controller(demo):
    """A controller that started two minutes ago draws two minutes, not an hour of states
    nobody recorded; one that started long ago draws the last hour."""
    from cluster.models import Event

    now = timezone.now()
    started = now - timedelta(minutes=2)
    Event.objects.filter(kind="config").update(time=started)
    h = power_history(now)
    assert h["since"] == started.isoformat() and h["chart"]["times"][0] == started.isoformat()
    assert min(s["start"] for s in h["timeline"]) == started.isoformat()
    Event.objects.filter(kind="config").update(time=now - timedelta(days=3))
    h = power_history(now)
    assert h["chart"]["times"][0] == (now - timedelta(hours=1)).isoformat() == h["since"]


def test_power_page_lists_runs_with_failures(demo, client, users):
    start = timezone.now()
    failure = "ResumeTimeout reached: cloud01 did not register within 60 s"
    PowerRun.objects.create(
        kind="resume",
        program="demo_resume",
        nodes="cloud01",
        started=start,
        ended=start,
        exit_code=0,
        failure=failure,
    )
    PowerRun.objects.create(kind="suspend", program="demo_suspend", nodes="cloud02", started=start)
    assert client.get("/power/").status_code == 302  # login first
    client.force_login(users["alice"])
    page = client.get("/power/").content.decode()
    assert 'class="power-failed"' in page and "did not register within 60 s" in page
    assert 'class="power-running"' in page and "/plotly/" in page
    body = client.get("/power/_body").content.decode()
    assert body.startswith("{# ") is False and 'id="power-body"' in body
    data = json.loads(client.get("/power/").context["history_json"])
    assert data["counts"]["powered_down"] == 4
    # The chart's start as the console writes times, ISO kept for machines.
    since = datetime.fromisoformat(data["since"])
    shown = timezone.localtime(since).strftime("%Y-%m-%d %H:%M:%S")
    assert f'<time datetime="{data["since"]}">{shown}</time>' in page
