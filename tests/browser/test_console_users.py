"""A regular user in Chromium (#15 point 1): logs in through the console's login page, sees
their jobs, reads their own script, cancels a job with the page's button, and cannot see
another user's job or script with slurm.conf's PrivateData=jobs.

The user is made with ``manage.py fsched_user add`` and submits through the real ``fsched
sbatch`` with the token it printed; the administrator's job is submitted the same way.
Jobs are held (``-H``): no agent is needed for what is tested here.
"""

from __future__ import annotations

import getpass
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.e2e.harness import DEMO_CONF, E2ECluster, new_cluster

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

CHROMIUM = "/usr/bin/chromium"
ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "carol-long-passphrase-31"
TIMEOUT = 20_000  # ms


@pytest.fixture(scope="module")
def private_cluster(tmp_path_factory) -> Iterator[tuple[E2ECluster, str, int, list[int]]]:
    """(cluster, carol's token, the administrator's job, carol's two jobs)."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed")
    conf = tmp_path_factory.mktemp("users-conf")
    shutil.copytree(DEMO_CONF, conf, dirs_exist_ok=True)
    slurm_conf = conf / "slurm.conf"
    slurm_conf.write_text(slurm_conf.read_text() + "PrivateData=jobs\n")
    state = tmp_path_factory.mktemp("users-state")
    cluster = new_cluster(state, conf)
    try:
        cluster.setup(username=getpass.getuser())
        made = subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), "fsched_user", "add", "carol", "--password-stdin"],
            env=cluster.env,
            input=PASSWORD + "\n",
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=True,
        )
        token = made.stdout.strip()
        cluster.start_server()
        (state / "admin.sh").write_text("#!/bin/sh\n# admin-secret-script-4242\ntrue\n")
        (state / "carol.sh").write_text("#!/bin/sh\n# carol-own-script-1717\ntrue\n")
        admin_job = int(cluster.cli("sbatch", "--parsable", "-H", "-J", "admins", "admin.sh").stdout)
        as_carol = {"FSCHED_TOKEN": token}
        carol_jobs = [
            int(cluster.cli("sbatch", "--parsable", "-H", "-J", name, "carol.sh", env=as_carol).stdout)
            for name in ("carol-a", "carol-b")
        ]
        yield cluster, token, admin_job, carol_jobs
    finally:
        cluster.stop()


def test_a_user_logs_in_sees_their_jobs_cancels_one_and_not_another_users_script(
    browser: Browser, private_cluster
):
    cluster, _token, admin_job, (first, second) = private_cluster
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        # The console's own login page, not the admin's.
        page.goto(f"{cluster.url}/jobs/?state=all")
        assert page.url.startswith(f"{cluster.url}/login/")
        expect(page.get_by_role("heading", name="Log in to the console")).to_be_visible()
        page.fill("#id_username", "carol")
        page.fill("#id_password", PASSWORD)
        page.click("[type=submit]")
        page.wait_for_url(f"{cluster.url}/jobs/?state=all")
        expect(page.locator(".session .user")).to_have_text("carol")

        # Her two jobs, not the administrator's (PrivateData=jobs); no Admin link.
        shown = page.locator("[data-job-id]")
        expect(shown.first).to_be_visible(timeout=TIMEOUT)
        ids = {int(i) for i in shown.evaluate_all("els => els.map(e => e.dataset.jobId)")}
        assert ids == {first, second}
        expect(page.get_by_role("link", name="Admin")).to_have_count(0)

        # Her job page shows her script; she cancels it there.
        page.goto(f"{cluster.url}/jobs/{first}/")
        expect(page.locator("#job-script")).to_contain_text("carol-own-script-1717")
        page.once("dialog", lambda dialog: dialog.accept())  # "Cancel job N?"
        page.click('#job-actions button[data-action="cancel"]')
        expect(page.locator("#job-actions")).to_contain_text(f"Job {first} cancelled.", timeout=TIMEOUT)
        expect(page.locator(f'h1 [data-job-id="{first}"]')).to_have_attribute("data-state", "CANCELLED")
        cancel = page.locator('#job-actions button[data-action="cancel"]')
        expect(cancel).to_have_count(0)  # nothing left to cancel
        # The cancellation is in the job's timeline, with who did it.
        expect(page.locator(".timeline")).to_contain_text("by carol")
        assert cluster.jobs(second)[second]["state"] == "PENDING"

        # The administrator's job: not found, its script nowhere.
        answer = page.goto(f"{cluster.url}/jobs/{admin_job}/")
        assert answer is not None and answer.status == 404
        assert "admin-secret-script-4242" not in page.content()
        body = page.request.get(f"{cluster.url}/jobs/{admin_job}/_body")
        assert body.status == 404 and "admin-secret-script-4242" not in body.text()
        assert re.search(r"\bcarol\b", page.request.get(f"{cluster.url}/jobs/{second}/").text())
    finally:
        ctx.close()
    assert not errors, f"JavaScript errors: {errors}"
