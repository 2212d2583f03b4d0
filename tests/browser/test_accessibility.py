"""axe-core on every console page, with data, in light and in dark mode: no violation of
impact serious or critical (issue #15, acceptance).

The pages are listed once in CONSOLE_PAGES; a page added to the console adds one line there.
Placeholders in braces are filled from the data the module sets up on the live demo cluster.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.axe import describe, serious_violations

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

# Every console page (config/urls.py and the apps' urls.py), not the live fragments
# (``_``-prefixed paths), which are parts of these pages.
CONSOLE_PAGES: tuple[str, ...] = (
    "/",
    "/nodes/",
    "/nodes/{node}/",
    "/jobs/?state=all",
    "/jobs/{running_job}/",
    "/jobs/{pending_job}/",
    "/jobs/{done_job}/",
    "/hres/",
    "/hres/{layer}/",
    "/limits/",
    "/limits/calculator/",
    "/limits/jobs/{pending_job}/",
    "/power/",
    "/reports/",
    "/events/",
    "/audit/",
    "/nodes/?view=table",
    "/help/",
    "/no-such-page/",
)
THEMES = ("light", "dark")


@pytest.fixture(scope="module")
def page_data(live_cluster) -> Iterator[dict[str, str]]:
    """Jobs in the states the pages show: running (holding an HRES layer), pending, done."""
    done = live_cluster.sbatch("-p", "debug", "-J", "axe-done", "--wrap=true")
    running = live_cluster.sbatch("-p", "debug", "-J", "axe-running", "-L", "power:200", "--wrap=sleep 300")
    pending = live_cluster.sbatch("-p", "debug", "-J", "axe-pending", "--hold", "--wrap=sleep 1")
    yield {
        "node": "node01",
        "running_job": str(running),
        "pending_job": str(pending),
        "done_job": str(done),
        "layer": "power/rack1",
    }
    live_cluster.cli("scancel", str(running), str(pending))


@pytest.fixture(params=THEMES)
def themed_page(request, browser: Browser, login_state) -> Iterator[Page]:
    """A logged-in page whose system colour scheme is the theme (no choice stored, so the
    console follows it)."""
    context = browser.new_context(
        storage_state=login_state, viewport={"width": 1400, "height": 900}, color_scheme=request.param
    )
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert not errors, f"JavaScript errors: {errors}"


@pytest.mark.parametrize("path", CONSOLE_PAGES)
def test_no_serious_accessibility_violation(themed_page: Page, live_cluster, page_data, path):
    page = themed_page
    page.goto(live_cluster.url + path.format(**page_data))
    page.wait_for_load_state("networkidle")
    # Charts draw after load; axe must see them as drawn.
    for plot in page.locator(".js-plotly-plot").all():
        expect(plot.locator("svg").first).to_be_attached()
    found = serious_violations(page)
    theme = page.evaluate("document.documentElement.dataset.theme || 'system'")
    assert not found, f"{path} ({theme}):\n{describe(found)}"
