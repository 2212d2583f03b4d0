"""axe-core in a Playwright page: the serious and critical violations of a rendered page.

axe-core's script is the ``axe.min.js`` that the installed package axe-playwright-python
ships; it is read from the package's directory and injected into the page, so nothing is
fetched at test time.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from typing import Any

from playwright.sync_api import Page

BLOCKING_IMPACTS = frozenset({"serious", "critical"})


@cache
def axe_script() -> str:
    return files("axe_playwright_python").joinpath("axe.min.js").read_text(encoding="utf-8")


def axe_violations(page: Page) -> list[dict[str, Any]]:
    """Every violation axe-core finds on the page as it is now (all impacts)."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(content=axe_script())
    return page.evaluate("() => axe.run(document, {resultTypes: ['violations']}).then(r => r.violations)")


def serious_violations(page: Page) -> list[dict[str, Any]]:
    """The violations of impact serious or critical (those the console must not have)."""
    return [v for v in axe_violations(page) if v.get("impact") in BLOCKING_IMPACTS]


def describe(violations: list[dict[str, Any]]) -> str:
    """One line per violation and failing element, readable in a test failure."""
    lines = []
    for v in violations:
        for node in v["nodes"]:
            lines.append(f"{v['id']} ({v['impact']}): {node['target']} {node.get('failureSummary', '')!r}")
    return "\n".join(lines)
