"""A real cluster (controller + agent subprocesses) and Debian's Chromium driven by Playwright.

One cluster and one browser per session; each test gets a fresh, already logged-in browser
context.  Nothing is downloaded: the browser is /usr/bin/chromium.
"""

from __future__ import annotations

import getpass
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from config.demo import Cluster

ROOT = Path(__file__).resolve().parents[2]
DEMO_CONF = ROOT / "examples" / "demo"
FSCHED = str(Path(sys.executable).parent / "fsched")
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class LiveCluster:
    cluster: Cluster
    username: str
    password: str
    token: str
    workdir: Path

    @property
    def url(self) -> str:
        return self.cluster.url

    def cli(self, *args: str) -> str:
        """Run ``fsched <args>`` against this cluster with the administrator's token."""
        env = {**self.cluster.env, "FSCHED_URL": self.url, "FSCHED_TOKEN": self.token}
        out = subprocess.run(
            [FSCHED, *args],
            check=False,
            env=env,
            cwd=self.workdir,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, f"fsched {' '.join(args)}: {out.stderr}"
        return out.stdout

    def sbatch(self, *args: str) -> int:
        """Submit through the real CLI, as a user would; returns the job id."""
        out = self.cli("sbatch", *args)
        match = re.search(r"Submitted batch job (\d+)", out)
        assert match, out
        return int(match.group(1))


@pytest.fixture(scope="session")
def live_cluster() -> Iterator[LiveCluster]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed")
    state_dir = Path(tempfile.mkdtemp(prefix="fsched-browser-"))
    cli_config = state_dir / "cli.json"
    cluster = Cluster(
        state_dir=state_dir,
        conf_dir=DEMO_CONF,
        port=free_port(),
        quiet=True,
        # Keep the bootstrap from writing the developer's own ~/.config/fsched/cli.json.
        env={"FSCHED_CLI_CONFIG": str(cli_config)},
    )
    # The administrator is named after the Unix user: the agent runs a job as its user's
    # account, so a name with no account here ("admin") would fail every job.
    username = getpass.getuser()
    try:
        out = cluster.setup(username=username)
        match = re.search(r"with password: (\S+)", out)
        assert match, f"no password in the bootstrap output: {out!r}"
        token = json.loads(cli_config.read_text())["token"]
        cluster.start_server()
        cluster.start_agent()
        workdir = state_dir / "work"
        workdir.mkdir()
        yield LiveCluster(cluster, username, match.group(1), token, workdir)
    finally:
        cluster.stop()
        if os.environ.get("FSCHED_KEEP_STATE") != "1":
            shutil.rmtree(state_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="session")
def login_state(browser, live_cluster: LiveCluster) -> dict:
    """Log in once through the console's login form; contexts reuse the session cookie."""
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{live_cluster.url}/nodes/")
    assert page.url.startswith(f"{live_cluster.url}/login/")  # the console requires a login
    page.fill("#id_username", live_cluster.username)
    page.fill("#id_password", live_cluster.password)
    page.click("[type=submit]")
    page.wait_for_url(f"{live_cluster.url}/nodes/")
    state = context.storage_state()
    context.close()
    return state


@pytest.fixture
def context(browser, login_state):
    ctx = browser.new_context(storage_state=login_state, viewport={"width": 1400, "height": 900})
    yield ctx
    ctx.close()


@pytest.fixture
def page(context):
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    assert not errors, f"JavaScript errors: {errors}"


@pytest.fixture(scope="session")
def screenshot_dir() -> Path:
    base = os.environ.get("FSCHED_SCREENSHOT_DIR") or os.environ.get("FSCHED_STATE_DIR")
    path = Path(base) / "screenshots" if base else Path(tempfile.mkdtemp(prefix="fsched-shots-"))
    path.mkdir(parents=True, exist_ok=True)
    return path
