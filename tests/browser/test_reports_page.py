"""The Reports page in Chromium: a history rolled up in the live controller's database shows
as a plotly chart (served locally) and a table, and the CSV the page's export link downloads
holds exactly the table's rows."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

# Two finished jobs of 3 January 2026 in the live database, then that day rolled up by the
# rollup's own services (the cycle rolls only the hours since the controller started).
HISTORY = """
from datetime import UTC, datetime
from cluster.models import Job
from reports.services import roll_days, roll_hours

def at(h, m=0):
    return datetime(2026, 1, 3, h, m, tzinfo=UTC)

for jid, user, account, cpus, node, start, end in (
    (990001, "ann", "physics", 4, "node01", at(8), at(10)),
    (990002, "ben", "chem", 2, "node02", at(9), at(9, 30)),
):
    Job.objects.update_or_create(id=jid, defaults=dict(
        user=user, account=account, partition="debug", num_tasks=cpus, node_list=node,
        submit_time=start, eligible_time=start, start_time=start, end_time=end, state="COMPLETED"))
roll_hours(at(0), datetime(2026, 1, 4, tzinfo=UTC))
roll_days(at(0), datetime(2026, 1, 4, tzinfo=UTC))
"""


def cells(page: Page) -> list[list[str]]:
    return page.eval_on_selector_all(
        "#report-table tr", "rows => rows.map(r => Array.from(r.cells).map(c => c.textContent.trim()))"
    )


def test_usage_report_renders_and_its_csv_matches_the_table(page: Page, live_cluster) -> None:
    live_cluster.cluster.manage("shell", "-c", HISTORY)
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(f"{live_cluster.url}/reports/?report=usage&start=2026-01-03&end=2026-01-03")
    expect(page.locator("nav.mainnav a[aria-current=page]")).to_have_text("Reports")
    expect(page.locator('[data-chart="top"] .main-svg').first).to_be_visible(timeout=10_000)
    table = cells(page)
    assert table[0][:3] == ["Account", "User", "CPU-hours"]
    by_user = {(r[0], r[1]): r[2] for r in table[1:]}
    # ann: 4 CPUs for 2 hours; ben: 2 CPUs for half an hour.
    assert by_user[("physics", "ann")] == "8.0" and by_user[("chem", "ben")] == "1.0"
    assert by_user[("root", "")] == "9.0"
    assert not [u for u in requests if not u.startswith(live_cluster.url)]  # no CDN

    with page.expect_download() as got:
        page.click('a.export[data-format="csv"]')
    download = got.value
    assert download.suggested_filename == "usage-2026-01-03-2026-01-03.csv"
    text = Path(download.path()).read_text(encoding="utf-8")
    assert list(csv.reader(io.StringIO(text))) == table

    page.select_option("#r-report", "utilization")
    page.click("#report-filter button[type=submit]")
    expect(page.locator('[data-chart="stack"] .main-svg').first).to_be_visible(timeout=10_000)
    assert cells(page)[1][:2] == ["2026-01-03 00:00", "day"]


def test_every_report_has_no_serious_accessibility_finding(page: Page, live_cluster) -> None:
    from axe_playwright_python.sync_playwright import Axe  # ships axe.min.js: nothing downloaded

    live_cluster.cluster.manage("shell", "-c", HISTORY)
    for report in ("utilization", "usage", "jobs", "power", "nodes", "hres", "load", "limits"):
        page.goto(f"{live_cluster.url}/reports/?report={report}&start=2026-01-03&end=2026-01-03")
        expect(page.locator("#report-h")).to_be_visible()
        found = Axe().run(page).response["violations"]
        serious = [
            (v["id"], [n["target"] for n in v["nodes"]])
            for v in found
            if v["impact"] in ("serious", "critical")
        ]
        assert not serious, f"{report}: {serious}"


def test_fsched_sreport_reads_the_same_rollups_over_http(live_cluster) -> None:
    live_cluster.cluster.manage("shell", "-c", HISTORY)
    out = live_cluster.cli(
        "sreport", "-P", "-n", "-t", "hours", "user", "topusage", "start=uts1767398400", "end=uts1767484800"
    )
    # 3 January 2026 (UTC): ann 4 CPUs x 2 h, ben 2 CPUs x 30 min.
    assert out.splitlines() == ["demo|ann||physics|8|0", "demo|ben||chem|1|0"]
