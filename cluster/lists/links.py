"""Links of a list page: sort headers and page numbers, each a page URL (the address a
person shares) and its fragment URL (what htmx fetches into the table)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cluster.lists.params import PageSpan, Sort


@dataclass(frozen=True)
class Link:
    label: str
    href: str  # the page, for a new tab or without JavaScript
    hx: str  # the table fragment with the same parameters
    current: bool = False


@dataclass(frozen=True)
class SortHeader:
    key: str  # "" for a column that does not sort
    label: str
    link: Link | None
    aria_sort: str  # "ascending", "descending" or "" (aria-sort on the <th>)
    css: str = ""


def sort_headers(
    columns: Sequence[tuple[str, str, str]], current: Sort, url: Callable[..., tuple[str, str]]
) -> list[SortHeader]:
    """``columns``: (sort key or "", label, css class).  A click sorts ascending, a second
    click on the same column descending; ``url(sort=...)`` gives (page URL, fragment URL)."""
    out = []
    for key, label, css in columns:
        if not key:
            out.append(SortHeader("", label, None, "", css))
            continue
        active = current.key == key
        target = Sort(key, descending=active and not current.descending)
        href, hx = url(sort=target, page=1)
        aria = ("descending" if current.descending else "ascending") if active else ""
        out.append(SortHeader(key, label, Link(label, href, hx, active), aria, css))
    return out


def page_links(span: PageSpan, url: Callable[..., tuple[str, str]]) -> dict[str, object]:
    def link(n: int, label: str = "") -> Link:
        href, hx = url(page=n)
        return Link(label or str(n), href, hx, n == span.number)

    return {
        "previous": link(span.number - 1, "Previous") if span.has_previous else None,
        "next": link(span.number + 1, "Next") if span.has_next else None,
        "numbers": [None if n is None else link(n) for n in span.window()],
    }
