"""``/api/docs/`` renders with nothing reachable but the server (#15: no CDN at run time).

Every request the page makes to another host is aborted and recorded: Swagger UI must
come from the project's own static files (drf-spectacular-sidecar), and the test fails
if the page even tried to fetch from elsewhere.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, Route, expect

pytestmark = [pytest.mark.browser, pytest.mark.e2e]


def test_swagger_ui_renders_the_operations_with_the_network_blocked(page: Page, live_cluster):
    server = urlsplit(live_cluster.url).netloc
    blocked: list[str] = []

    def only_the_server(route: Route) -> None:
        if urlsplit(route.request.url).netloc == server:
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort("blockedbyclient")

    page.route("**/*", only_the_server)
    page.goto(f"{live_cluster.url}/api/docs/")
    # Swagger UI has drawn the schema: the title, and the operations of the job endpoints.
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("fsched API", timeout=15_000)
    operations = page.locator(".opblock .opblock-summary-path")
    expect(operations.first).to_be_visible()
    assert operations.count() > 10
    expect(page.locator('.opblock-summary-path[data-path="/api/jobs/"]').first).to_be_visible()
    assert blocked == [], f"/api/docs/ tried to fetch from other hosts: {blocked}"
