"""Actions from the console pages in Chromium (#15 point 4): a job held and released, a node
drained and resumed, each confirmed in the browser's dialog, with the message shown and the
page updated.  A dismissed dialog sends nothing."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

UPDATE_TIMEOUT = 20_000


def test_hold_and_release_a_job_from_its_page(page: Page, live_cluster, screenshot_dir):
    # --begin keeps it pending for the whole test, whatever the scheduler does.
    job_id = live_cluster.sbatch("--wrap=true", "-J", "to-hold", "-p", "debug", "--begin=now+3600")
    page.goto(f"{live_cluster.url}/jobs/{job_id}/")
    state = page.locator(f'#job-body .jstate[data-job-id="{job_id}"]')
    expect(state).to_have_attribute("data-state", "PENDING", timeout=UPDATE_TIMEOUT)

    # Dismissed: nothing is posted, nothing changes.
    page.once("dialog", lambda d: d.dismiss())
    page.click('#job-actions button[data-action="hold"]')
    page.wait_for_timeout(500)
    expect(page.locator(".action-message")).to_have_count(0)

    page.fill("#a-hold-reason", "waiting for input data")
    questions: list[str] = []

    def accept(dialog) -> None:
        questions.append(dialog.message)
        dialog.accept()

    page.once("dialog", accept)
    page.click('#job-actions button[data-action="hold"]')
    expect(page.locator(".action-message")).to_have_text(f"Job {job_id} held.", timeout=UPDATE_TIMEOUT)
    assert questions == [f"Hold job {job_id}?"]
    # An administrator's hold, as an operator's scontrol hold is, whoever owns the job.
    expect(page.locator("#job-body .callout")).to_contain_text("JobHeldAdmin")
    page.screenshot(path=str(screenshot_dir / "job-actions.png"))

    page.once("dialog", lambda d: d.accept())
    page.click('#job-actions button[data-action="release"]')
    expect(page.locator(".action-message")).to_have_text(f"Job {job_id} released.", timeout=UPDATE_TIMEOUT)
    expect(page.locator("#job-body .callout")).not_to_contain_text("JobHeldAdmin")


def test_drain_and_resume_a_node_from_its_page(page: Page, live_cluster, screenshot_dir):
    page.goto(f"{live_cluster.url}/nodes/node32/")
    page.fill("#a-drain-reason", "fan noise")
    page.once("dialog", lambda d: d.accept())
    page.click('#node-actions button[data-action="drain"]')
    expect(page.locator(".action-message")).to_have_text("Node node32 drained.", timeout=UPDATE_TIMEOUT)
    expect(page.locator("#node-body table.kv")).to_contain_text("fan noise")
    expect(page.locator("#node-body table.kv")).to_contain_text("DRAIN")
    page.screenshot(path=str(screenshot_dir / "node-actions.png"))

    page.once("dialog", lambda d: d.accept())
    page.click('#node-actions button[data-action="resume"]')
    expect(page.locator(".action-message")).to_have_text("Node node32 resumed.", timeout=UPDATE_TIMEOUT)
    expect(page.locator("#node-body table.kv")).not_to_contain_text("fan noise")
