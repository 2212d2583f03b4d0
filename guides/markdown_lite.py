"""A small, safe Markdown-to-HTML converter for the guides in docs/.

No Markdown package is a dependency of the controller (markdown-it-py is in the lock only
through a development tool), so the Help pages convert the subset the docs use: headings,
paragraphs, lists, fenced and indented code blocks, pipe tables (shown as preformatted
text), inline code, emphasis and links.  Everything else is text: every character of the
source is HTML-escaped before any tag is added, so raw HTML in a file shows as written.

A link's target goes through ``link_target`` (the caller's mapping of ``other.md`` to a
page); only targets it returns, and ``http(s)://`` or ``#anchor`` ones, become links.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable

LinkTarget = Callable[[str], "str | None"]

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^(\s*)[-*+]\s+(.*)$")
_NUMBERED = re.compile(r"^(\s*)\d+[.)]\s+(.*)$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE = re.compile(r"`([^`]+)`")
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
_STRONG = re.compile(r"\*\*(.+?)\*\*")
_COMMENT = re.compile(r"^\s*<!--.*-->\s*$")
# A long line scrolls inside its block, and a block that scrolls must take the keyboard's
# focus to be scrolled without a mouse (axe-core's scrollable-region-focusable).
PRE = '<pre tabindex="0">'


def slug(text: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to ``-``."""
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def _safe_href(target: str, link_target: LinkTarget) -> str | None:
    if target.startswith(("http://", "https://")) or re.fullmatch(r"#[\w\-]+", target):
        return target
    return link_target(target)


def inline(text: str, link_target: LinkTarget) -> str:
    """Escape ``text``, then mark up code spans, links and ``**strong**``.

    Code spans are cut out first so that nothing inside them is read as a link or emphasis.
    """
    parts = _CODE.split(text)
    out = []
    for i, part in enumerate(parts):
        if i % 2:
            out.append(f"<code>{html.escape(part)}</code>")
            continue
        pieces = []
        last = 0
        for m in _LINK.finditer(part):
            pieces.append(_STRONG.sub(r"<strong>\1</strong>", html.escape(part[last : m.start()])))
            label = _STRONG.sub(r"<strong>\1</strong>", html.escape(m.group(1)))
            href = _safe_href(m.group(2), link_target)
            if href is None:
                pieces.append(label)
            else:
                pieces.append(f'<a href="{html.escape(href)}">{label}</a>')
            last = m.end()
        pieces.append(_STRONG.sub(r"<strong>\1</strong>", html.escape(part[last:])))
        out.append("".join(pieces))
    return "".join(out)


def headings(source: str) -> list[tuple[int, str]]:
    """The (level, text) of each heading outside code blocks, for a page's contents."""
    found = []
    fenced = False
    for line in source.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        m = None if fenced else _HEADING.match(line)
        if m:
            found.append((len(m.group(1)), m.group(2)))
    return found


def to_html(source: str, link_target: LinkTarget) -> str:
    """The HTML of ``source``; every piece of its text is escaped."""
    lines = source.splitlines()
    out: list[str] = []
    para: list[str] = []
    items: list[str] = []
    list_tag = ""
    i = 0

    def flush() -> None:
        nonlocal list_tag
        if para:
            out.append(f"<p>{inline(' '.join(para), link_target)}</p>")
            para.clear()
        if items:
            body = "".join(f"<li>{inline(item, link_target)}</li>" for item in items)
            out.append(f"<{list_tag}>{body}</{list_tag}>")
            items.clear()
            list_tag = ""

    while i < len(lines):
        line = lines[i]
        if _FENCE.match(line):
            flush()
            fence = _FENCE.match(line).group(1)
            code = []
            i += 1
            while i < len(lines) and not lines[i].lstrip().startswith(fence):
                code.append(lines[i])
                i += 1
            out.append(f"{PRE}<code>{html.escape(chr(10).join(code))}</code></pre>")
            i += 1
            continue
        if not line.strip() or _COMMENT.match(line):
            flush()
            i += 1
            continue
        if line.startswith("    ") and not para and not items:
            code = []
            while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
                code.append(lines[i][4:])
                i += 1
            out.append(f"{PRE}<code>{html.escape(chr(10).join(code).rstrip())}</code></pre>")
            continue
        if line.lstrip().startswith("|"):
            flush()
            rows = []
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                rows.append(lines[i])
                i += 1
            out.append(f'<pre class="table" tabindex="0">{html.escape(chr(10).join(rows))}</pre>')
            continue
        heading = _HEADING.match(line)
        if heading:
            flush()
            level, text = len(heading.group(1)), heading.group(2)
            out.append(f'<h{level} id="{html.escape(slug(text))}">{inline(text, link_target)}</h{level}>')
            i += 1
            continue
        bullet, numbered = _BULLET.match(line), _NUMBERED.match(line)
        if bullet or numbered:
            tag = "ul" if bullet else "ol"
            if para or (items and tag != list_tag):
                flush()
            list_tag = tag
            items.append((bullet or numbered).group(2))
            i += 1
            continue
        if items and line.startswith(" "):
            items[-1] += " " + line.strip()  # a list item's continuation line
        else:
            if items:
                flush()
            para.append(line.strip())
        i += 1
    flush()
    return "\n".join(out)
