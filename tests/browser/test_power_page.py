"""The Power page in Chromium: counts, the two plotly plots (served locally), and a real
power up through ``fsched scontrol power`` appearing live, without a reload."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from playwright.sync_api import Page, expect

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

# Collection imports this module before the session's cluster starts: the controller's
# start is later than this.
IMPORTED = datetime.now(UTC)


def test_power_page_shows_states_plots_and_runs_live(page: Page, live_cluster) -> None:
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(f"{live_cluster.url}/power/")
    expect(page.locator("#live-status")).to_have_attribute("data-mode", "live", timeout=10_000)
    page.evaluate("window.__noReload = 'still here'")
    expect(page.locator("nav.mainnav a[aria-current=page]")).to_have_text("Power")
    expect(page.locator('[data-power-count="powered_down"] strong')).to_have_text("4")
    expect(page.locator("#power-chart .main-svg").first).to_be_visible(timeout=10_000)
    expect(page.locator("#power-timeline .main-svg").first).to_be_visible()
    expect(page.locator("details.legend")).to_contain_text("powering up")
    assert not [u for u in requests if not u.startswith(live_cluster.url)]  # no CDN

    live_cluster.cli("scontrol", "power", "up", "cloud04")
    run = page.locator('#power-runs tr[data-kind="resume"]').first
    expect(run).to_contain_text("cloud04", timeout=20_000)
    expect(run).to_contain_text("demo_resume")
    expect(page.locator('[data-power-count="powered_down"] strong')).to_have_text("3", timeout=20_000)
    live_cluster.cli("scontrol", "power", "down", "cloud04")
    expect(page.locator('#power-runs tr[data-kind="suspend"]').first).to_contain_text(
        "cloud04", timeout=30_000
    )
    assert page.evaluate("window.__noReload") == "still here"


def _overlap(a: dict, b: dict) -> bool:
    return not (
        a["x"] + a["width"] <= b["x"]
        or b["x"] + b["width"] <= a["x"]
        or a["y"] + a["height"] <= b["y"]
        or b["y"] + b["height"] <= a["y"]
    )


def test_power_history_starts_with_the_controller_and_the_legend_clears_the_dates(page: Page, live_cluster):
    page.goto(f"{live_cluster.url}/power/")
    for plot in ("#power-chart", "#power-timeline"):
        expect(page.locator(f"{plot} .main-svg").first).to_be_visible(timeout=10_000)
    first_x = datetime.fromisoformat(
        page.evaluate("() => document.getElementById('power-chart').data[0].x[0]")
    )
    assert first_x >= IMPORTED  # not an hour back, before the cluster existed
    since = datetime.fromisoformat(page.locator("#power-since time").get_attribute("datetime"))
    x_from = page.evaluate("() => document.getElementById('power-chart').layout.xaxis.range[0]")
    assert first_x == since and datetime.fromisoformat(x_from) == since
    # plotly leaves out the timeline's legend when it shows one power state only.  Read in
    # one go: a live update redraws the plots.
    expect(page.locator("#power-chart g.legend")).to_have_count(1)
    boxes = page.evaluate(
        """() => ["power-chart", "power-timeline"].map(id => {
            const el = document.getElementById(id);
            const box = e => {
                const r = e.getBoundingClientRect();
                return {x: r.x, y: r.y, width: r.width, height: r.height};
            };
            const legend = el.querySelector("g.legend");
            const ticks = [...el.querySelectorAll("g.xtick text")].map(box);
            return {id, legend: legend && box(legend), ticks};
        })"""
    )
    assert boxes[0]["legend"] and boxes[0]["ticks"]
    for plot in boxes:
        if plot["legend"]:
            assert not [t for t in plot["ticks"] if _overlap(plot["legend"], t)], plot["id"]
