"""The console's Reports page over the fixed history (tests/reports/history.py): each report
renders its table from the rollups, and its CSV, JSON and XLSX exports hold exactly the
rows shown."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from openpyxl import load_workbook

from reports.services import report_rollup
from tests.reports.history import at, make_history

RANGE = {"start": "2026-01-05", "end": "2026-01-05"}


@pytest.fixture
def admin_client(client, users):
    make_history()
    report_rollup(now=at(1, day=6))
    client.force_login(users["admin"])
    return client


def shown(html: str) -> list[list[str]]:
    """The table's cells as the page shows them (text only)."""
    body = re.search(r'<table class="data report-table" id="report-table">(.*?)</table>', html, re.S).group(1)
    rows = re.findall(r"<tr>(.*?)</tr>", body, re.S)
    return [
        [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", r, re.S)]
        for r in rows
    ]


def same(value: object) -> object:
    """A cell as text and number alike (a spreadsheet keeps 4.0 as 4)."""
    if value is None:
        return ""
    try:
        return float(value)  # type: ignore[arg-type]
    except ValueError:
        return value


def test_usage_rolls_the_tree_up_and_the_exports_match_the_table(admin_client):
    page = admin_client.get("/reports/", {**RANGE, "report": "usage"})
    assert page.status_code == 200
    html = page.content.decode()
    table = shown(html)
    assert table[0] == [
        "Account",
        "User",
        "CPU-hours",
        "Node-hours",
        "Billing-hours",
        "GPU-hours",
        "Memory GB-hours",
    ]
    # The whole day: alice 3 h, bob 2 CPUs x 2 h = 4 h, carol 0.75 h; physics 3.75, root 7.75.
    assert [r[:3] for r in table[1:]] == [
        ["root", "", "7.75"], ["chem", "", "4.0"], ["chem", "bob", "4.0"], ["physics", "", "3.75"],
        ["physics", "alice", "3.0"], ["theory", "", "0.75"], ["theory", "carol", "0.75"],
    ]  # fmt: skip
    assert 'aria-current="page">Reports' in html
    got = admin_client.get("/reports/", {**RANGE, "report": "usage", "format": "csv"})
    assert got["Content-Disposition"] == 'attachment; filename="usage-2026-01-05-2026-01-05.csv"'
    assert list(csv.reader(io.StringIO(got.content.decode()))) == table
    data = json.loads(admin_client.get("/reports/", {**RANGE, "report": "usage", "format": "json"}).content)
    assert [[str(v) for v in row.values()] for row in data] == table[1:]
    xlsx = admin_client.get("/reports/", {**RANGE, "report": "usage", "format": "xlsx"}).content
    sheet = load_workbook(io.BytesIO(xlsx)).active
    assert [[same(v) for v in row] for row in sheet.iter_rows(values_only=True)] == [
        [same(v) for v in row] for row in table
    ]


def test_utilization_jobs_and_power_render(admin_client):
    html = admin_client.get("/reports/", {**RANGE, "report": "utilization"}).content.decode()
    table = shown(html)
    assert table[1][:4] == ["2026-01-05 00:00", "day", "8", "7.75"]  # 465 CPU-minutes allocated
    assert 'data-chart="stack"' in html
    table = shown(admin_client.get("/reports/", {**RANGE, "report": "jobs"}).content.decode())
    assert table[1:] == [["1", "1", "0.75"], ["2", "2", "7.0"]]
    table = shown(admin_client.get("/reports/", {**RANGE, "report": "power"}).content.decode())
    assert table[1][:5] == ["2026-01-05 00:00", "day", "2", "0.0", "13.0"]  # n2 down from 11:00


def test_a_range_with_nothing_rolled_up_says_so_instead_of_empty_charts(admin_client):
    html = admin_client.get("/reports/", {"start": "2025-01-01", "end": "2025-01-02"}).content.decode()
    assert "data-chart=" not in html
    assert "Nothing was rolled up in this range yet: each hour is rolled up once it has ended" in html


def test_bad_input_is_a_400_naming_it(admin_client):
    assert admin_client.get("/reports/", {"report": "nonsense"}).status_code == 400
    answer = admin_client.get("/reports/", {"start": "soon"})
    assert answer.status_code == 400 and answer.content.startswith(b"start:")
    assert admin_client.get("/reports/", {"start": "2026-02-01", "end": "2026-01-01"}).status_code == 400
    assert admin_client.get("/reports/", {**RANGE, "format": "pdf"}).status_code == 400


def test_someone_not_staff_sees_their_own_usage(client, users):
    make_history()
    report_rollup(now=at(1, day=6))
    client.force_login(users["alice"])
    table = shown(client.get("/reports/", {**RANGE, "report": "usage", "users": "bob"}).content.decode())
    assert [r[:3] for r in table[1:] if r[1]] == [["physics", "alice", "3.0"]]


def test_the_page_needs_a_login(client, db):
    assert client.get("/reports/").status_code == 302
