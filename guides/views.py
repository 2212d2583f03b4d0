"""The Help pages: docs/user-guide.md, docs/admin-guide.md and the docs they link to,
rendered by ``guides.markdown_lite`` (escaped text, a few tags)."""

from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.safestring import mark_safe

from cluster.views import console_view
from guides import markdown_lite

DOCS = Path(settings.BASE_DIR) / "docs"
README = Path(settings.BASE_DIR) / "README.md"
GUIDES = {"user-guide": "help-user", "admin-guide": "help-admin"}
_DOC_NAME = re.compile(r"[a-z0-9][a-z0-9-]*")


def _source(name: str) -> Path | None:
    """The file behind a page name: ``readme`` or a ``docs/<name>.md`` that exists."""
    if name == "readme":
        return README
    if not _DOC_NAME.fullmatch(name):
        return None
    path = DOCS / f"{name}.md"
    return path if path.is_file() else None


def page_url(target: str) -> str | None:
    """Where a link of a doc points in the console: ``other.md`` (or ``../README.md``) with
    an optional ``#anchor`` becomes that doc's Help page; anything else is no link."""
    file, _, anchor = target.partition("#")
    name = Path(file).name
    if not name.endswith(".md") or file not in (name, f"../{name}", f"docs/{name}"):
        return None
    stem = "readme" if name == "README.md" else name[: -len(".md")]
    if _source(stem) is None:
        return None
    url = reverse(GUIDES[stem]) if stem in GUIDES else reverse("help-doc", kwargs={"name": stem})
    return f"{url}#{anchor}" if anchor and re.fullmatch(r"[\w\-]+", anchor) else url


def _page(request: HttpRequest, name: str) -> HttpResponse:
    path = _source(name)
    if path is None:
        raise Http404(f"no document named {name}")
    text = path.read_text(encoding="utf-8")
    found = markdown_lite.headings(text)
    title = found[0][1] if found else name
    contents = [(text, markdown_lite.slug(text)) for level, text in found if level == 2]
    return render(
        request,
        "guides/page.html",
        {
            "nav": "help",
            "title": title,
            "contents": contents,
            # Safe: markdown_lite escapes every character of the file before adding its tags.
            "body": mark_safe(markdown_lite.to_html(text, page_url)),  # noqa: S308
        },
    )


@console_view
def index(request: HttpRequest) -> HttpResponse:
    return render(request, "guides/index.html", {"nav": "help"})


@console_view
def user_guide(request: HttpRequest) -> HttpResponse:
    return _page(request, "user-guide")


@console_view
def admin_guide(request: HttpRequest) -> HttpResponse:
    return _page(request, "admin-guide")


@console_view
def doc(request: HttpRequest, name: str) -> HttpResponse:
    return _page(request, name)
