"""The job list at scale in Chromium (#15 point 3): 2,000 jobs written straight into the
live cluster's database, filtered, sorted and paged through the page's own controls, a
held array folded as squeue folds it and expanded, and the exports compared with the
table they came from."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from openpyxl import load_workbook
from playwright.sync_api import Page, expect

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

MANY = 2000
OWNER = "pager"  # no such Unix user: the jobs are COMPLETED and never run

# Ids come from the cluster's own counter (so a later real submission never collides and
# lists above them); the jobs are rows only, as a history of 2,000 ended jobs would be.
MAKE_JOBS = f"""
from datetime import timedelta
from django.utils import timezone
from cluster.models import Job, JobIdCounter
from cluster.services import rows
first = rows.add_returning(JobIdCounter, 1, "next_id", {MANY}) - {MANY}
now = timezone.now()
Job.objects.bulk_create(
    Job(id=first + i, name=f"{OWNER}-{{i:04d}}", user="{OWNER}", account="physics", partition="debug",
        state="COMPLETED", node_list="node01", submit_time=now, start_time=now - timedelta(seconds=i),
        end_time=now)
    for i in range({MANY})
)
print(first)
"""


@pytest.fixture(scope="module")
def many_jobs(live_cluster) -> int:
    """The first id of the 2,000 jobs (their names are pager-0000 .. pager-1999)."""
    return int(live_cluster.cluster.manage("shell", "-c", MAKE_JOBS).strip().splitlines()[-1])


def rows(page: Page):
    return page.locator("#job-table tbody tr[data-job-id]")


def foot(page: Page):
    return page.locator("#job-table .table-foot")


def test_filters_narrow_the_list_and_the_url(page: Page, live_cluster, many_jobs):
    page.goto(f"{live_cluster.url}/jobs/?state=all")
    page.fill("#f-user", OWNER)
    expect(page).to_have_url(re.compile(rf"/jobs/\?state=all&user={OWNER}$"))
    expect(foot(page)).to_contain_text(f"of {MANY},")
    page.fill("#f-name", "pager-000")
    expect(page).to_have_url(re.compile(rf"user={OWNER}.*name=pager-000|name=pager-000.*user={OWNER}"))
    expect(rows(page)).to_have_count(10)
    expect(foot(page)).to_contain_text("Jobs 1 to 10 of 10")
    # The address is the list: reloading it gives the same rows and the same form.
    page.reload()
    expect(rows(page)).to_have_count(10)
    expect(page.locator("#f-name")).to_have_value("pager-000")
    # A bad value says what is wrong where the table was.
    page.fill("#f-id", "12x")
    expect(page.locator("#job-table .error")).to_have_text("Invalid job id specified: 12x")


def test_pagination_reaches_the_last_job_of_2000(page: Page, live_cluster, many_jobs):
    page.goto(f"{live_cluster.url}/jobs/?state=all&user={OWNER}")
    expect(rows(page)).to_have_count(100)
    expect(foot(page)).to_have_text(f"Jobs 1 to 100 of {MANY}, page 1 of 20.")
    page.locator('.pager a[data-page="20"]').click()
    expect(foot(page)).to_have_text(f"Jobs 1901 to {MANY} of {MANY}, page 20 of 20.")
    expect(page).to_have_url(re.compile(r"page=20"))
    # Newest first: the last page ends with the first job written.
    expect(rows(page).last).to_have_attribute("data-job-id", str(many_jobs))
    expect(rows(page)).to_have_count(100)
    expect(page.locator('.pager a[rel="next"]')).to_have_count(0)
    page.locator('.pager a[rel="prev"]').click()
    expect(foot(page)).to_contain_text("page 19 of 20")


def test_sort_by_a_column_and_back(page: Page, live_cluster, many_jobs):
    page.goto(f"{live_cluster.url}/jobs/?state=all&user={OWNER}")
    page.locator('th a.sort[data-sort="time"]').click()
    expect(page.locator('th[aria-sort="ascending"]')).to_contain_text("TIME")
    expect(rows(page).first.locator("td.jobname")).to_have_text("pager-0000")
    page.locator('th a.sort[data-sort="time"]').click()
    expect(page.locator('th[aria-sort="descending"]')).to_contain_text("TIME")
    expect(rows(page).first.locator("td.jobname")).to_have_text("pager-1999")
    expect(page).to_have_url(re.compile(r"sort=-time"))
    page.locator('th a.sort[data-sort="name"]').click()
    expect(rows(page).first.locator("td.jobname")).to_have_text("pager-0000")
    expect(rows(page).nth(1).locator("td.jobname")).to_have_text("pager-0001")
    # A filter typed after a sort keeps the sort.
    page.fill("#f-name", "pager-19")
    expect(page).to_have_url(re.compile(r"name=pager-19.*sort=name"))
    expect(rows(page).first.locator("td.jobname")).to_have_text("pager-1900")


def test_a_held_array_shows_as_one_row_and_expands(page: Page, live_cluster):
    job_id = live_cluster.sbatch("--hold", "--array=3-9", "-J", "folded", "--wrap=true")
    try:
        page.goto(f"{live_cluster.url}/jobs/?id={job_id}")
        expect(rows(page)).to_have_count(1)
        row = rows(page).first
        expect(row.locator("td").first).to_contain_text(f"{job_id}_[3-9]")
        expect(row).to_contain_text("(JobHeldUser)")
        row.locator("a.expand").click()
        expect(rows(page)).to_have_count(7)
        expect(page).to_have_url(re.compile(rf"expand={job_id}"))
        expect(rows(page).nth(2).locator("td").first).to_have_text(f"{job_id}_5")
        page.get_by_text(f"Fold array {job_id}").click()
        expect(rows(page)).to_have_count(1)
    finally:
        live_cluster.cli("scancel", str(job_id))


def table_cells(page: Page) -> list[list[str]]:
    """The table's text as shown: the STATE cell is its long name (the badge repeats it)."""
    return page.evaluate(
        """() => [...document.querySelectorAll('#job-table tbody tr[data-job-id]')].map(tr =>
            [...tr.cells].map((td, i) => i === 6 ? tr.dataset.state
                : (i === 0 ? td.querySelector('a').textContent : td.textContent).trim()))"""
    )


def test_exports_hold_what_the_table_shows(page: Page, live_cluster, many_jobs):
    page.goto(f"{live_cluster.url}/jobs/?state=all&user={OWNER}&name=pager-01&sort=-name")
    expect(rows(page)).to_have_count(100)
    shown = table_cells(page)
    assert shown[0][1] == "pager-0199"
    headers = page.evaluate(
        "() => [...document.querySelectorAll('#job-table thead th')].map(th => th.textContent.trim())"
    )

    def download(fmt: str) -> bytes:
        with page.expect_download() as info:
            page.locator(f'#job-table a[data-export="{fmt}"]').click()
        assert info.value.suggested_filename == f"jobs.{fmt}"
        return Path(info.value.path()).read_bytes()

    as_csv = list(csv.reader(io.StringIO(download("csv").decode())))
    assert [h.strip().rstrip(" ▲▼") for h in headers] == as_csv[0]
    assert as_csv[1:] == shown
    as_json = json.loads(download("json"))
    assert [[str(v) for v in row.values()] for row in as_json] == shown
    sheet = list(load_workbook(io.BytesIO(download("xlsx"))).active.iter_rows(values_only=True))
    assert [[str(v) for v in row] for row in sheet[1:]] == shown
