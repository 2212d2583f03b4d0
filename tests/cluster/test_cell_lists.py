"""Events, the audit log and the node table as lists (#15 point 3): pages, filters in the
URL, sorting, exports of the filtered list, 400s for bad parameters; the audit log for
staff only."""

from __future__ import annotations

import csv
import io
import re
from datetime import timedelta

import pytest
from auditlog.models import LogEntry
from django.contrib.auth.models import User
from django.contrib.contenttypes.models import ContentType
from django.utils import timezone

from cluster.core.states import NodeBase, NodeFlag
from cluster.models import Event, Node, Partition

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(client):
    user = User.objects.create_user("root", password="pw", is_staff=True)
    client.force_login(user)
    return client


def keys(html: str) -> list[str]:
    return re.findall(r'<tr data-key="([^"]+)"', html)


def cells(html: str) -> list[list[str]]:
    body = re.search(r"<tbody>(.*?)</tbody>", html, re.S).group(1)
    return [
        [
            re.sub(r"<[^>]+>", "", c).replace("&gt;", ">").strip()
            for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)
        ]
        for r in re.findall(r"<tr data-key[^>]*>(.*?)</tr>", body, re.S)
    ]


def exported(client, html: str) -> list[list[str]]:
    url = re.search(r'href="([^"]+)" download data-export="csv"', html).group(1).replace("&amp;", "&")
    return list(csv.reader(io.StringIO(client.get(url).content.decode())))


# --- events ----------------------------------------------------------------------------------


@pytest.fixture
def many_events():
    now = timezone.now()
    Event.objects.bulk_create(
        Event(
            time=now - timedelta(minutes=i),
            kind="job" if i % 3 else "node",
            job_id=i if i % 3 else None,
            node="" if i % 3 else f"node{i % 4:02d}",
            old_state="PENDING",
            new_state="RUNNING",
            user=("alice", "root")[i % 2],
        )
        for i in range(250)
    )
    return now


def test_events_page_to_the_oldest(staff, many_events):
    html = staff.get("/events/").content.decode()
    assert "Rows 1 to 100 of 250, page 1 of 3." in html
    last = staff.get("/events/_table?page=3").content.decode()
    assert "Rows 201 to 250 of 250" in last
    assert cells(last)[-1][2] == "node01"  # i = 249: a node event


def test_events_filter_sort_and_export(staff, many_events):
    since = (timezone.localtime(many_events) - timedelta(minutes=30, seconds=30)).strftime(
        "%Y-%m-%dT%H:%M:%S"
    )
    html = staff.get(f"/events/_table?kind=node&since={since}&sort=user").content.decode()
    shown = cells(html)
    assert len(shown) == 11  # i = 0, 3, ..., 30
    assert {r[1] for r in shown} == {"node"}
    assert [r[5] for r in shown] == ["alice"] * 6 + ["root"] * 5
    assert exported(staff, html)[1:] == shown
    assert len(cells(staff.get("/events/_table?node=node[01-02]").content.decode())) == 42
    assert cells(staff.get("/events/_table?job=7").content.decode())[0][3] == "PENDING → RUNNING"


@pytest.mark.parametrize("query", ["kind=bogus", "since=yesterday", "job=x", "sort=reason", "page=-1"])
def test_events_bad_parameters_are_400(staff, many_events, query):
    for url in ("/events/", "/events/_table", "/events/export"):
        assert staff.get(f"{url}?{query}").status_code == 400


# --- audit log -------------------------------------------------------------------------------


@pytest.fixture
def entries(db):
    alice = User.objects.create_user("alice")
    bob = User.objects.create_user("bob")
    ct = ContentType.objects.get_for_model(Node)
    now = timezone.now()
    for i in range(130):
        entry = LogEntry.objects.create(
            content_type=ct,
            object_pk=f"node{i:03d}",
            object_repr=f"node{i:03d}",
            action=LogEntry.Action.UPDATE,
            changes={"reason": ["", f"fan {i}"]},
            actor=(alice, bob)[i % 2],
        )
        LogEntry.objects.filter(pk=entry.pk).update(timestamp=now - timedelta(hours=i))
    return now


def test_audit_log_is_for_staff_only(client, entries):
    client.force_login(User.objects.get(username="alice"))
    for url in ("/audit/", "/audit/_table", "/audit/export"):
        assert client.get(url).status_code == 403
    assert "/audit/" not in client.get("/jobs/").content.decode()


def test_audit_log_pages_filters_and_exports(staff, entries):
    html = staff.get("/audit/").content.decode()
    # The 130 entries and those the set-up made itself (the cycles' rows are audited).
    assert f"Rows 1 to 100 of {LogEntry.objects.count()}" in html
    assert 'href="/audit/" aria-current="page"' in html
    assert '<option value="cluster.node">cluster.node</option>' in html
    assert cells(staff.get("/audit/_table?page=2").content.decode())[-1][3] == "node129"
    until = (timezone.localtime(entries) - timedelta(hours=9, minutes=30)).strftime("%Y-%m-%dT%H:%M")
    html = staff.get(f"/audit/_table?model=cluster.node&user=bob&until={until}&per_page=25").content.decode()
    shown = cells(html)
    assert [r[3] for r in shown[:2]] == ["node011", "node013"]
    assert len(shown) == 25 and "of 60," in html
    assert shown[0][4] == "reason:  \u2192 fan 11"  # from "" to "fan 11"
    assert exported(staff, html)[1:26] == shown
    assert [r[3] for r in cells(staff.get("/audit/_table?object=node007").content.decode())] == ["node007"]
    assert staff.get("/audit/_table?action=explode").status_code == 400


# --- nodes -----------------------------------------------------------------------------------


@pytest.fixture
def many_nodes(db):
    Partition.objects.create(name="debug", nodes="n[001-150]", is_default=True)
    Node.objects.bulk_create(
        Node(
            name=f"n{i:03d}",
            cpus=8,
            alloc_cpus=i % 9,
            base_state=NodeBase.MIXED if i % 9 else NodeBase.IDLE,
            flags=NodeFlag.DRAIN if i % 50 == 7 else 0,
            reason="bad fan" if i % 50 == 7 else "",
            real_memory=1000 + i,
        )
        for i in range(1, 151)
    )


def test_node_table_pages_filters_sorts_and_exports(staff, many_nodes):
    html = staff.get("/nodes/?view=table").content.decode()
    assert keys(html)[:3] == ["n001", "n002", "n003"]
    assert "Rows 1 to 100 of 150" in html
    assert keys(staff.get("/nodes/_table?view=table&page=2").content.decode())[-1] == "n150"
    html = staff.get("/nodes/_table?view=table&state=drng&sort=-memory").content.decode()
    shown = cells(html)
    assert [r[0] for r in shown] == ["n107", "n057", "n007"]
    assert shown[0][2:4] == ["drng", "8/0/0/8"]
    assert exported(staff, html) == [
        ["NODELIST", "PARTITION", "STATE", "CPUS(A/I/O/T)", "MEMORY", "FREE_MEM", "CPU_LOAD", "REASON"],
        *shown,
    ]
    assert keys(staff.get("/nodes/_table?name=n[010-012]").content.decode()) == ["n010", "n011", "n012"]
    assert staff.get("/nodes/_table?state=sleepy").status_code == 400
    # The grid is still the page's default, linking to the table.
    assert 'href="/nodes/?view=table"' in staff.get("/nodes/").content.decode()
