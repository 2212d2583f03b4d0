"""Changing the scheduler's interval in the admin changes how often passes run, without a
restart, in both modes (issue 15, acceptance): a real `fsched server` (embedded: its cycle
thread; distributed: with a Celery worker and beat on the DatabaseScheduler), a staff
user editing the row through the admin's change form, the passes counted by sdiag."""

from __future__ import annotations

import http.cookiejar
import re
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator

import pytest

from tests.e2e.harness import E2ECluster, _modes, make_cluster

PASSWORD = "cycles-test-Passw0rd-7"


@pytest.fixture(scope="module", params=_modes())
def cluster(request, tmp_path_factory) -> Iterator[E2ECluster]:
    c = make_cluster(tmp_path_factory, request.param)
    c.env["DJANGO_SUPERUSER_PASSWORD"] = PASSWORD
    c.manage("createsuperuser", "--no-input", "--username", "cycles", "--email", "cycles@example.org")
    try:
        c.start_server()
        if request.param == "distributed":
            c.start_celery()
        yield c
    finally:
        c.stop()


class Admin:
    """A staff member's browser session on the admin, as a form would post."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )
        self.submit("/admin/login/", {"username": "cycles", "password": PASSWORD, "next": "/admin/"})

    def get(self, path: str) -> str:
        with self.opener.open(self.url + path, timeout=30) as response:
            return response.read().decode()

    def submit(self, path: str, fields: dict[str, str]) -> str:
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', self.get(path)).group(1)
        data = urllib.parse.urlencode({"csrfmiddlewaretoken": token, **fields}).encode()
        request = urllib.request.Request(self.url + path, data=data, headers={"Referer": self.url + path})  # noqa: S310
        with self.opener.open(request, timeout=30) as response:
            return response.read().decode()

    def set_interval(self, cycle: str, seconds: str) -> None:
        listing = self.get("/admin/cycles/cyclestatus/")
        pk = re.search(rf'href="/admin/cycles/cyclestatus/(\d+)/change/[^"]*">{cycle}</a>', listing).group(1)
        page = self.submit(f"/admin/cycles/cyclestatus/{pk}/change/", {"interval": seconds, "enabled": "on"})
        assert "errorlist" not in page, page[:3000]


def passes(cluster: E2ECluster) -> int:
    """sdiag's main scheduler "Total cycles"."""
    out = cluster.cli("sdiag").stdout
    return int(re.search(r"Main schedule statistics.*?Total cycles:\s*(\d+)", out, re.DOTALL).group(1))


def passes_within(cluster: E2ECluster, seconds: float) -> int:
    before = passes(cluster)
    time.sleep(seconds)
    return passes(cluster) - before


def test_the_scheduler_interval_edited_in_the_admin_is_in_force_without_a_restart(cluster):
    admin = Admin(cluster.url)
    # Passes at the start's interval (1 s): the cycle thread, or beat and a worker, are up.
    start = passes(cluster)
    cluster.wait_for("periodic passes", lambda: passes(cluster) >= start + 2, timeout=120)
    admin.set_interval("schedule", "3600")
    # In force within a second (the embedded thread) or five (beat's DatabaseScheduler).
    time.sleep(7)
    slow = passes_within(cluster, 4)

    admin.set_interval("schedule", "0.5")
    time.sleep(7)
    fast = passes_within(cluster, 4)

    assert "admin" in admin.get("/admin/cycles/cyclestatus/")  # where the value comes from
    assert slow <= 1  # an hour apart (a pass an event asked for at most)
    assert fast >= 4  # every 0.5 s: about eight, loosely
