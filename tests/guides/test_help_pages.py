"""The console's Help pages: the guides of docs/ rendered for any logged-in user (#15 point 8)."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from django.test import Client

from guides import views
from guides.markdown_lite import headings, slug

pytestmark = pytest.mark.django_db

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.fixture
def alice(users) -> Client:
    """A user who is not staff: the guides are for everyone."""
    client = Client()
    client.force_login(users["alice"])
    return client


@pytest.mark.parametrize(
    ("url", "file"), [("/help/user/", "user-guide.md"), ("/help/admin/", "admin-guide.md")]
)
def test_a_guide_renders_with_the_headings_of_its_file(alice, url, file):
    source = (DOCS / file).read_text(encoding="utf-8")
    found = headings(source)
    assert found[0][0] == 1 and len([h for h in found if h[0] == 2]) >= 4
    page = alice.get(url)
    assert page.status_code == 200
    body = page.content.decode()
    assert f"<title>{html.escape(found[0][1])} · Help · fsched</title>" in body
    for level, text in found:
        # The heading's own text, escaped, with its id for the table of contents' links.
        rendered = re.search(rf'<h{level} id="{re.escape(slug(text))}">(.*?)</h{level}>', body)
        assert rendered, f"heading {text!r} of {file} is not on {url}"
        if level == 2:
            assert f'href="#{slug(text)}"' in body
    # The first paragraph of the file, a block of code and a link to the other guide.
    assert '<pre tabindex="0"><code>' in body
    other = "/help/admin/" if url == "/help/user/" else "/help/user/"
    assert f'href="{other}"' in body


def test_links_to_other_docs_open_them_in_the_console(alice):
    body = alice.get("/help/admin/").content.decode()
    for href in re.findall(r'<a href="(/help/[^"#]*)', body):
        assert alice.get(href).status_code == 200, href
    assert 'href="/help/docs/scaling/"' in body
    assert 'href="/help/docs/readme/#distributed-mode"' in body
    readme = alice.get("/help/docs/readme/").content.decode()
    assert '<h2 id="distributed-mode">Distributed mode</h2>' in readme


def test_the_source_is_escaped_and_unsafe_links_are_dropped(alice, tmp_path, monkeypatch):
    (tmp_path / "trap.md").write_text(
        "# A <b>bold</b> title\n\n"
        "Some <script>alert(1)</script> text & more, "
        '[click](javascript:alert(1)) and [quote](x.md" onmouseover="alert(1)).\n\n'
        "- an <img src=x onerror=alert(1)> item\n\n"
        "    <iframe src=//evil></iframe>\n",
        encoding="utf-8",
    )
    monkeypatch.setattr(views, "DOCS", tmp_path)
    body = alice.get("/help/docs/trap/").content.decode()
    main = body.split('<article class="guide-body">', 1)[1]
    assert '<h1 id="a-bboldb-title">A &lt;b&gt;bold&lt;/b&gt; title</h1>' in main
    assert "Some &lt;script&gt;alert(1)&lt;/script&gt; text &amp; more" in main
    assert "<li>an &lt;img src=x onerror=alert(1)&gt; item</li>" in main
    assert '<pre tabindex="0"><code>&lt;iframe src=//evil&gt;&lt;/iframe&gt;</code></pre>' in main
    for tag in ("<script", "<img", "<iframe", "<b>", "javascript:", 'onmouseover="'):
        assert tag not in main
    assert "click" in main


def test_the_help_index_and_the_navigation(alice):
    body = alice.get("/help/").content.decode()
    assert 'href="/help/user/"' in body and 'href="/help/admin/"' in body
    assert '<a href="/help/" aria-current="page">Help</a>' in body


@pytest.mark.parametrize("url", ["/help/", "/help/user/", "/help/admin/", "/help/docs/security/"])
def test_help_needs_a_login(url):
    answer = Client().get(url)
    assert answer.status_code == 302 and "login" in answer["Location"]


@pytest.mark.parametrize(
    "url", ["/help/docs/nothing-here/", "/help/docs/grafana-dashboard/", "/help/docs/..%2Fsettings/"]
)
def test_only_markdown_docs_that_exist_are_served(alice, url):
    assert alice.get(url).status_code == 404
