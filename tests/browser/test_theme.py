"""The light/dark toggle (issue #15 point 7): it switches the page and re-lays-out every
plotly chart without a reload, is remembered across reloads, and without a choice the
system preference decides.  The favicon is served."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page, expect

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

# The console's --bg and --text of each theme (static/css/console.css).
BACKGROUND = {"light": "rgb(245, 246, 248)", "dark": "rgb(16, 21, 28)"}
TEXT = {"light": "#1c2430", "dark": "#dfe6ee"}

CHART_PAGES = ("/power/", "/hres/", "/nodes/node01/")

CHART_FONTS = """() => Array.from(document.querySelectorAll('.js-plotly-plot'))
    .map(el => el._fullLayout && el._fullLayout.font.color)"""


def new_page(browser: Browser, login_state, scheme: str) -> Page:
    context = browser.new_context(storage_state=login_state, color_scheme=scheme)
    return context.new_page()


def assert_theme(page: Page, theme: str) -> None:
    expect(page.locator("html")).to_have_attribute("data-theme", theme)
    expect(page.locator("#theme-toggle")).to_have_attribute("aria-pressed", str(theme == "dark").lower())
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == BACKGROUND[theme]
    page.wait_for_function(f"() => ({CHART_FONTS})().every(c => c === '{TEXT[theme]}')", timeout=10_000)


@pytest.mark.parametrize("path", CHART_PAGES)
def test_toggle_themes_the_page_and_its_charts(browser: Browser, login_state, live_cluster, path):
    page = new_page(browser, login_state, "light")
    try:
        page.goto(live_cluster.url + path)
        expect(page.locator(".js-plotly-plot").first).to_be_attached(timeout=10_000)
        assert page.evaluate(f"({CHART_FONTS})().length") >= 1
        assert_theme(page, "light")
        page.evaluate("window.__noReload = 'still here'")

        page.click("#theme-toggle")
        assert_theme(page, "dark")
        assert page.evaluate("localStorage.getItem('theme')") == "dark"
        assert page.evaluate("window.__noReload") == "still here"  # relaid out, not reloaded

        page.reload()  # remembered, over the system's light preference
        expect(page.locator(".js-plotly-plot").first).to_be_attached(timeout=10_000)
        assert_theme(page, "dark")

        page.click("#theme-toggle")
        assert_theme(page, "light")
        assert page.evaluate("localStorage.getItem('theme')") == "light"
    finally:
        page.context.close()


def test_without_a_choice_the_system_preference_decides(browser: Browser, login_state, live_cluster):
    page = new_page(browser, login_state, "dark")
    try:
        page.goto(f"{live_cluster.url}/power/")
        expect(page.locator(".js-plotly-plot").first).to_be_attached(timeout=10_000)
        assert_theme(page, "dark")
        page.emulate_media(color_scheme="light")  # followed live while nothing is chosen
        assert_theme(page, "light")
        page.click("#theme-toggle")  # a choice wins over the system's preference
        page.emulate_media(color_scheme="light")
        assert_theme(page, "dark")
    finally:
        page.context.close()


def test_favicon_is_linked_and_served(page: Page, live_cluster):
    page.goto(f"{live_cluster.url}/nodes/")
    href = page.locator('link[rel="icon"]').get_attribute("href")
    assert href == "/static/favicon.svg"
    response = page.request.get(live_cluster.url + href)
    assert response.status == 200
    assert response.headers["content-type"].startswith("image/svg+xml")
    assert response.text().startswith("<svg")
