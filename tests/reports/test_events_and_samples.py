"""What the raw rows keep no history of, or keep as events: the load check's drains and
stops counted per hour and day from the events, the pending jobs per reason and each HRES
layer's use sampled each hour by the rollup, and the Reports page's tables of them."""

from __future__ import annotations

import re

import pytest

from cluster.models import Event, Job
from reports.models import EventCount, Period, Sample
from reports.services import report_rollup
from tests.reports.history import at, make_history


def table(html: str) -> list[list[str]]:
    body = re.search(r'id="report-table">(.*?)</table>', html, re.S).group(1)
    return [
        [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)]
        for r in re.findall(r"<tr>(.*?)</tr>", body, re.S)
    ][1:]


@pytest.fixture
def history(db):
    make_history()
    Event.objects.create(time=at(10, 5), kind=Event.Kind.NODE, node="n1", old_state="MIXED",
                         new_state="MIXED+DRAIN", reason="Load: r1m 9.5 > LoadSchedR1m 8")  # fmt: skip
    Event.objects.create(time=at(10, 20), kind=Event.Kind.NODE, node="n1", old_state="MIXED+DRAIN",
                         new_state="MIXED+DRAIN", reason="Load: r1m 9.9 > LoadSchedR1m 8")  # fmt: skip
    Event.objects.create(
        time=at(10, 30), kind=Event.Kind.JOB, job_id=1, old_state="RUNNING", new_state="STOPPED"
    )
    Event.objects.create(time=at(11, 10), kind=Event.Kind.NODE, node="n2", old_state="IDLE",
                         new_state="IDLE+DRAIN", reason="maintenance")  # fmt: skip


def test_load_drains_and_stops_are_counted_by_hour_and_day(history, client, users):
    report_rollup(now=at(1, day=6))
    hour = {(r.what, r.name, r.count) for r in EventCount.objects.filter(period=Period.HOUR, start=at(10))}
    assert hour == {("load_drain", "n1", 1), ("load_stop", "alice", 1)}  # the second is no new drain
    assert EventCount.objects.filter(period=Period.DAY).count() == 2
    client.force_login(users["admin"])
    rows = table(
        client.get(
            "/reports/", {"report": "load", "start": "2026-01-05", "end": "2026-01-05"}
        ).content.decode()
    )
    assert rows == [
        ["2026-01-05 00:00", "day", "node drained", "n1", "1"],
        ["2026-01-05 00:00", "day", "job stopped", "alice", "1"],
    ]


def test_pending_reasons_are_sampled_each_hour_and_limits_shown(history, client, users):
    for jid, reason in ((7, "AssocGrpCpuLimit"), (8, "AssocGrpCpuLimit"), (9, "Priority")):
        Job.objects.create(id=jid, user="bob", account="chem", partition="debug", submit_time=at(9),
                           state="PENDING", reason=reason)  # fmt: skip
    report_rollup(now=at(10, 20))
    report_rollup(now=at(10, 40))  # the same hour: its samples replaced, not added
    assert {(s.name, s.value) for s in Sample.objects.filter(kind="pending")} == {
        ("AssocGrpCpuLimit", 2), ("Priority", 1),
    }  # fmt: skip
    client.force_login(users["admin"])
    html = client.get(
        "/reports/", {"report": "limits", "start": "2026-01-05", "end": "2026-01-05"}
    ).content.decode()
    assert table(html) == [["2026-01-05 10:00", "hour", "AssocGrpCpuLimit", "2.0"]]


def test_hres_layers_are_sampled(demo):
    report_rollup()
    layers = Sample.objects.filter(kind="hres")
    assert layers.exists() and all(s.total > 0 and s.value == 0 for s in layers)


def test_power_state_hours_per_node(history, client, users):
    Event.objects.create(time=at(13), kind=Event.Kind.NODE, node="n1", old_state="IDLE",
                         new_state="IDLE+POWERED_DOWN")  # fmt: skip
    report_rollup(now=at(1, day=6))
    client.force_login(users["admin"])
    html = client.get(
        "/reports/", {"report": "nodes", "start": "2026-01-05", "end": "2026-01-05"}
    ).content.decode()
    # n1 powered down from 13:00 to midnight; n2 down from 11:00 (drained idle at 11:10 too).
    assert table(html) == [["n1", "11.0", "0.0"], ["n2", "0.0", "13.0"]]
    power = table(
        client.get(
            "/reports/", {"report": "power", "start": "2026-01-05", "end": "2026-01-05"}
        ).content.decode()
    )
    assert power[0][3] == "11.0"  # the cluster's powered-down node-hours: what power saving kept off
