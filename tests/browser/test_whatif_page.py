"""The What-if page in Chromium: a change typed into the form stands out, both
configurations are simulated while the page shows their progress, and the two results
come side by side with B's worse waits marked; each side's own report opens offline."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Page, expect

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

# Four jobs each asking for 6 of the demo's "flat" resource: A's top layer (24) holds all
# four at once, B's (6) one at a time, so B's waits are longer.
WORKLOAD = {
    "jobs": [
        {"submit": 0, "user": "alice", "partition": "batch", "run_time": 600, "licenses": "flat:6"}
        for _ in range(4)
    ]
}


def test_a_what_if_runs_and_shows_a_and_b_side_by_side(page: Page, live_cluster) -> None:
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(f"{live_cluster.url}/whatif/")
    expect(page.locator("nav.mainnav a[aria-current=page]")).to_have_text("What-if")
    page.get_by_role("link", name="New comparison").click()
    layer = page.get_by_label("flat / top")
    expect(layer).to_have_value("24")
    layer.fill("6")
    expect(layer).to_have_class("changed")
    page.get_by_label("a file (SWF, or the YAML/JSON job list):").check()
    page.locator("input[name=upload]").set_input_files(
        {"name": "four.json", "mimeType": "application/json", "buffer": json.dumps(WORKLOAD).encode()}
    )
    page.get_by_role("button", name="Simulate A and B").click()
    expect(page.locator("h1")).to_contain_text("What-if")
    expect(page.locator("#whatif-changes-h + table")).to_contain_text("flat / top")
    expect(page.locator("#whatif-status-h")).to_have_text("A and B side by side", timeout=120_000)
    worse = page.locator("tr.whatif-worse", has_text="wait max")
    expect(worse.first).to_be_visible()
    with page.context.expect_page() as opened:
        page.get_by_role("link", name="B", exact=True).click()
    report = opened.value
    expect(report.locator(".main-svg").first).to_be_visible(timeout=20_000)
    outside = [u for u in requests if not u.startswith(live_cluster.url)]
    assert outside == []
