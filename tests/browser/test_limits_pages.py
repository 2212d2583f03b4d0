"""The limits pages in Chromium against a live cluster whose slurm.conf enforces limits
(AccountingStorageEnforce=limits): the account tree shows each association's limits and
the usage against them, the effective-limit calculator shows each limit with the level
that sets it, and the pending explainer names the limit holding a job.

Accounts and limits are set up through the real ``fsched sacctmgr``, jobs through the real
``fsched sbatch``; the browser logs in through the admin login form as a user would.
"""

from __future__ import annotations

import getpass
import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.harness import DEMO_CONF, E2ECluster, new_cluster

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

CHROMIUM = "/usr/bin/chromium"
UPDATE_TIMEOUT = 20_000  # ms


@pytest.fixture(scope="module")
def limits_cluster(tmp_path_factory) -> Iterator[tuple[E2ECluster, str, str]]:
    """The demo cluster with limits enforced: (cluster, admin name, password)."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed")
    conf = tmp_path_factory.mktemp("limits-pages-conf")
    shutil.copytree(DEMO_CONF, conf, dirs_exist_ok=True)
    slurm_conf = conf / "slurm.conf"
    slurm_conf.write_text(
        slurm_conf.read_text().replace(
            "PriorityType=priority/multifactor",
            "PriorityType=priority/multifactor\nAccountingStorageEnforce=limits",
        )
    )
    state = tmp_path_factory.mktemp("limits-pages-state")
    cluster = new_cluster(
        state,
        conf,
        env={
            "FSCHED_SCHED_INTERVAL": "1",
        },
    )
    # Named after the Unix user: the agent runs a job as its user's account.
    username = getpass.getuser()
    try:
        out = cluster.setup(username=username)
        match = re.search(r"with password: (\S+)", out)
        assert match, f"no password in the bootstrap output: {out!r}"
        cluster.start_server()
        cluster.start_agent()
        assert json.loads((state / "cli.json").read_text())["username"] == username
        yield cluster, username, match.group(1)
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def held_job(limits_cluster) -> tuple[int, int]:
    """physics (GrpTRES=cpu=64, GrpJobs=10) > theory > the admin user (MaxJobs=1); QOS
    normal MaxWall=60.  One job runs, the next is held by the user's MaxJobs."""
    cluster, me, _ = limits_cluster
    cli = cluster.cli
    cli("sacctmgr", "-i", "add", "account", "physics", "Description=Physics")
    cli("sacctmgr", "-i", "add", "account", "theory", "Parent=physics")
    cli("sacctmgr", "-i", "add", "user", me, "Account=theory")
    cli("sacctmgr", "-i", "modify", "account", "name=physics", "set", "GrpTRES=cpu=64", "GrpJobs=10")
    cli("sacctmgr", "-i", "modify", "user", f"name={me}", "set", "MaxJobs=1")
    cli("sacctmgr", "-i", "modify", "qos", "name=normal", "set", "MaxWall=60")
    running = int(cli("sbatch", "--parsable", "-n", "4", "--wrap", "sleep 300").stdout)
    cluster.wait_for("first job running", lambda: cluster.jobs(running)[running]["state"] == "RUNNING")
    held = int(cli("sbatch", "--parsable", "-J", "held-by-limit", "--wrap", "true").stdout)
    cluster.wait_for(
        "second job held by MaxJobs",
        lambda: cluster.jobs(held)[held]["reason"] == "AssocMaxJobsLimit",
    )
    return running, held


@pytest.fixture
def page(browser: Browser, limits_cluster) -> Iterator[Page]:
    # ``browser`` is the suite's session Chromium (tests/browser/conftest.py): one
    # Playwright instance per process, whatever order the browser tests run in.
    cluster, me, password = limits_cluster
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{cluster.url}/limits/")
    assert page.url.startswith(f"{cluster.url}/login/")  # the console requires a login
    page.fill("#id_username", me)
    page.fill("#id_password", password)
    page.click("[type=submit]")
    page.wait_for_url(f"{cluster.url}/limits/")
    yield page
    ctx.close()
    assert not errors, f"JavaScript errors: {errors}"


def test_account_tree_shows_limits_and_usage(page: Page, limits_cluster, held_job):
    _, me, _ = limits_cluster
    expect(page.locator("nav.mainnav a[aria-current=page]")).to_have_text("Limits")
    expect(page.locator(".page-head")).to_contain_text("AccountingStorageEnforce=")
    physics = page.locator('#limits-tree tr[data-assoc="physics"]')
    # The running job's 4 CPUs and 1 job are counted against the account's Grp limits.
    expect(physics).to_contain_text("GrpTRES=cpu=64 — used 4 (6%)", timeout=UPDATE_TIMEOUT)
    expect(physics).to_contain_text("GrpJobs=10 — used 1 (10%)")
    expect(page.locator(f'#limits-tree tr[data-assoc="theory/{me}"]')).to_contain_text("MaxJobs=1")
    # theory is indented under physics, the user under theory.
    indent = page.locator('#limits-tree tr[data-assoc="theory"] td').first.evaluate(
        "td => parseFloat(getComputedStyle(td).paddingLeft)"
    )
    parent = physics.locator("td").first.evaluate("td => parseFloat(getComputedStyle(td).paddingLeft)")
    assert indent > parent
    _, held = held_job
    expect(page.locator('table[aria-label="Held jobs"]')).to_contain_text("AssocMaxJobsLimit")
    page.locator(f'table[aria-label="Held jobs"] a[href$="/limits/jobs/{held}/"]').click()
    expect(page).to_have_url(re.compile(rf"/limits/jobs/{held}/$"))


def test_calculator_shows_each_limit_with_its_level(page: Page, limits_cluster, held_job):
    _, me, _ = limits_cluster
    page.locator(".page-head a", has_text="Effective-limit calculator").click()
    expect(page.locator("h1")).to_have_text("Effective limits")
    page.select_option("#c-user", me)
    page.select_option("#c-account", "theory")
    page.select_option("#c-partition", "batch")
    page.select_option("#c-qos", "normal")
    page.click("form.filters button[type=submit]")
    expect(page).to_have_url(re.compile(r"user=.*&account=theory&partition=batch&qos=normal"))
    rows = page.locator("#effective tbody tr")
    grp = rows.filter(has_text="GrpTRES=cpu=64")
    expect(grp).to_contain_text("Account")
    expect(grp).to_contain_text("account association physics")
    expect(grp).to_contain_text("AssocGrpCpuLimit")
    expect(grp).to_contain_text("4 (6%)")
    max_jobs = rows.filter(has_text="MaxJobs=1")
    expect(max_jobs).to_contain_text("User")
    expect(max_jobs).to_contain_text(f"association theory/{me}")
    expect(max_jobs).to_contain_text("AssocMaxJobsLimit")
    wall = rows.filter(has_text="MaxWall")
    expect(wall).to_contain_text("QOS normal")
    expect(wall).to_contain_text("QOSMaxWallDurationPerJobLimit")


def test_pending_explainer_names_the_limit_holding_the_job(page: Page, limits_cluster, held_job):
    cluster, me, _ = limits_cluster
    _, held = held_job
    page.goto(f"{cluster.url}/limits/jobs/{held}/")
    expect(page.locator("h1")).to_contain_text(f"Why is job {held} pending?")
    block = page.locator("#blocks tbody tr").first
    expect(block).to_contain_text("AssocMaxJobsLimit")
    expect(block).to_contain_text("MaxJobs=1")
    expect(block).to_contain_text(f"User association theory/{me}")
    expect(block).to_contain_text("Released when running jobs")
    # The console's own job page says the same and links here.
    page.goto(f"{cluster.url}/jobs/{held}/")
    why = page.locator("#job-why")
    expect(why).to_contain_text("AssocMaxJobsLimit")
    expect(why).to_contain_text(f"association theory/{me}")
    why.locator("a", has_text="Why is this job pending?").click()
    expect(page).to_have_url(re.compile(rf"/limits/jobs/{held}/$"))


def _login(browser: Browser, limits_cluster, viewport: dict) -> tuple:
    cluster, me, password = limits_cluster
    ctx = browser.new_context(viewport=viewport)
    page = ctx.new_page()
    page.goto(f"{cluster.url}/limits/")
    page.fill("#id_username", me)
    page.fill("#id_password", password)
    page.click("[type=submit]")
    page.wait_for_url(f"{cluster.url}/limits/")
    return ctx, page


@pytest.mark.parametrize("viewport", [{"width": 1366, "height": 768}, {"width": 390, "height": 844}])
def test_limits_page_fits_laptops_and_phones(browser: Browser, limits_cluster, held_job, viewport):
    cluster, _, _ = limits_cluster
    # A long limit string, of the kind that widened the page.
    cluster.cli("sacctmgr", "-i", "modify", "account", "name=theory", "set", "GrpTRES=cpu=64,mem=100G,node=8")
    ctx, page = _login(browser, limits_cluster, viewport)
    try:
        expect(page.locator('#limits-tree tr[data-assoc="theory"]')).to_contain_text("GrpTRES=mem=100G")
        for url in ("/limits/", f"/limits/jobs/{held_job[1]}/"):
            page.goto(f"{cluster.url}{url}")
            width = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
            assert width[0] <= width[1], (url, width)
    finally:
        ctx.close()


def test_limits_page_shows_tres_with_units_qos_limits_and_array_tasks(page: Page, limits_cluster, held_job):
    cluster, _, _ = limits_cluster
    cli = cluster.cli
    cli("sacctmgr", "-i", "modify", "qos", "name=normal", "set", "MaxTRESPU=mem=64G", "GrpJobs=50")
    array = int(cli("sbatch", "--parsable", "--array=1-3", "--wrap", "true").stdout.split(";")[0])
    cluster.wait_for(
        "the array's tasks held by MaxJobs",
        lambda: cluster.jobs(array)[array]["reason"] == "AssocMaxJobsLimit",
    )
    page.goto(f"{cluster.url}/limits/")
    normal = page.locator('#qos-limits tr[data-qos="normal"]')
    expect(normal).to_contain_text("MaxWall=01:00:00")
    expect(normal).to_contain_text("MaxTRESPU=mem=64G")
    expect(normal).to_contain_text("GrpJobs=50")
    # Decayed usage per TRES, with units; never the raw GrpTRESRaw string.
    tree = page.locator('table[aria-label="Account tree"]')
    expect(tree.locator("thead")).to_contain_text("TRES-minutes")
    for cell in tree.locator("td.tres-usage").all_inner_texts():
        for line in cell.splitlines():
            assert line == "none" or re.fullmatch(
                r"[\w/:.-]+: \d+(\.\d+)?\w? [\w-]+-min|mem: \S+-min", line
            ), line
    assert not re.search(r"cpu=\d+,mem=\d+", tree.inner_text())
    held = page.locator('table[aria-label="Held jobs"]')
    expect(held.locator("tbody td").filter(has_text=re.compile(rf"^{array}_1$"))).to_have_count(1)
    expect(held).to_contain_text(f"{array}_2")
    page.goto(f"{cluster.url}/limits/jobs/{array}/")
    expect(page.locator("h1")).to_contain_text(f"Why is job {array}_1 pending?")
    cli("scancel", str(array))
