"""The Resources page in Chromium against the live demo cluster (``examples/demo/resources.yaml``):
the layer trees and sunbursts render, usage follows a running job without a reload, and
a click on a layer lists the job holding it."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

UPDATE_TIMEOUT = 20_000


def test_layer_tree_is_live_and_links_to_holders(page: Page, live_cluster):
    # The browser cluster is shared by the browser tests: start from an empty queue so the
    # job below gets node01 at once (earlier tests may leave jobs holding it).
    live_cluster.cli("scancel", "-u", live_cluster.username)
    page.goto(f"{live_cluster.url}/hres/")
    expect(page.locator("#live-status")).to_have_attribute("data-mode", "live", timeout=10_000)
    page.evaluate("window.__noReload = 'still here'")
    expect(page.locator("nav.mainnav a[aria-current=page]")).to_have_text("Resources")
    power = page.locator('section[data-resource="power"]')
    expect(power.locator("tr[data-layer]")).to_have_count(7)
    expect(power.locator(".hres-sunburst svg").first).to_be_visible(timeout=10_000)

    job_id = live_cluster.sbatch("-p", "debug", "-w", "node01", "-L", "power:500", "--wrap=sleep 30")
    rack1 = power.locator('tr[data-layer="rack1"]')
    expect(rack1).to_have_attribute("data-used", "500", timeout=UPDATE_TIMEOUT)
    expect(power.locator('tr[data-layer="datacenter"]')).to_have_attribute("data-used", "500")
    assert page.evaluate("window.__noReload") == "still here"

    rack1.locator("a").click()
    expect(page.locator(f'.hres-holders tr[data-job-id="{job_id}"]')).to_contain_text("500")
    expect(page.locator("#layer-nodes")).to_have_text("node[01-08]")
    live_cluster.cli("scancel", str(job_id))
