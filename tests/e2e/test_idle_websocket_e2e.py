"""An idle websocket outlives Redis's read timeout in distributed mode.

channels_redis waits for a consumer's messages with a 5 s blocking pop; redis-py 8 read with
a 5 s timeout by default, so every websocket left idle that long failed its wait ("Timeout
reading from ...") and was closed: the agent reconnected over and over and the console lost
its pushes. Settings give the layer's connections FSCHED_REDIS_SOCKET_TIMEOUT (30 s); the
test shortens it to 7 s, still above the pop, and stays idle for several of them. With the
old behaviour, ``FSCHED_REDIS_SOCKET_TIMEOUT=5 pytest -m distributed <this file>`` fails.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from tests.e2e.harness import E2ECluster, _modes, make_cluster, started

pytestmark = [pytest.mark.e2e, pytest.mark.distributed]

# Long enough to outwait channels_redis's pop; an environment's value is taken so that the
# old timeout can be shown failing.
SOCKET_TIMEOUT = os.environ.get("FSCHED_REDIS_SOCKET_TIMEOUT", "7")
IDLE_SECONDS = 20


@pytest.fixture(scope="module", params=[p for p in _modes() if p.values == ("distributed",)])
def cluster(request, tmp_path_factory) -> Iterator[E2ECluster]:
    env = {"FSCHED_REDIS_SOCKET_TIMEOUT": SOCKET_TIMEOUT}
    with started(make_cluster(tmp_path_factory, request.param, env=env), request.param) as c:
        yield c


def session_cookie(cluster: E2ECluster) -> str:
    """A logged-in session of a user made for the test, as the login form leaves one."""
    code = (
        "from django.contrib.auth import get_user_model; from django.test import Client; "
        "user, _ = get_user_model().objects.get_or_create(username='idle-watcher'); "
        "client = Client(); client.force_login(user); print(client.cookies['sessionid'].value)"
    )
    return cluster.manage("shell", "-c", code).strip().splitlines()[-1]


def console_socket(cluster: E2ECluster) -> ClientConnection:
    return connect(
        f"ws://127.0.0.1:{cluster.port}/ws/console/",
        origin=cluster.url,
        additional_headers={"Cookie": f"sessionid={session_cookie(cluster)}"},
        open_timeout=10,
    )


def log(cluster: E2ECluster, name: str) -> str:
    return (cluster.state_dir / f"{name}.log").read_text(errors="replace")


def jobs_push(console: ClientConnection, within: float) -> dict | None:
    deadline = time.monotonic() + within
    while (left := deadline - time.monotonic()) > 0:
        try:
            message = json.loads(console.recv(timeout=left))
        except TimeoutError:
            return None
        if message.get("type") == "changed" and "jobs" in message.get("topics", []):
            return message
    return None


def test_idle_agent_and_console_sockets_stay_connected(cluster):
    problems = []
    with console_socket(cluster) as console:
        # Listening, not sleeping: a console closed while idle shows here at once. Nothing is
        # sent to either socket meanwhile (the nodes came up before the console connected).
        told = []
        idle_until = time.monotonic() + IDLE_SECONDS
        try:
            while (left := idle_until - time.monotonic()) > 0:
                told.append(console.recv(timeout=left))
        except TimeoutError:
            pass
        except ConnectionClosed as exc:
            problems.append(f"the console was closed while idle: {exc!r} (told before: {told})")

        agent_log = log(cluster, "agent")
        registrations = agent_log.count("registered:")
        lost = [line for line in agent_log.splitlines() if "unreachable" in line or "reconnecting" in line]
        if registrations != 1 or lost:
            problems.append(f"the agent registered {registrations} times, reconnecting:\n" + "\n".join(lost))
        job_id = int(cluster.cli("sbatch", "--parsable", "--wrap", "true").stdout.split(";")[0])
        try:
            if jobs_push(console, within=10) is None:
                problems.append(f"the idle console got no push for job {job_id} (told while idle: {told})")
        except ConnectionClosed as exc:
            problems.append(f"the console had no push for job {job_id}, its socket closed: {exc!r}")
    timeouts = log(cluster, "server").count("Timeout reading")
    if timeouts:
        problems.append(f"the server log has {timeouts} 'Timeout reading' error(s)")
    assert not problems, "\n".join(problems)
