"""The console's job page in Chromium (#14 point 5): "Why is this job pending?" names the
node the load check drained, with the figures and what undrains it, under the reason code
the scheduler gave.  A real controller and a real agent reading a fed ``--proc-root``
(the specification's partitions.conf); the browser logs in through the login form."""

from __future__ import annotations

import getpass
import re
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.e2e.harness import new_cluster
from tests.e2e.test_load_e2e import PARTITIONS, SLURM_CONF, feed

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

CHROMIUM = "/usr/bin/chromium"


def test_the_job_page_names_the_node_drained_by_load(browser: Browser, tmp_path_factory):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed")
    conf = tmp_path_factory.mktemp("load-page-conf")
    (conf / "slurm.conf").write_text(SLURM_CONF)
    (conf / "partitions.conf").write_text(PARTITIONS)
    proc = tmp_path_factory.mktemp("load-page-proc")
    feed(proc, mem_mib=1250)  # under LoadSchedMem=1300, over LoadStopMem=1200: a drain alone
    state = tmp_path_factory.mktemp("load-page-state")
    cluster = new_cluster(
        state,
        conf,
        env={
            "FSCHED_SCHED_INTERVAL": "1",
            "FSCHED_LOAD_INTERVAL": "1",
        },
    )
    me = getpass.getuser()
    try:
        match = re.search(r"with password: (\S+)", cluster.setup(username=me))
        assert match, "no password in the bootstrap output"
        cluster.start_server()
        cluster.start_agent("compute1", "--proc-root", str(proc))
        cluster.wait_for(
            "the load drain", lambda: "DRAIN" in cluster.nodes()["compute1"]["state"], timeout=60
        )
        job = int(cluster.cli("sbatch", "--parsable", "--wrap", "sleep 300", cwd=state).stdout)
        reason = cluster.wait_for(
            "a reason given", lambda: cluster.jobs(job)[job]["reason"] not in ("", "None")
        )
        reason = cluster.jobs(job)[job]["reason"]

        ctx = browser.new_context(viewport={"width": 1400, "height": 900})
        page = ctx.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(f"{cluster.url}/jobs/{job}/")
        assert "/login/" in page.url  # the console requires a login
        page.fill("#id_username", me)
        page.fill("#id_password", match.group(1))
        page.click("[type=submit]")
        page.wait_for_url(f"{cluster.url}/jobs/{job}/")
        row = page.locator("#job-why tbody tr", has_text="drained by the load check")
        expect(row).to_have_count(1)
        # The scheduler's own reason code, not one made up for the load.
        expect(row).to_have_attribute("data-reason", reason)
        expect(row).to_contain_text(
            "compute1: drained by the load check: mem=1250 < LoadSchedMem=1300 (partition partition-U7KH5)"
        )
        expect(row).to_contain_text("node load")
        expect(row).to_contain_text("It is undrained when every LoadSched threshold is satisfied again")
        ctx.close()
        assert not errors, f"JavaScript errors: {errors}"
        cluster.cli("scancel", str(job))
    finally:
        cluster.stop()
