"""A controller that does not serve the URL's host name: the CLI says so and names the
setting, instead of a bare "HTTP 400 Bad Request" (run against a real `fsched server`)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli.client import ApiError, Client

ROOT = Path(__file__).resolve().parents[2]
FSCHED = str(Path(sys.executable).parent / "fsched")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_refused_host_name_is_named_with_the_setting(tmp_path):
    port = free_port()
    env = {
        **os.environ,
        "FSCHED_STATE_DIR": str(tmp_path / "state"),
        "FSCHED_DATABASE_URL": "",
        "FSCHED_REDIS_URL": "",
        "FSCHED_ALLOWED_HOSTS": "ctl.example.org",
        "FSCHED_SECRET_KEY": "s" * 50,
        "FSCHED_AGENT_KEY": "a" * 32,
    }
    proc = subprocess.Popen(
        [FSCHED, "server", "--no-load-config", "--no-cycles", "--port", str(port)],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.2)
        url = f"http://127.0.0.1:{port}"
        with pytest.raises(ApiError) as caught:
            Client(url=url, token="x").get("/api/whoami/")
    finally:
        proc.terminate()
        proc.wait(15)
    assert caught.value.status == 400
    assert caught.value.message == (
        f"HTTP 400 Bad Request from {url}: the controller does not serve the host name "
        "'127.0.0.1' (add it to its FSCHED_ALLOWED_HOSTS)"
    )
