"""The console's job list (#15 point 3): pages with a count and no cap, sorting, squeue's
filters kept in the URL, arrays folded as squeue folds them, and exports of the filtered
list that hold what the table shows."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from openpyxl import load_workbook

from cluster.models import Job, Partition

pytestmark = pytest.mark.django_db


def make_jobs(n: int, **kw) -> None:
    now = timezone.now()
    Job.objects.bulk_create(
        Job(
            id=i,
            name=f"job{i:05d}",
            user=("alice", "bob")[i % 2],
            account=("physics", "chem")[i % 2],
            partition="debug",
            state="COMPLETED",
            node_list="node01",
            submit_time=now,
            start_time=now - timedelta(minutes=5),
            end_time=now,
            **kw,
        )
        for i in range(1, n + 1)
    )


@pytest.fixture
def client_in(client):
    Partition.objects.create(name="debug", nodes="node[01-04]", is_default=True)
    client.force_login(User.objects.create_user("alice", password="pw"))
    return client


def ids(html: str) -> list[int]:
    return [int(i) for i in re.findall(r'<tr data-job-id="(\d+)"', html)]


def test_pages_reach_the_last_of_2000_jobs(client_in):
    make_jobs(2000)
    first = client_in.get("/jobs/?state=all").content.decode()
    assert ids(first) == list(range(2000, 1900, -1))  # newest first, 100 a page
    assert "Jobs 1 to 100 of 2000, page 1 of 20." in first
    assert 'href="/jobs/?state=all&amp;page=20"' in first
    last = client_in.get("/jobs/_table?state=all&page=20").content.decode()
    assert ids(last) == list(range(100, 0, -1))
    assert "Jobs 1901 to 2000 of 2000, page 20 of 20." in last
    assert 'rel="next"' not in last


def test_a_page_costs_a_fixed_number_of_queries(client_in):
    make_jobs(600)
    client_in.get("/jobs/_table?state=all")  # the configuration's caches, read once a process
    with CaptureQueriesContext(connection) as small:
        client_in.get("/jobs/_table?state=all&per_page=25")
    with CaptureQueriesContext(connection) as large:
        client_in.get("/jobs/_table?state=all&per_page=500&page=2")
    assert len(small) == len(large) <= 6


def test_a_page_past_the_end_shows_the_last_and_says_so_in_the_address(client_in):
    make_jobs(250)
    response = client_in.get(
        "/jobs/_table?state=all&page=99",
        headers={"HX-Request": "true", "HX-Current-URL": "http://testserver/jobs/?state=all&page=99"},
    )
    assert response.status_code == 200
    assert ids(response.content.decode()) == list(range(50, 0, -1))
    assert response["HX-Replace-Url"] == "/jobs/?state=all&page=3"


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("sort=script", "Invalid sort field: &#x27;script&#x27;"),
        ("page=0", "Invalid page: &#x27;0&#x27;"),
        ("state=BOGUS", "Invalid job state specified: BOGUS"),
        ("per_page=7", "Invalid per_page: 7"),
    ],
)
def test_bad_parameters_are_a_400_that_names_them(client_in, query, message):
    make_jobs(3)
    for url in ("/jobs/", "/jobs/_table"):
        response = client_in.get(f"{url}?{query}")
        assert response.status_code == 400
        assert message in response.content.decode()
    assert client_in.get(f"/jobs/export?{query}").status_code == 400


@pytest.mark.parametrize(
    ("sort", "expected"),
    [
        ("name", [1, 2, 3, 4]),
        ("-name", [4, 3, 2, 1]),
        ("user", [1, 3, 2, 4]),  # alice, alice, bob, bob: ties by id
        ("-user", [4, 2, 3, 1]),
        ("time", [4, 3, 2, 1]),
    ],
)
def test_sort_by_column_with_ties_in_id_order(client_in, sort, expected):
    now = timezone.now()
    for i in range(1, 5):
        Job.objects.create(
            id=i,
            name=f"n{i}",
            user=("alice", "bob")[1 - i % 2],
            partition="debug",
            state="COMPLETED",
            submit_time=now,
            start_time=now - timedelta(minutes=10 - i),
            end_time=now,
        )
    html = client_in.get(f"/jobs/_table?state=all&sort={sort}").content.decode()
    assert ids(html) == expected
    key = sort.lstrip("-")
    assert f'aria-sort="{"descending" if sort.startswith("-") else "ascending"}"' in html
    assert re.search(
        rf'<a class="sort" href="/jobs/\?state=all&amp;sort={"" if sort[0] == "-" else "-"}{key}"', html
    )


def test_filters_narrow_the_list(client_in):
    now = timezone.now()
    common = {"partition": "debug", "submit_time": now}
    Job.objects.create(
        id=1,
        name="sim-a",
        user="alice",
        account="physics",
        qos="high",
        state="PENDING",
        reason="Priority",
        **common,
    )
    Job.objects.create(
        id=2,
        name="sim-b",
        user="bob",
        account="chem",
        qos="normal",
        state="PENDING",
        reason="Resources",
        **common,
    )
    Job.objects.create(
        id=3,
        name="render",
        user="bob",
        account="chem",
        state="RUNNING",
        node_list="node[02-03]",
        alloc={"node02": [1, 1], "node03": [1, 1]},
        licenses="power:100",
        licenses_alloc="power(rack1*100,row1*100):100",
        **common,
    )
    Job.objects.create(
        id=4,
        name="old",
        user="carol",
        state="COMPLETED",
        node_list="node04,node05",
        licenses="qpu:1",
        **common,
    )
    Job.objects.create(id=5, name="wide", user="dan", state="COMPLETED", node_list="node[01-03,06]", **common)
    cases = {
        "name=SIM": {1, 2},
        "user=bob": {2, 3},
        "account=physics": {1},
        "qos=normal": {2, 3},
        "reason=Resources": {2},
        "id=3,4": {3, 4},  # squeue -j shows named jobs whatever their state
        "node=node03": {3},
        "node=node03&state=all": {3, 5},  # a folded NodeList of an ended job too
        "node=node[06-07]&state=all": {5},
        "node=node05&state=all": {4},
        "node=node02&state=all": {3, 5},
        "node=node[04-05]&state=all": {4},
        "layer=power": {3},
        "layer=rack1": {3},
        "layer=power(rack1)": {3},
        "layer=power(rack2)": set(),
        "layer=qpu&state=all": {4},
        "state=PD": {1, 2},
    }
    for query, expected in cases.items():
        html = client_in.get(f"/jobs/_table?{query}").content.decode()
        assert set(ids(html)) == expected, query
        # The live refresh asks for the same rows.
        assert re.search(r'hx-get="/jobs/_table\?[^"]*' + re.escape(query.split("=")[0]), html), query


def test_an_arrays_pending_tasks_fold_into_one_row_and_expand(client_in):
    now = timezone.now()
    # Array 12: task 0 and 1 run, tasks 2..8 wait (ids 14..20).
    for t in range(9):
        Job.objects.create(
            id=12 + t,
            array_job_id=12,
            array_task_id=t,
            array_max_tasks=2,
            name="arr",
            user="alice",
            partition="debug",
            submit_time=now,
            state="RUNNING" if t < 2 else "PENDING",
            reason="None" if t < 2 else "JobArrayTaskLimit",
            node_list="node01" if t < 2 else "",
        )
    Job.objects.create(id=30, name="single", user="bob", partition="debug", submit_time=now)
    html = client_in.get("/jobs/").content.decode()
    row = re.search(r'<tr data-job-id="14"[^>]*>.*?</tr>', html, re.S).group(0)
    assert 'data-array="12" data-tasks="7"' in row
    assert ">12_[2-8%2]</a>" in row
    assert ids(html) == [12, 13, 14, 30]
    assert "Jobs 1 to 4 of 4" in html
    link = re.search(r'<a class="expand" href="([^"]+)"', row).group(1)
    assert link == "/jobs/?expand=12"
    expanded = client_in.get("/jobs/?expand=12").content.decode()
    assert ids(expanded) == [12, 13, 14, 15, 16, 17, 18, 19, 20, 30]
    assert ">12_5</a>" in expanded
    assert "Fold array 12" in expanded
    # squeue --array: every task on its own row.
    assert ids(client_in.get("/jobs/_table?array=tasks").content.decode()) == ids(expanded)
    # The export folds as the table does.
    rows = list(csv.reader(io.StringIO(client_in.get("/jobs/export?format=csv").content.decode())))
    assert [r[0] for r in rows] == ["JOBID", "12_0", "12_1", "12_[2-8%2]", "30"]


def table_cells(html: str) -> list[list[str]]:
    body = re.search(r"<tbody>(.*?)</tbody>", html, re.S).group(1)
    out = []
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        out.append([re.sub(r"<[^>]+>", "", c).replace("&#x27;", "'").strip() for c in cells])
    return out


def test_exports_hold_the_filtered_list_as_the_table_shows_it(client_in):
    make_jobs(30)
    Job.objects.filter(id=7).update(name="=cmd|' /C calc'!A0")
    query = "state=all&user=alice&sort=name"
    html = client_in.get(f"/jobs/_table?{query}&per_page=25").content.decode()
    exported = re.findall(r'href="(/jobs/export\?[^"]+)"', html)
    assert [u.replace("&amp;", "&") for u in exported] == [
        f"/jobs/export?{query}&per_page=25&format={fmt}" for fmt in ("csv", "json", "xlsx")
    ]
    full = table_cells(client_in.get(f"/jobs/_table?{query}&per_page=100").content.decode())
    assert len(full) == 15
    response = client_in.get(exported[0].replace("&amp;", "&"))
    assert response["Content-Disposition"] == 'attachment; filename="jobs.csv"'
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0] == [
        "JOBID",
        "NAME",
        "USER",
        "ACCOUNT",
        "QOS",
        "PARTITION",
        "STATE",
        "TIME",
        "NODES",
        "NODELIST(REASON)",
    ]
    # Every page of the filtered list, not only the page shown.
    normalised = [[c.removeprefix("'") for c in r] for r in rows[1:]]
    assert normalised == [[c.replace("CD COMPLETED", "COMPLETED") for c in r] for r in full]
    data = json.loads(client_in.get(exported[1].replace("&amp;", "&")).content)
    assert [d["JOBID"] for d in data] == [r[0] for r in full]
    book = load_workbook(io.BytesIO(client_in.get(exported[2].replace("&amp;", "&")).content))
    sheet = list(book.active.iter_rows(values_only=True))
    assert [str(r[0]) for r in sheet[1:]] == [r[0] for r in full]
    assert client_in.get("/jobs/export?format=pdf").status_code == 400
