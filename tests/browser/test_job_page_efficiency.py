"""The job page in Chromium against a live cluster (controller and real agent): while the
job runs, its Usage panel fills in from the agent's reports without a reload; once it ends,
its Efficiency panel shows seff's figures (the same words as ``fsched seff``), with bars.
A job name with HTML in it is shown as text."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.test_console_browser import assert_not_reloaded, open_live

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

TIMEOUT = 30_000  # ms: the agent reports every 5 s; the job runs about 8 s
NAME = '<img src=x onerror="window.__xss=1"><b>eff</b>'
# About 40 MB held and one core kept busy for 8 seconds, then the job ends.
WORK = (
    "python3 -c 'import time; b = bytearray(40 * 1024 * 1024); t = time.time()\n"
    "while time.time() - t < 8: b[0] = 1'"
)


def test_usage_while_running_then_efficiency(page: Page, live_cluster):
    job_id = live_cluster.sbatch("-J", NAME, "--mem=200", "-p", "debug", "--wrap", WORK)
    open_live(page, f"{live_cluster.url}/jobs/{job_id}/")

    # The name is text, in the heading, and nothing of it became an element.
    expect(page.locator("h1 .jobname-head")).to_have_text(NAME)
    assert page.locator("#job-body img, #job-body h1 b").count() == 0

    batch = page.locator(f'#job-usage tr[data-step="{job_id}.batch"]')
    expect(batch).to_be_visible(timeout=TIMEOUT)
    expect(batch.locator('td[data-field="NTasks"]')).to_have_text("1")
    expect(batch.locator('td[data-field="MaxRSS"]')).to_have_text(
        re.compile(r"^\d+(\.\d+)?[KMG]$"), timeout=TIMEOUT
    )
    expect(batch.locator('td[data-field="AveCPU"]')).to_have_text(re.compile(r"^\d\d:\d\d:\d\d$"))
    assert_not_reloaded(page)

    expect(page.locator(f'h1 [data-job-id="{job_id}"]')).to_have_attribute(
        "data-state", "COMPLETED", timeout=TIMEOUT
    )
    panel = page.locator("#job-efficiency")
    expect(panel).to_be_visible(timeout=TIMEOUT)
    expect(page.locator("#job-usage tr")).to_have_count(0)  # no step runs any longer
    assert_not_reloaded(page)

    seff = dict(line.split(": ", 1) for line in live_cluster.cli("seff", str(job_id)).splitlines())
    expect(panel.locator("#eff-cpu")).to_have_text(seff["CPU Efficiency"])
    expect(panel.locator("#eff-mem")).to_have_text(seff["Memory Efficiency"])
    expect(panel.locator("#eff-cpu-used")).to_have_text(seff["CPU Utilized"])
    expect(panel.locator("#eff-mem-used")).to_have_text(seff["Memory Utilized"])
    cpu = float(seff["CPU Efficiency"].split("%")[0])
    assert cpu > 20  # the job kept its core busy most of its run
    assert float(panel.locator("#eff-cpu-bar").get_attribute("value") or "") == cpu
    mem = float(seff["Memory Efficiency"].split("%")[0])
    assert 10 < mem < 100  # about 40 MB (and Python) of the 200 MB asked
    assert float(panel.locator("#eff-mem-bar").get_attribute("value") or "") == mem
    assert page.evaluate("window.__xss") is None
