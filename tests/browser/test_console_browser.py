"""The console in Chromium against a live cluster: pages update themselves as jobs run.

Jobs are submitted through the real ``fsched sbatch``; the pages are never reloaded (a
marker set on ``window`` at the start must survive to the end).
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

BUSY = re.compile(r"^(mix|alloc)$")
UPDATE_TIMEOUT = 20_000  # ms: a scheduler pass, the agent, and the websocket push


def open_live(page: Page, url: str) -> None:
    page.goto(url)
    expect(page.locator("#live-status")).to_have_attribute("data-mode", "live", timeout=10_000)
    page.evaluate("window.__noReload = 'still here'")


def assert_not_reloaded(page: Page) -> None:
    assert page.evaluate("window.__noReload") == "still here"


def job_row(page: Page, job_id: int):
    return page.locator(f'#job-table tr[data-job-id="{job_id}"]')


def test_pages_render_the_demo_cluster(page: Page, live_cluster):
    page.goto(f"{live_cluster.url}/nodes/")
    tiles = page.locator(".tile[data-node]")
    expect(tiles).to_have_count(36)  # node01..node32 and the CLOUD nodes cloud[01-04]
    expect(page.locator('.tile[data-node="node01"]')).to_have_attribute("data-state", "idle", timeout=15_000)
    expect(page.locator(".legend")).to_contain_text("powered down")
    page.goto(f"{live_cluster.url}/jobs/")
    expect(page.locator("#job-table th").first).to_have_text("JOBID")
    expect(page.locator("nav.mainnav a[aria-current=page]")).to_have_text("Jobs")


@pytest.mark.parametrize("width", [1280, 1440])
def test_an_administrator_s_top_bar_is_one_row_on_a_laptop(page: Page, live_cluster, width):
    # Thirteen links for staff: at a laptop's width they wrapped to a second row.
    page.set_viewport_size({"width": width, "height": 800})
    page.goto(f"{live_cluster.url}/jobs/")
    links = page.locator("nav.mainnav a")
    expect(links.last).to_have_text("Admin")
    tops = {round(box["y"]) for box in (links.nth(i).bounding_box() for i in range(links.count()))}
    assert len(tops) == 1, tops
    assert page.evaluate("document.querySelector('.topbar').getBoundingClientRect().height") < 60


def test_a_node_tile_shows_its_whole_name(page: Page, live_cluster):
    # cloud01's state (idle~) left its name "cloud…" at 1400 px: the state wraps instead.
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(f"{live_cluster.url}/nodes/")
    name = page.locator('.tile[data-node="cloud01"] .tile-name')
    expect(name).to_have_text("cloud01")
    assert name.evaluate("e => e.scrollWidth <= e.clientWidth")


def test_job_and_node_update_live_over_the_websocket(context, page: Page, live_cluster):
    jobs = page
    open_live(jobs, f"{live_cluster.url}/jobs/?state=all")
    nodes = context.new_page()
    open_live(nodes, f"{live_cluster.url}/nodes/")

    job_id = live_cluster.sbatch("--wrap=sleep 5", "-J", "live-check", "-p", "debug")

    row = job_row(jobs, job_id)
    expect(row).to_have_attribute("data-state", "RUNNING", timeout=UPDATE_TIMEOUT)
    expect(row).to_contain_text("live-check")
    node = row.locator("td.nodelist").inner_text().strip()
    assert re.fullmatch(r"node\d\d", node), node
    tile = nodes.locator(f'.tile[data-node="{node}"]')
    expect(tile).to_have_attribute("data-state", BUSY, timeout=UPDATE_TIMEOUT)
    expect(tile).to_contain_text("1/4")

    expect(row).to_have_attribute("data-state", "COMPLETED", timeout=UPDATE_TIMEOUT)
    expect(tile).to_have_attribute("data-state", "idle", timeout=UPDATE_TIMEOUT)
    expect(jobs.locator("#live-status")).to_have_attribute("data-mode", "live")
    assert_not_reloaded(jobs)
    assert_not_reloaded(nodes)


def test_polling_takes_over_when_the_websocket_drops(page: Page, live_cluster):
    open_live(page, f"{live_cluster.url}/jobs/?state=all")
    # From now on every websocket to the console is refused (closed at once), and the
    # open one is closed: the page must fall back to polling.
    page.route_web_socket(re.compile(r"/ws/console/"), lambda ws: ws.close())
    page.evaluate("window.fschedLive.socket.close()")
    expect(page.locator("#live-status")).to_have_attribute("data-mode", "polling", timeout=5_000)

    job_id = live_cluster.sbatch("--wrap=sleep 1", "-J", "poll-check")
    row = job_row(page, job_id)
    expect(row).to_be_visible(timeout=UPDATE_TIMEOUT)
    expect(row).to_have_attribute("data-state", "COMPLETED", timeout=UPDATE_TIMEOUT)
    expect(page.locator("#live-status")).to_have_attribute("data-mode", "polling")
    assert_not_reloaded(page)


def test_filters_update_the_table_and_the_address(page: Page, live_cluster):
    job_id = live_cluster.sbatch("--wrap=true", "-J", "filter-check", "-p", "batch")
    open_live(page, f"{live_cluster.url}/jobs/")
    page.select_option("#f-state", "all")
    expect(job_row(page, job_id)).to_be_visible(timeout=UPDATE_TIMEOUT)
    expect(page).to_have_url(re.compile(r"/jobs/\?state=all$"))
    page.select_option("#f-partition", "debug")
    expect(job_row(page, job_id)).to_have_count(0)
    expect(page).to_have_url(re.compile(r"/jobs/\?state=all&partition=debug$"))
    assert_not_reloaded(page)


def test_a_live_refresh_does_not_undo_a_filter_in_flight(page: Page, live_cluster):
    """The race CI once hit: a live refresh asked with the table's old URL came back before
    the filter's answer, replaced the table, and the filter's answer then had nowhere to
    land (the old rows stayed under the new filter)."""
    job_id = live_cluster.sbatch("--wrap=true", "-J", "race-check", "-p", "batch")
    open_live(page, f"{live_cluster.url}/jobs/?state=all")
    expect(job_row(page, job_id)).to_be_visible(timeout=UPDATE_TIMEOUT)

    def slow_filter(route):
        # Only the person's request is held back; live refreshes pass at once.
        if "partition=debug" in route.request.url and not route.request.headers.get("x-fsched-live"):
            page.wait_for_timeout(1500)
        route.continue_()

    page.route(re.compile(r"/jobs/_table"), slow_filter)
    page.select_option("#f-partition", "debug")
    page.evaluate("window.fschedLive.refresh(['jobs'])")  # answered while the filter waits
    expect(page).to_have_url(re.compile(r"partition=debug"))
    expect(job_row(page, job_id)).to_have_count(0, timeout=10_000)
    page.wait_for_timeout(2500)  # the refresh owed after the filter's answer has come and gone
    expect(job_row(page, job_id)).to_have_count(0)
    expect(page.locator("#f-partition")).to_have_value("debug")
    assert_not_reloaded(page)


def test_keyboard_reaches_a_tile_and_opens_the_node(page: Page, live_cluster):
    page.goto(f"{live_cluster.url}/nodes/")
    link = page.locator('.tile[data-node="node03"] a')
    link.focus()
    page.keyboard.press("Enter")
    expect(page).to_have_url(f"{live_cluster.url}/nodes/node03/")
    expect(page.locator("table.kv")).to_contain_text("NodeName")


@pytest.mark.parametrize("look", ["light-1400", "dark-1400", "light-420"])
def test_screenshots(browser, login_state, live_cluster, screenshot_dir, look):
    """One screenshot per page, light and dark, wide and phone-sized, for a human to judge."""
    scheme, width = look.split("-")[0], int(look.split("-")[1])
    # A cluster with something to show: running, waiting, held and finished jobs, a drained
    # and a down node (in partition "long", which the other tests do not use).
    running = live_cluster.sbatch("--wrap=sleep 30", "-J", "shot-running", "-N", "2", "-n", "6")
    live_cluster.sbatch("--wrap=true", "-J", "shot-done")
    live_cluster.sbatch("--wrap=sleep 20", "-J", "shot-wide", "-p", "debug", "-N", "8", "-n", "32")
    pending = live_cluster.sbatch("--wrap=true", "-J", "shot-held", "--hold")
    live_cluster.cli("scontrol", "update", "NodeName=node30", "State=DRAIN", "Reason=fan failure")
    live_cluster.cli("scontrol", "update", "NodeName=node31", "State=DOWN", "Reason=PSU replaced")
    ctx = browser.new_context(
        storage_state=login_state, viewport={"width": width, "height": 900}, color_scheme=scheme
    )
    page = ctx.new_page()
    try:
        pages = {
            "dashboard": "/",
            "nodes": "/nodes/",
            "jobs": "/jobs/?state=all",
            "node": "/nodes/node01/",
            "job": f"/jobs/{running}/",
            "pending-job": f"/jobs/{pending}/",
        }
        for name, path in pages.items():
            page.goto(live_cluster.url + path)
            expect(page.locator("#live-status")).to_have_attribute("data-mode", "live", timeout=10_000)
            path_png = screenshot_dir / f"{name}-{look}.png"
            page.screenshot(path=str(path_png), full_page=True)
            assert path_png.stat().st_size > 10_000
    finally:
        ctx.close()
