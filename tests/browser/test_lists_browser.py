"""The node table, the events and the audit log in Chromium (#15 point 3): filters narrow
the list and the URL, the pager moves through the rows, and a CSV export holds what the
table shows.  The changes listed are made through the real ``fsched scontrol``."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

NODE = "node05"
REASON = "lists-check"


@pytest.fixture(scope="module")
def drained(live_cluster):
    """A drain and a resume of one node: an event each, and the audit log's entries."""
    live_cluster.cli("scontrol", "update", f"nodename={NODE}", "state=drain", f"reason={REASON}")
    live_cluster.cli("scontrol", "update", f"nodename={NODE}", "state=resume")
    return NODE


def cells(page: Page, table: str) -> list[list[str]]:
    return page.evaluate(
        """(table) => [...document.querySelectorAll(table + ' tbody tr[data-key]')].map(tr =>
            [...tr.cells].map(td => td.textContent.trim()))""",
        table,
    )


def downloaded_csv(page: Page, table: str) -> list[list[str]]:
    with page.expect_download() as info:
        page.locator(f'{table} a[data-export="csv"]').click()
    return list(csv.reader(io.StringIO(Path(info.value.path()).read_text())))


def headers(page: Page, table: str) -> list[str]:
    return [h.strip().rstrip(" ▲▼") for h in page.locator(f"{table} thead th").all_inner_texts()]


def test_node_table_filters_pages_and_exports(page: Page, live_cluster):
    page.goto(f"{live_cluster.url}/nodes/")
    page.get_by_role("link", name="Table", exact=True).click()
    table = "#nodes-table"
    rows = page.locator(f"{table} tbody tr[data-key]")
    expect(rows).to_have_count(36)
    page.select_option("#f-per-page", "25")
    expect(rows).to_have_count(25)
    expect(page).to_have_url(re.compile(r"view=table.*per_page=25"))
    page.locator('.pager a[data-page="2"]').click()
    expect(rows).to_have_count(11)
    expect(page).to_have_url(re.compile(r"page=2"))
    page.fill("#f-name", "node[01-04]")
    expect(rows).to_have_count(4)
    expect(page).to_have_url(re.compile(r"name=node%5B01-04%5D"))
    page.locator('th a.sort[data-sort="name"]').click()
    expect(page.locator('th[aria-sort="ascending"]')).to_have_text("NODELIST")
    page.locator('th a.sort[data-sort="name"]').click()  # a second click: descending
    expect(page.locator('th[aria-sort="descending"]')).to_have_text("NODELIST")
    expect(rows.first).to_have_attribute("data-key", "node04")
    shown = cells(page, table)
    exported = downloaded_csv(page, table)
    names = headers(page, table)
    assert exported[0] == names
    # The agents report a node's free memory and load every few seconds from /proc, so
    # those two may move between the page's render and the export's request.
    live = [names.index("FREE_MEM"), names.index("CPU_LOAD")]
    assert [steady(r, live) for r in exported[1:]] == [steady(r, live) for r in shown]
    for row in exported[1:]:
        assert all(re.fullmatch(r"\d+(\.\d+)?|N/A", row[i]) for i in live), row


def steady(row: list[str], live: list[int]) -> list[str]:
    return [cell for i, cell in enumerate(row) if i not in live]


def test_events_filter_and_export(page: Page, live_cluster, drained):
    page.goto(f"{live_cluster.url}/events/")
    table = "#event-list-table"
    page.fill("#f-node", drained)
    expect(page).to_have_url(re.compile(rf"node={drained}"))
    rows = page.locator(f"{table} tbody tr[data-key]")
    expect(rows.filter(has_text=REASON)).to_have_count(1)
    shown = cells(page, table)
    assert {r[2] for r in shown} == {drained}
    exported = downloaded_csv(page, table)
    assert exported[0] == headers(page, table)
    assert exported[1:] == shown


def test_audit_log_filters_and_exports(page: Page, live_cluster, drained):
    page.goto(f"{live_cluster.url}/audit/")
    table = "#audit-table"
    page.fill("#f-object", drained)
    expect(page).to_have_url(re.compile(rf"object={drained}"))
    rows = page.locator(f"{table} tbody tr[data-key]")
    expect(rows.filter(has_text=REASON).first).to_be_visible()
    page.select_option("#f-model", "cluster.node")
    page.fill("#f-user", live_cluster.username)
    expect(page).to_have_url(re.compile(rf"model=cluster.node.*user={live_cluster.username}"))
    shown = cells(page, table)
    assert shown and {r[3] for r in shown} == {drained} and {r[5] for r in shown} == {live_cluster.username}
    exported = downloaded_csv(page, table)
    assert exported[0] == headers(page, table)
    assert exported[1:] == shown
