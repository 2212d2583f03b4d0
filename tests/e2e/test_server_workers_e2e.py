"""``fsched server --workers 2`` killed outright (SIGKILL of its supervisor): its workers go
with it, the port is free, and a server started again answers.

Before config/parent_death.py the workers lived on, unsupervised, serving the old
process's port: the distributed crash test's "controller killed" never stopped the
processes that answer requests and hold the agents' websockets.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest

from tests.e2e.harness import E2ECluster, _modes, make_cluster

pytestmark = [pytest.mark.e2e, pytest.mark.distributed]


@pytest.fixture(params=[p for p in _modes() if p.values == ("distributed",)])
def cluster(request, tmp_path_factory) -> Iterator[E2ECluster]:
    c = make_cluster(tmp_path_factory, request.param)
    try:
        yield c
    finally:
        c.stop()


def _workers(supervisor: int) -> list[int]:
    """The supervisor's worker processes (not multiprocessing's resource tracker)."""
    command = ["pgrep", "-P", str(supervisor), "-f", "spawn_main"]
    found = subprocess.run(command, check=False, capture_output=True)
    return [int(pid) for pid in found.stdout.split()]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie not yet reaped by init is gone for this test's purpose.
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def test_the_workers_go_with_a_killed_supervisor(cluster: E2ECluster):
    cluster.start_server()
    assert cluster.server is not None
    workers = _workers(cluster.server.pid)
    assert len(workers) == 2
    cluster.kill("server")
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in workers) or not _port_free(cluster.port):
        assert time.monotonic() < deadline, f"workers {workers} outlived their supervisor"
        time.sleep(0.1)
    cluster.start_server()  # binds the port again and answers
    assert cluster.server.poll() is None
    assert all(pid not in _workers(cluster.server.pid) for pid in workers)
