"""The console's view of load (#14 point 5) in Chromium, against a real controller and a
real agent on the spec's own example (partition-U7KH5, compute1) reading fed /proc files
(``--proc-root``), the load check every second.

The node page charts a day of indices (a few older samples fed into the database, then the
check's own) with the thresholds in force drawn as lines; when the fed memory crosses
LoadSchedMem and LoadStopMem, the check's drain and stop appear as marks on the same plot
without a reload, then its continue and undrain; the node grid shows the load drain's
reason, the job list the stopped job's.  The plot is read through plotly's own data and
layout on the element (``page.evaluate``)."""

from __future__ import annotations

import getpass
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.harness import E2ECluster, new_cluster
from tests.e2e.test_load_e2e import PARTITIONS, SLURM_CONF, feed, states

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

CHROMIUM = "/usr/bin/chromium"
UPDATE_TIMEOUT = 30_000  # ms: a heartbeat every 5 s, then a check within 1 s
HISTORY = """
from datetime import timedelta
from django.utils import timezone
from load.models import NodeLoadSample
now = timezone.now()
NodeLoadSample.objects.bulk_create([
    NodeLoadSample(node="compute1", time=now - timedelta(hours=h), mem=m, ut=u, r15s=0.5, r1m=0.4, r15m=0.3)
    for h, m, u in ((23, 4000, 30.0), (12, 2500, 60.0), (2, 1800, 85.0))
])
"""
# What the plot holds, by the meta each trace carries (static/load/load_chart.js).
TRACES = """() => (document.getElementById("load-chart").data || []).map(t => ({
    name: t.name, role: t.meta && t.meta.role, index: t.meta && t.meta.index,
    y: Array.from(t.y), text: t.text ? Array.from(t.text) : []}))"""

HAS_MARK = "a => (document.getElementById('load-chart').data || []).some(t => t.meta && t.meta.action === a)"


@pytest.fixture(scope="module")
def load_cluster(tmp_path_factory) -> Iterator[tuple[E2ECluster, str, str, Path]]:
    """(cluster, admin name, password, the agent's fed /proc directory)."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed")
    conf = tmp_path_factory.mktemp("load-console-conf")
    (conf / "slurm.conf").write_text(SLURM_CONF)
    (conf / "partitions.conf").write_text(PARTITIONS)
    proc = tmp_path_factory.mktemp("load-console-proc")
    feed(proc, mem_mib=5000)
    state = tmp_path_factory.mktemp("load-console-state")
    cluster = new_cluster(
        state,
        conf,
        env={
            "FSCHED_SCHED_INTERVAL": "1",
            "FSCHED_LOAD_INTERVAL": "1",
            "FSCHED_LOAD_SAMPLE_INTERVAL": "1",
        },
    )
    username = getpass.getuser()  # the agent runs a job as its user's account
    try:
        out = cluster.setup(username=username)
        match = re.search(r"with password: (\S+)", out)
        assert match, f"no password in the bootstrap output: {out!r}"
        cluster.manage("shell", "-c", HISTORY)
        cluster.start_server()
        cluster.start_agent("compute1", "--proc-root", str(proc))
        cluster.wait_for(
            "compute1 up", lambda: cluster.nodes()["compute1"]["state"].split("+")[0] == "IDLE", timeout=60
        )
        yield cluster, username, match.group(1), proc
    finally:
        cluster.stop()


@pytest.fixture
def page(browser: Browser, load_cluster) -> Iterator[Page]:
    # ``browser`` is the suite's session Chromium (tests/browser/conftest.py).
    cluster, me, password, _ = load_cluster
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{cluster.url}/nodes/compute1/")
    assert "/login/" in page.url  # the console requires a login
    page.fill("#id_username", me)
    page.fill("#id_password", password)
    page.click("[type=submit]")
    page.wait_for_url(f"{cluster.url}/nodes/compute1/")
    yield page
    ctx.close()
    assert not errors, f"JavaScript errors: {errors}"


def marks(page: Page) -> dict[str, list[str]]:
    """The load check's marks on the plot: action -> the texts of the mem row's markers."""
    return {
        t["name"]: t["text"] for t in page.evaluate(TRACES) if t["role"] == "mark" and t["index"] == "mem"
    }


def test_the_node_page_charts_the_load_with_thresholds_and_marks_live(page: Page, load_cluster):
    cluster, _, _, proc = load_cluster
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.reload()
    expect(page.locator("#live-status")).to_have_attribute("data-mode", "live", timeout=10_000)
    page.evaluate("window.__noReload = 'still here'")
    expect(page.locator("#load-chart .main-svg").first).to_be_visible(timeout=10_000)
    traces = page.evaluate(TRACES)
    lines = {t["name"]: t["y"] for t in traces if t["role"] == "threshold"}
    assert lines == {
        "LoadSchedMem=1300": [1300, 1300],
        "LoadStopMem=1200": [1200, 1200],
        "LoadSchedUt=80": [80, 80],
        "LoadStopUt=90": [90, 90],
    }
    rows = {t["index"] for t in traces if t["role"] == "threshold"}
    assert rows == {"mem", "ut"}  # each line on its own index's row
    mem = next(t["y"] for t in traces if t["role"] == "index" and t["index"] == "mem")
    assert mem[:3] == [4000, 2500, 1800]  # the day's history, oldest first, then the check's
    assert marks(page) == {}
    assert not [u for u in requests if not u.startswith(cluster.url)]  # plotly served locally, no CDN
    drawn = int(page.get_attribute("#load-chart", "data-drawn"))

    ids = [
        int(cluster.cli("sbatch", "--parsable", "--wrap", f"sleep {n}", cwd=proc).stdout) for n in (611, 612)
    ]
    cluster.wait_for("both running", lambda: states(cluster, ids) == ["R", "R"])
    feed(proc, mem_mib=1100)  # below LoadSchedMem and LoadStopMem: drain, stop the later job
    page.wait_for_function(HAS_MARK, arg="stop", timeout=UPDATE_TIMEOUT)
    found = marks(page)
    assert found["drain"] == ["drained: Load: mem=1100<LoadSchedMem=1300"]
    assert found["stop"] == [f"job {ids[1]} stopped: Load: mem=1100<LoadStopMem=1200"]
    stop_y = next(t["y"] for t in page.evaluate(TRACES) if t["role"] == "mark" and t["name"] == "stop")
    assert stop_y == [1100]  # at the figure the check judged
    shapes = page.evaluate("() => document.getElementById('load-chart').layout.shapes.map(s => s.name)")
    assert shapes == ["drain", "stop"]  # a vertical line across the rows at each moment
    assert int(page.get_attribute("#load-chart", "data-drawn")) > drawn  # redrawn, the same element

    # The grid marks the load drain with its reason; the job list the stopped job.
    grid = page.context.new_page()
    grid.goto(f"{cluster.url}/nodes/")
    tile = grid.locator('.tile[data-node="compute1"]')
    expect(tile).to_have_attribute("data-state", "drng")  # draining: its jobs still there
    expect(tile.locator(".tile-reason")).to_have_text("Reason Load: mem=1100<LoadSchedMem=1300")
    grid.goto(f"{cluster.url}/jobs/")
    stopped = grid.locator(f'tr[data-job-id="{ids[1]}"]')
    expect(stopped).to_have_attribute("data-state", "STOPPED")
    expect(stopped.locator(".state-detail")).to_have_text("Load: mem=1100<LoadStopMem=1200")
    expect(grid.locator(f'tr[data-job-id="{ids[0]}"] .state-detail')).to_have_count(0)
    grid.close()

    feed(proc, mem_mib=5000)  # every threshold met: continue, then undrain
    page.wait_for_function(HAS_MARK, arg="undrain", timeout=UPDATE_TIMEOUT)
    found = marks(page)
    assert found["continue"] == [f"job {ids[1]} continued: Load: thresholds met"]
    assert found["undrain"] == ["undrained: thresholds met"]
    assert page.evaluate("window.__noReload") == "still here"
    cluster.cli("scancel", *map(str, ids))
