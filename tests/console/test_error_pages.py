"""The 404 and 500 pages in the console's look, the 500 page with the database down, and
the admin branded fsched's (issue #15 point 7)."""

from __future__ import annotations

import pytest
from django.test import Client


def test_404_is_a_console_page(client: Client, users):
    client.force_login(users["alice"])
    for path in ("/no-such-page/", "/nodes/no-such-node/"):
        response = client.get(path)
        assert response.status_code == 404
        html = response.content.decode()
        assert "<h1>Page not found</h1>" in html
        assert "css/console.css" in html
        assert 'rel="icon" href="/static/favicon.svg"' in html
        assert 'id="theme-toggle"' in html


def test_404_escapes_the_path(client: Client, users):
    client.force_login(users["alice"])
    html = client.get("/<script>x</script>/").content.decode()
    assert "<script>x</script>" not in html


def test_500_renders_with_the_database_down():
    # No database for this test (pytest-django refuses every query): loading the session
    # behind the cookie fails as it would with the database down, and the 500 page must
    # still render, itself without a query.
    client = Client(raise_request_exception=False)
    client.cookies["sessionid"] = "x" * 32
    response = client.get("/nodes/")
    assert response.status_code == 500
    html = response.content.decode()
    assert "<h1>Server error</h1>" in html
    assert "css/console.css" in html
    assert 'rel="icon" href="/static/favicon.svg"' in html


def test_admin_is_branded_fsched(client: Client, users):
    login = client.get("/admin/login/").content.decode()
    assert "fsched administration" in login
    assert "Django" not in login
    assert 'rel="icon" href="/static/favicon.svg"' in login
    client.force_login(users["admin"])
    index = client.get("/admin/").content.decode()
    assert "<title>Cluster administration | fsched admin</title>" in index
    assert "fsched administration" in index


@pytest.mark.parametrize("path", ["/", "/nodes/", "/jobs/"])
def test_console_pages_link_the_favicon_and_theme(client: Client, users, demo, path):
    client.force_login(users["alice"])
    html = client.get(path).content.decode()
    assert 'rel="icon" href="/static/favicon.svg"' in html
    assert 'src="/static/js/theme.js"' in html
