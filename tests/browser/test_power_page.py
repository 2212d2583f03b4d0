"""The Power page in Chromium: counts, the two plotly plots (served locally), and a real
power up through ``fsched scontrol power`` appearing live, without a reload."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

pytestmark = [pytest.mark.browser, pytest.mark.e2e]


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
