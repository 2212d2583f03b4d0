"""One "Why is this job pending?" (#15 point 7): the job page, /limits/jobs/N/, the API and
``fsched explain`` give the same causes, for an HRES-blocked job too, and backfill's
planned start where it plans one."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest

from cli.explain import render
from cluster import explainer
from cluster.core.states import JobState
from cluster.models import Job
from cluster.services.scheduling import schedule_pass
from tests.hres.test_services import hres_conf, submit  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db


def _rows(html: str) -> list[str]:
    """The explainer table's rows, as text."""
    table = re.search(r'<table class="data explainer".*?</table>', html, re.S)
    assert table, html
    return [
        re.sub(r"<[^>]+>|\s+", " ", row).strip()
        for row in re.findall(r"<tr data-reason.*?</tr>", table.group(0), re.S)
    ]


def test_an_hres_blocked_job_is_explained_the_same_everywhere(hres_conf, client, users, api):  # noqa: F811
    first = submit(users["alice"], licenses="flat:11", nodelist="node01", time="10")
    schedule_pass()
    assert Job.objects.get(pk=first).state == JobState.RUNNING
    held = submit(users["alice"], licenses="flat:5", nodelist="node01", time="5")
    schedule_pass()
    assert Job.objects.get(pk=held).reason == "Licenses"

    client.force_login(users["alice"])
    on_job_page = _rows(client.get(f"/jobs/{held}/").content.decode())
    on_limits_page = _rows(client.get(f"/limits/jobs/{held}/").content.decode())
    assert on_job_page == on_limits_page
    assert len(on_job_page) == 1 and "layer low1 has 1 free" in on_job_page[0]
    assert "HRES flat layer low1" in on_job_page[0]

    answer = api("alice").get(f"/api/jobs/{held}/explain/").json()
    assert [c["reason"] for c in answer["causes"]] == ["Licenses"]
    assert answer["causes"][0]["holder"] in on_job_page[0]
    assert "layer low1 has 1 free [HRES flat layer low1]" in render(answer)


def test_backfill_s_planned_start_is_shown(hres_conf, client, users, api):  # noqa: F811
    first = submit(users["alice"], nodelist="node01", exclusive=True, time="10")
    schedule_pass()
    running = Job.objects.get(pk=first)
    assert running.state == JobState.RUNNING
    waiting = submit(users["alice"], nodelist="node01", exclusive=True, time="5")
    schedule_pass()
    job = Job.objects.get(pk=waiting)
    assert job.state == JobState.PENDING

    estimate = explainer.explain(job, now=running.start_time + timedelta(seconds=5)).estimate
    assert estimate is not None and estimate.nodes == "node01"
    assert abs((estimate.start - (running.start_time + timedelta(minutes=10))).total_seconds()) < 1

    answer = api("alice").get(f"/api/jobs/{waiting}/explain/").json()
    assert answer["sched_nodes"] == "node01" and answer["start_time"]
    assert re.search(r"^StartTime=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d SchedNodeList=node01$", render(answer), re.M)
    client.force_login(users["alice"])
    for url in (f"/jobs/{waiting}/", f"/limits/jobs/{waiting}/"):
        html = client.get(url).content.decode()
        assert 'class="explainer-start"' in html and "node01" in html.split('class="explainer-start"')[1]


def test_a_held_job_has_no_planned_start(hres_conf, users):  # noqa: F811
    held = submit(users["alice"], hold=True)
    schedule_pass()
    assert (
        explainer.explain(Job.objects.get(pk=held), now=Job.objects.get(pk=held).submit_time).estimate is None
    )
