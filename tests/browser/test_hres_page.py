"""The Resources page in Chromium against the live demo cluster (``examples/demo/resources.yaml``):
the layer trees and sunbursts render, usage follows a running job without a reload, and
a click on a layer lists the job holding it."""

from __future__ import annotations

import time

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


def test_mode_2_sunburst_is_sized_by_usage_and_near_full_bars_warn(page: Page, live_cluster):
    """flat is Mode 2: its areas are each layer's usage, not its count; low1 (count 12) at
    11 used is over the warning threshold (90 %), mid1 (count 16) at 11 is not."""
    live_cluster.cli("scancel", "-u", live_cluster.username)
    job_id = live_cluster.sbatch("-p", "debug", "-w", "node01", "-L", "flat:11", "--wrap=sleep 60")
    deadline = time.monotonic() + 90
    while live_cluster.cli("squeue", "-h", "-j", str(job_id), "-o", "%T").strip() != "RUNNING":
        assert time.monotonic() < deadline, live_cluster.cli("explain", str(job_id))
        time.sleep(0.5)
    page.goto(f"{live_cluster.url}/hres/")
    flat = page.locator('section[data-resource="flat"]')
    expect(flat.locator('tr[data-layer="low1"]')).to_have_attribute("data-used", "11", timeout=UPDATE_TIMEOUT)
    expect(flat.locator(".hres-sunburst svg").first).to_be_visible(timeout=10_000)
    drawn = page.evaluate(
        """() => {
            const d = document.querySelector('[data-sunburst="flat"]').data[0];
            return Object.fromEntries(d.ids.map((id, i) => [id, d.values[i]]));
        }"""
    )
    used = {
        row.get_attribute("data-layer"): int(row.get_attribute("data-used"))
        for row in flat.locator("tr[data-layer]").all()
    }
    assert drawn == used and used["low1"] == 11
    expect(flat.locator('tr[data-layer="low1"] .hres-bar')).to_have_class("hres-bar hres-warn")
    expect(flat.locator('tr[data-layer="mid1"] .hres-bar')).to_have_class("hres-bar")
    warn = flat.locator('tr[data-layer="low1"] .hres-bar > span').evaluate(
        "s => getComputedStyle(s).backgroundColor"
    )
    plain = flat.locator('tr[data-layer="mid1"] .hres-bar > span').evaluate(
        "s => getComputedStyle(s).backgroundColor"
    )
    assert warn != plain
    live_cluster.cli("scancel", str(job_id))


def test_job_page_and_limits_page_explain_an_hres_blocked_job_alike(page: Page, live_cluster):
    live_cluster.cli("scancel", "-u", live_cluster.username)
    first = live_cluster.sbatch("-p", "debug", "-w", "node01", "-L", "flat:11", "-t", "5", "--wrap=sleep 120")
    deadline = time.monotonic() + 90
    while live_cluster.cli("squeue", "-h", "-j", str(first), "-o", "%T").strip() != "RUNNING":
        assert time.monotonic() < deadline, live_cluster.cli("explain", str(first))
        time.sleep(0.5)
    held = live_cluster.sbatch("-p", "debug", "-w", "node01", "-L", "flat:5", "-t", "5", "--wrap=true")
    deadline = time.monotonic() + 90
    while live_cluster.cli("squeue", "-h", "-j", str(held), "-o", "%r").strip() != "Licenses":
        assert time.monotonic() < deadline, live_cluster.cli("explain", str(held))
        time.sleep(0.5)
    page.goto(f"{live_cluster.url}/jobs/{held}/")
    on_job_page = page.locator("#job-why tbody tr")
    expect(on_job_page).to_have_count(1)
    expect(on_job_page).to_contain_text("layer low1 has 1 free")
    job_rows = on_job_page.all_inner_texts()
    page.locator("#job-why h2 a").click()
    expect(page).to_have_url(f"{live_cluster.url}/limits/jobs/{held}/")
    assert page.locator("#blocks tbody tr").all_inner_texts() == job_rows
    # fsched explain prints the same cause.
    assert "layer low1 has 1 free [HRES flat layer low1]" in live_cluster.cli("explain", str(held))
    live_cluster.cli("scancel", str(first), str(held))
