"""The Help pages in Chromium: reached from the navigation, their links work, they fit a
phone, and axe-core finds nothing serious in them (#15 point 8)."""

from __future__ import annotations

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page, expect

pytestmark = [pytest.mark.browser, pytest.mark.e2e]


def serious(page: Page, scheme: str) -> list[str]:
    page.emulate_media(color_scheme=scheme)
    # axe.min.js comes from the installed axe-playwright-python package, injected by the page.
    found = Axe().run(page, context="#main").response["violations"]
    return [f"{v['id']}: {v['help']}" for v in found if v["impact"] in ("serious", "critical")]


def test_help_from_the_navigation_to_both_guides(page: Page, live_cluster):
    page.goto(f"{live_cluster.url}/jobs/")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Help").click()
    expect(page).to_have_url(f"{live_cluster.url}/help/")
    page.get_by_role("link", name="User guide").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("User guide")
    # The table of contents jumps to a section of the page.
    page.get_by_role("navigation", name="On this page").get_by_role(
        "link", name="Why is my job pending?"
    ).click()
    expect(page).to_have_url(f"{live_cluster.url}/help/user/#why-is-my-job-pending")
    expect(page.locator("#why-is-my-job-pending")).to_be_in_viewport()
    for scheme in ("light", "dark"):
        assert serious(page, scheme) == [], f"axe-core, {scheme} mode"
    # A link in the text opens the other guide, and from there a reference page.
    page.locator("article").get_by_role("link", name="administrator guide").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Administrator guide")
    for scheme in ("light", "dark"):
        assert serious(page, scheme) == [], f"axe-core, {scheme} mode"
    page.locator("article").get_by_role("link", name="Load thresholds").click()
    expect(page).to_have_url(f"{live_cluster.url}/help/docs/load-thresholds/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Load thresholds")


def test_a_guide_fits_a_phone(browser, login_state, live_cluster):
    context = browser.new_context(storage_state=login_state, viewport={"width": 375, "height": 740})
    try:
        page = context.new_page()
        page.goto(f"{live_cluster.url}/help/admin/")
        expect(page.get_by_role("heading", level=1)).to_have_text("Administrator guide")
        # Long command lines scroll inside their own block; the page itself does not.
        widths = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert widths[0] <= widths[1], f"the page is {widths[0]}px wide in a {widths[1]}px window"
    finally:
        context.close()
