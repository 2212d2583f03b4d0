"""The dashboard in Chromium against a live cluster: it shows the overview, and a change
arrives over the publisher's socket without a reload and without a fetch by the page
(#15 point 6)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

UPDATE_TIMEOUT = 20_000  # ms: the submission, its note, one pass of the publisher


def counter(page: Page, attribute: str, value: str):
    return page.locator(f'#overview [{attribute}="{value}"] dd')


def test_the_dashboard_renders_and_updates_without_a_reload(page: Page, live_cluster):
    fetched: list[str] = []
    page.on("request", lambda r: fetched.append(r.url) if r.resource_type in ("fetch", "xhr") else None)
    page.goto(f"{live_cluster.url}/")
    # With data: the demo's 36 nodes by state and power state, the shares, the HRES panel.
    expect(page.locator("#h-ov-nodes")).to_contain_text("36")
    expect(counter(page, "data-power-state", "powered_down")).to_have_text("4")
    expect(page.locator('#overview [data-share="CPUs"] meter')).to_have_count(1)
    expect(page.locator("#overview section.ov-ext h2", has_text="HRES use")).to_be_visible()
    expect(page.locator("#overview .trend polyline.trend-running")).to_have_count(1)
    page.wait_for_function("window.fschedOverview && window.fschedOverview.socket.readyState === 1")
    page.evaluate("window.__noReload = 'still here'")

    held_before = int(counter(page, "data-job-state", "PENDING").inner_text())
    job_id = live_cluster.sbatch("--wrap=true", "-J", "dash-held", "--hold")

    # The held job shows as pending with its reason, pushed by the publisher.
    expect(counter(page, "data-job-state", "PENDING")).to_have_text(
        str(held_before + 1), timeout=UPDATE_TIMEOUT
    )
    expect(page.locator('#overview [data-reason="JobHeldUser"] strong')).to_have_text(
        re.compile(r"^[1-9]\d*$"), timeout=UPDATE_TIMEOUT
    )
    expect(page.locator("#overview .events")).to_contain_text(f"job {job_id}", timeout=UPDATE_TIMEOUT)
    assert page.evaluate("window.__noReload") == "still here"
    # Nothing was fetched by the page: the new figures came over the socket.
    assert fetched == [], fetched
    live_cluster.cli("scancel", str(job_id))
