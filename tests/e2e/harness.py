"""End-to-end clusters: a real controller and real agents as `make run` starts them.

``embedded`` runs everywhere; ``distributed`` needs FSCHED_DATABASE_URL and FSCHED_REDIS_URL
(.ci/run starts PostgreSQL and Redis) and adds a Celery worker and beat.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from config.demo import Cluster

ROOT = Path(__file__).resolve().parents[2]
FSCHED = str(Path(sys.executable).parent / "fsched")
DEMO_CONF = ROOT / "examples" / "demo"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class E2ECluster(Cluster):
    """A Cluster with helpers to drive it through the real CLI."""

    celery: list[subprocess.Popen[bytes]]
    celery_log_level = "warning"  # the worker's -l (a test that reads its INFO lines raises it)

    def cli(
        self,
        *args: str,
        check: bool = True,
        input: str | None = None,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(  # noqa: PLW1510 - the exit status is checked below
            [FSCHED, *args],
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            input=input,
            cwd=cwd or self.state_dir,
            timeout=60,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"fsched {' '.join(args)} failed ({result.returncode}): {result.stderr}")
        return result

    def api_rows(self, path: str, params: dict[str, str] | None = None) -> list[dict]:
        """The controller's API objects (``GET path``, every page) through the CLI's own
        client and login: the tests read fsched's records, not a command's Slurm-shaped JSON."""
        code = (
            "import json, sys; from cli.client import Client; "
            "print(json.dumps(Client().get_all(*json.loads(sys.argv[1]))))"
        )
        result = subprocess.run(
            [sys.executable, "-c", code, json.dumps([path, params or {}])],
            env=self.env,
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=60,
            check=False,
        )
        if result.returncode != 0:
            raise AssertionError(f"GET {path} failed ({result.returncode}): {result.stderr}")
        return json.loads(result.stdout)

    def jobs(self, *ids: int) -> dict[int, dict]:
        query = {"state": "all", **({"job_id": ",".join(str(i) for i in ids)} if ids else {})}
        return {j["job_id"]: j for j in self.api_rows("/api/jobs/", query)}

    def nodes(self) -> dict[str, dict]:
        return {n["name"]: n for n in self.api_rows("/api/nodes/")}

    def wait_for(
        self, what: str, predicate: Callable[[], object], timeout: float = 60, interval: float = 0.3
    ) -> object:
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout} s waiting for {what}")
            time.sleep(interval)

    def start_celery(self) -> None:
        celery = str(Path(sys.executable).parent / "celery")
        common = {"env": self.env, "cwd": ROOT, "stdout": self._out("celery"), "stderr": subprocess.STDOUT}
        self.celery = [
            subprocess.Popen(
                [celery, "-A", "config", "worker", "-l", self.celery_log_level, "-c", "2", "-P", "threads"],
                **common,
            ),
            subprocess.Popen(
                [celery, "-A", "config", "beat", "-l", "warning"],  # the schedule: the cycles' rows
                **common,
            ),
        ]

    def stop(self) -> None:
        super().stop()
        for proc in getattr(self, "celery", []):
            self._stop(proc)

    def kill(self, *which: str) -> None:
        """kill -9 of ``"server"`` and/or ``"agent"`` at the same instant, reaped."""
        procs = [p for p in (getattr(self, name) for name in which) if p is not None and p.poll() is None]
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.wait()

    def restart(self, *which: str) -> None:
        """Start again what ``kill`` killed: the controller first (answering), then the agent."""
        if "server" in which and (self.server is None or self.server.poll() is not None):
            self.spawn_server()
            # A restart mid-stream competes with the submitters, the agent and the database
            # recovering: 30 s was not always enough on a loaded 2-core machine.
            self.wait_http(timeout=90)
        if "agent" in which and (self.agent is None or self.agent.poll() is not None):
            self.start_agent()


def all_up(nodes: dict[str, dict]) -> bool:
    """Every node IDLE, but the demo's State=CLOUD nodes, which stay powered down."""
    return all(n["state"] == "IDLE" or "CLOUD" in n["state"] for n in nodes.values())


def _modes() -> list:
    distributed = bool(os.environ.get("FSCHED_DATABASE_URL") and os.environ.get("FSCHED_REDIS_URL"))
    return [
        pytest.param("embedded", marks=pytest.mark.skipif(distributed, reason="distributed run")),
        pytest.param(
            "distributed",
            marks=[
                pytest.mark.distributed,
                pytest.mark.skipif(not distributed, reason="needs FSCHED_DATABASE_URL and FSCHED_REDIS_URL"),
            ],
        ),
    ]


def new_cluster(
    state: Path, conf_dir: Path, *, mode: str = "embedded", env: dict[str, str] | None = None
) -> E2ECluster:
    """A cluster of this machine on a free port, its CLI's credentials in ``state``, not set
    up yet; ``env`` on top (an embedded one uses no PostgreSQL or Redis whatever the
    environment of the tests says)."""
    extra = {"FSCHED_CLI_CONFIG": str(state / "cli.json"), **(env or {})}
    if mode == "embedded":
        extra.update({"FSCHED_DATABASE_URL": "", "FSCHED_REDIS_URL": ""})
    return E2ECluster(
        state_dir=state,
        conf_dir=conf_dir,
        port=free_port(),
        env=extra,
        quiet=True,
        server_args=("--no-cycles", "--workers", "2") if mode == "distributed" else (),
    )


def make_cluster(
    tmp_path_factory: pytest.TempPathFactory,
    mode: str,
    *,
    conf_dir: Path = DEMO_CONF,
    env: dict[str, str] | None = None,
) -> E2ECluster:
    state = tmp_path_factory.mktemp(f"cluster-{mode}")
    intervals = {"FSCHED_SCHED_INTERVAL": "1", "FSCHED_HEALTH_INTERVAL": "1", **(env or {})}
    cluster = new_cluster(state, conf_dir, mode=mode, env=intervals)
    if mode == "distributed":
        cluster.manage("migrate", "--no-input", "-v", "0")
        cluster.manage("flush", "--no-input")
    cluster.setup()
    return cluster


@contextlib.contextmanager
def started(c: E2ECluster, mode: str = "embedded") -> Iterator[E2ECluster]:
    """The controller (with Celery in distributed mode) and the agent started and every node
    up, as ``make run`` leaves them; all stopped afterwards."""
    try:
        c.start_server()
        if mode == "distributed":
            c.start_celery()
        c.start_agent()
        c.wait_for("all demo nodes idle", lambda: all_up(c.nodes()))
        yield c
    finally:
        c.stop()


@pytest.fixture(scope="module", params=_modes())
def cluster(request, tmp_path_factory) -> Iterator[E2ECluster]:
    with started(make_cluster(tmp_path_factory, request.param), request.param) as c:
        yield c
