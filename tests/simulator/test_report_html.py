"""report.html is one file that fetches nothing and escapes every name from the log."""

from __future__ import annotations

import json
import re

import pytest

from simulator.report import build_report
from simulator.report_html import PLOTLY_JS, render_html
from tests.simulator.report_log import LOG, XSS


@pytest.fixture(scope="module")
def page() -> str:
    return render_html(build_report(LOG))


def own_markup(page: str) -> str:
    """The page without its one inline copy of plotly.min.js (the installed file byte for
    byte: its source holds the map tile servers' URLs, which no chart here loads)."""
    bundle = PLOTLY_JS.read_text(encoding="utf-8")
    assert page.count(bundle) == 1
    return page.replace(bundle, "")


def test_plotly_is_inlined_and_nothing_else_is_linked(page: str) -> None:
    markup = own_markup(page)
    urls = re.findall(r".{0,40}(?:https?:|//[a-z0-9]).{0,40}", markup, re.IGNORECASE)
    assert not urls
    assert not re.search(r"<(link|img|iframe)\b|\bsrc\s*=|@import", markup, re.IGNORECASE)


def test_a_user_named_as_a_script_is_escaped(page: str) -> None:
    markup = own_markup(page)
    assert XSS not in markup
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in markup  # the users' table
    # Every <script> of the page is one of its own three: plotly, the data, the drawing.
    assert len(re.findall(r"<script\b", markup)) == 3


def test_chart_data_cannot_close_its_script(page: str) -> None:
    block = re.search(r"<script type='application/json' id='report-data'>(.*?)</script>", page, re.DOTALL)
    assert block
    data = block.group(1)
    assert "<" not in data and ">" not in data and "&" not in data
    figures = json.loads(data)
    # The name reaches plotly escaped, which plotly shows as the text it is.
    names = {trace["name"] for trace in figures["chart-wait-accounts"]["data"]}
    assert names == {"chem", "physics"}


def test_every_chart_of_the_issue_is_there(page: str) -> None:
    for chart in (
        "chart-utilisation", "chart-wait-partitions", "chart-wait-accounts", "chart-slowdown",
        "chart-layers", "chart-power", "chart-limits", "chart-load",
    ):  # fmt: skip
        assert f"id='{chart}'" in page


def test_a_partition_named_as_markup_is_escaped_in_the_charts() -> None:
    log = [
        {**LOG[0], "partitions": {"</script><b>x": ["n1"]}},
        {"t": 0, "event": "done", "jobs": 0, "simulated_seconds": 10, "wall_seconds": 1},
    ]
    page = render_html(build_report(log))
    data = re.search(r"id='report-data'>(.*?)</script>", page, re.DOTALL).group(1)
    figures = json.loads(data)
    assert figures["chart-slowdown"]["data"][0]["x"] == ["&lt;/script&gt;&lt;b&gt;x"]
    assert "&lt;/script&gt;&lt;b&gt;x" in own_markup(page)  # the partitions' table
