"""plotly.js crosses the network once for every chart page, gzip-compressed (#15 point 7):
the Resources page, the Power page and a node page's load chart share one cached URL.
Bytes are counted as Chromium received them (the DevTools protocol's encodedDataLength)."""

from __future__ import annotations

from pathlib import Path

import plotly
import pytest
from playwright.sync_api import Page

PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"

pytestmark = [pytest.mark.browser, pytest.mark.e2e]


def test_plotly_is_transferred_once_and_compressed(page: Page, context, live_cluster) -> None:
    cdp = context.new_cdp_session(page)
    cdp.send("Network.enable")
    urls: dict[str, str] = {}
    received: dict[str, int] = {}
    cdp.on("Network.responseReceived", lambda e: urls.__setitem__(e["requestId"], e["response"]["url"]))
    cdp.on(
        "Network.loadingFinished", lambda e: received.__setitem__(e["requestId"], int(e["encodedDataLength"]))
    )
    for path in ("/hres/", "/power/", "/nodes/node01/", "/hres/"):
        page.goto(f"{live_cluster.url}{path}")
        page.wait_for_function("() => !!window.Plotly", timeout=30_000)
    plotly = [received.get(rid, 0) for rid, url in urls.items() if "plotly" in url]
    transferred = sum(plotly)
    print(f"plotly bytes transferred over 4 page loads: {transferred} (file {PLOTLY_JS.stat().st_size})")
    assert plotly, urls
    # Once, compressed: the 4.8 MB file is about 1.47 MB gzipped.
    assert 0 < transferred < PLOTLY_JS.stat().st_size // 3
