"""The console's view of load (#14 point 5) through Django's test client: the node page's
chart section (added by the load extension's node_page_sections hook) with its data, the
thresholds in force and the load check's marks; the load drain's reason on the node grid;
a stopped job's load reason in the job list.  The chart drawn in Chromium:
tests/browser/test_load_console.py."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.urls import reverse
from django.utils import timezone

from cluster.core.states import NodeFlag
from cluster.models import Event, Node
from load.models import NodeLoadSample
from load.services import load_check
from tests.load.test_check import compute1, report, running  # noqa: F401 - the fixture

INDICES = {"mem": 5000, "ut": 10.0, "r15s": 0.1, "r1m": 0.1, "r15m": 0.1}


@pytest.fixture
def user_client(client, compute1):  # noqa: F811
    client.force_login(User.objects.create_user("alice", password="pw"))
    return client


def chart(html: str) -> dict:
    match = re.search(r'<div id="load-chart-data"[^>]*>\s*<script[^>]*>(.*?)</script>', html, re.S)
    assert match, "no chart data"
    return json.loads(match.group(1))


def test_the_node_page_charts_the_history_with_thresholds_and_the_check_s_marks(user_client):
    now = timezone.now()
    for minutes, mem in ((120, 5000), (60, 3000), (30, 2000)):
        NodeLoadSample.objects.create(
            node="compute1", time=now - timedelta(minutes=minutes), **{**INDICES, "mem": mem}
        )
    NodeLoadSample.objects.create(node="compute1", time=now - timedelta(hours=30), **INDICES)  # past the day
    running(1, priority=100, started_ago=600)
    running(2, priority=50, started_ago=500)
    report("compute1", mem=1100)
    assert load_check() == "drain compute1, stop job 2 on compute1"
    report("compute1", mem=5000)
    assert load_check() == "continue job 2 on compute1"
    assert load_check() == "undrain compute1"
    # An administrator's drain and resume are no marks of the load check.
    Event.objects.create(time=timezone.now(), kind="node", node="compute1", old_state="IDLE",
                         new_state="IDLE+DRAIN", reason="bad fan", user="root")  # fmt: skip

    html = user_client.get("/nodes/compute1/").content.decode()
    assert f'<script src="{reverse("plotly-js")}" defer></script>' in html
    assert "load/load_chart.js" in html and 'id="load-chart"' in html
    assert 'data-live-topic="load partitions" hx-get="/load/nodes/compute1/_chart"' in html
    data = chart(html)
    assert data["partition"] == "partition-U7KH5"
    # The day's samples, oldest first; the first check's sample; the latest figures (the
    # next checks came too soon after it for a sample of their own).
    assert data["series"]["mem"] == [5000, 3000, 2000, 1100, 5000]
    assert len(data["times"]) == len(data["series"]["ut"]) == 5
    lines = {i["key"]: (i["sched"], i["stop"]) for i in data["indices"]}
    assert lines["mem"] == ({"name": "LoadSchedMem", "value": 1300}, {"name": "LoadStopMem", "value": 1200})
    assert lines["ut"] == ({"name": "LoadSchedUt", "value": 80}, {"name": "LoadStopUt", "value": 90})
    assert lines["r1m"] == (None, None)
    marks = [(m["action"], m["text"], m["figures"]["mem"]) for m in data["marks"]]
    assert marks == [
        ("drain", "drained: Load: mem=1100<LoadSchedMem=1300", 1100),
        ("stop", "job 2 stopped: Load: mem=1100<LoadStopMem=1200", 1100),
        ("continue", "job 2 continued: Load: thresholds met", 5000),
        ("undrain", "undrained: thresholds met", 5000),
    ]
    # The stop and the continue are events of the job that name the node: the node page's
    # events list them too.
    assert set(Event.objects.filter(job_id=2, user="slurm").values_list("node", flat=True)) == {"compute1"}
    assert '<a href="/jobs/2/">job 2</a>' in html
    # The fragment live.js re-fetches renders the same data.
    fragment = user_client.get("/load/nodes/compute1/_chart").content.decode()
    assert chart(fragment)["marks"] == data["marks"]


def test_a_node_without_thresholds_still_charts_its_indices(user_client):
    Node.objects.create(name="other", cpus=4)
    NodeLoadSample.objects.create(node="other", time=timezone.now(), **INDICES)
    data = chart(user_client.get("/nodes/other/").content.decode())
    assert (data["partition"], data["series"]["mem"], data["marks"]) == ("", [5000], [])
    assert all(i["sched"] is None and i["stop"] is None for i in data["indices"])


def test_the_grid_and_the_job_list_mark_the_load_check_s_work(user_client):
    running(1, priority=100, started_ago=600)
    running(2, priority=50, started_ago=500)
    report("compute1", ut=95.0)
    load_check()
    grid = user_client.get("/nodes/_grid").content.decode()
    assert (
        '<span class="tile-reason"><span class="sr-only">Reason </span>Load: ut=95&gt;LoadSchedUt=80'
        in grid
    )
    jobs = user_client.get("/jobs/_table").content.decode()
    stopped = re.search(r'<tr data-job-id="2" data-state="STOPPED">.*?</tr>', jobs, re.S).group(0)
    assert '<span class="reason-detail state-detail">Load: ut=95&gt;LoadStopUt=90</span>' in stopped
    assert "state-detail" not in re.search(r'<tr data-job-id="1".*?</tr>', jobs, re.S).group(0)
    # An administrator's drain shows the administrator's reason instead.
    Node.objects.filter(name="compute1").update(flags=NodeFlag.DRAIN, reason="bad fan", reason_user="root")
    assert "</span>bad fan</span>" in user_client.get("/nodes/_grid").content.decode()


def test_the_chart_needs_a_login_and_a_node(client, user_client):
    assert user_client.get("/load/nodes/nosuch/_chart").status_code == 404
    client.logout()
    assert client.get("/load/nodes/compute1/_chart").status_code == 302
    answer = client.get(reverse("plotly-js"))  # a static asset, no login
    assert answer.status_code == 200 and b"plotly" in answer.content[:2000].lower()


def test_the_core_s_node_page_has_no_load_section_without_the_extension(user_client, settings):
    settings.FSCHED_EXTENSIONS = ["reservations", "licenses", "limits", "arrays", "hres", "power"]
    html = user_client.get("/nodes/compute1/").content.decode()
    assert "load-chart" not in html and "plotly" not in html
