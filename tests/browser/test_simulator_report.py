"""report.html opened from disk in Debian's Chromium: every chart drawn, no error, and no
request leaves file:// (#18 point 3)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

import pytest

from simulator.report import write_report
from tests.simulator.report_log import XSS, write_log

pytestmark = pytest.mark.browser

CHARTS = 8


def test_report_renders_offline(tmp_path: Path, browser) -> None:
    # The session's Chromium (tests/browser/conftest.py): a second sync_playwright would
    # find the first one's event loop running in this thread.
    _, html_path = write_report(write_log(tmp_path / "events.jsonl"), tmp_path / "out")
    requests: list[str] = []
    errors: list[str] = []
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    try:
        # The user named <script>alert(1)</script>: would its script run, this would tell.
        page.add_init_script("window.alert = () => { window.__alerted = true; }")
        page.on("request", lambda r: requests.append(r.url))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(html_path.as_uri())
        page.wait_for_function(
            f"() => document.querySelectorAll('.chart .main-svg').length >= {CHARTS}", timeout=60_000
        )
        drawn = page.eval_on_selector_all(
            ".chart", "els => els.map(e => [e.id, !!e.querySelector('svg.main-svg')])"
        )
        bars = page.locator("#chart-power .bars .point").count()
        user_cell = page.locator("#users th[scope=row]", has_text="alert").inner_text()
        alerted = page.evaluate("() => window.__alerted === true")
    finally:
        page.close()
    assert len(drawn) == CHARTS and all(ok for _, ok in drawn), drawn
    assert bars == 5  # ALLOCATED, IDLE, MIXED, POWERED_DOWN, POWERING_UP
    assert user_cell == XSS  # shown as the text it is
    assert not alerted
    assert not errors, errors
    assert requests and all(urlparse(u).scheme in ("file", "data", "blob") for u in requests), requests
