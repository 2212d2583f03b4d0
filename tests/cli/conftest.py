"""Fixtures for the CLI tests: API-shaped objects (docs/api.md) and a canned API server.

The canned server is a real ``http.server`` on a loopback port answering JSON
from a route table; it checks the CLI's HTTP client and commands end to end
without the controller (which has its own tests).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


@pytest.fixture(autouse=True)
def _utc_and_isolated(monkeypatch, tmp_path):
    """Times print in UTC; no real credentials file or environment leaks in."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    monkeypatch.setenv("FSCHED_CLI_CONFIG", str(tmp_path / "cli.json"))
    for name in ("FSCHED_URL", "FSCHED_TOKEN", "SBATCH_PARTITION", "SBATCH_ACCOUNT", "SBATCH_TIMELIMIT"):
        monkeypatch.delenv(name, raising=False)
    yield
    monkeypatch.undo()
    time.tzset()


def make_job(**overrides) -> dict:
    job = {
        "job_id": 12,
        "array_job_id": None,
        "array_task_id": None,
        "name": "wrap",
        "user": "alice",
        "account": "",
        "qos": "normal",
        "partition": "debug",
        "state": "RUNNING",
        "state_compact": "R",
        "reason": "None",
        "reason_detail": "",
        "priority": 1,
        "min_nodes": 1,
        "max_nodes": 1,
        "num_tasks": 1,
        "cpus_per_task": 1,
        "num_cpus": 1,
        "mem_per_node": 0,
        "time_limit": 60,
        "time_limit_str": "1:00:00",
        "licenses": "",
        "submit_time": "2024-03-01T10:00:00Z",
        "eligible_time": "2024-03-01T10:00:00Z",
        "start_time": "2024-03-01T10:00:05Z",
        "end_time": "2024-03-01T11:00:05Z",
        "run_time": 12,
        "exit_code": "0:0",
        "node_list": "node01",
        "batch_host": "node01",
        "req_nodes": "",
        "exc_nodes": "",
        "work_dir": "/tmp",
        "std_out": "/tmp/slurm-12.out",
        "std_err": "/tmp/slurm-12.out",
        "std_in": "/dev/null",
        "command": "(wrap)",
        "hold": False,
        "reservation": "",
        "begin_time": None,
        "requeue": True,
        "restart_count": 0,
        "tres": "cpu=1,mem=0,node=1",
        "features": "",
    }
    job.update(overrides)
    return job


def pending(**overrides) -> dict:
    base = {
        "state": "PENDING",
        "state_compact": "PD",
        "reason": "Priority",
        "start_time": None,
        "end_time": None,
        "run_time": 0,
        "node_list": "",
        "batch_host": "",
    }
    return make_job(**{**base, **overrides})


def make_node(name: str, short: str = "idle", long: str = "idle", base: str = "IDLE", **overrides) -> dict:
    node = {
        "name": name,
        "state": base,
        "state_sinfo": long,
        "state_short": short,
        "base_state": base,
        "flags": [],
        "cpus": 4,
        "cpus_alloc": 0,
        "real_memory": 2000,
        "alloc_memory": 0,
        "reported_cpus": 4,
        "reported_memory": 2000,
        "weight": 1,
        "features": "",
        "active_features": "",
        "gres": "",
        "partitions": ["debug"],
        "reason": "",
        "reason_user": "",
        "reason_time": None,
        "boot_time": "2024-03-01T08:00:00Z",
        "last_contact": "2024-03-01T10:00:00Z",
        "agent": "host1:123",
        "suspend_time": None,
        "cpu_load": None,
        "free_mem": None,
        "alloc_tres": "cpu=0,mem=0",
        "cfg_tres": "cpu=4,mem=2000M,billing=4",
    }
    node.update(overrides)
    return node


def make_partition(name: str = "debug", **overrides) -> dict:
    part = {
        "name": name,
        "nodes": "node[01-04]",
        "node_names": ["node01", "node02", "node03", "node04"],
        "default": True,
        "state": "UP",
        "max_time": None,
        "max_time_str": "UNLIMITED",
        "default_time": None,
        "max_nodes": None,
        "min_nodes": 1,
        "priority_tier": 1,
        "total_cpus": 16,
        "total_nodes": 4,
        "extra": {},
    }
    part.update(overrides)
    return part


class CannedApi:
    """Routes ``(method, path)`` -> ``(status, body)``; records every request."""

    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], tuple[int, object]] = {}
        self.requests: list[dict] = []
        self.connections = 0
        self.chunked = False
        self.drop_idle = False  # close each connection after answering, without saying so
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                api.connections += 1

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                path, _, query = self.path.partition("?")
                api.requests.append(
                    {
                        "method": self.command,
                        "path": path,
                        "query": query,
                        "headers": dict(self.headers),
                        "body": json.loads(raw) if raw else None,
                    }
                )
                status, body = api.routes.get((self.command, path), (404, {"error": "Not found"}))
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                if api.chunked:
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    half = len(data) // 2
                    for piece in (data[:half], data[half:]):
                        if piece:
                            self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                    self.wfile.write(b"0\r\n\r\n")
                else:
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                if api.drop_idle:
                    self.close_connection = True

            do_GET = do_POST = do_PATCH = _handle

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # Keep-alive handler threads wait on idle client sockets: do not join them.
        self.server.daemon_threads = True
        self.server.block_on_close = False
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    def page(self, rows: list) -> dict:
        return {"count": len(rows), "next": None, "previous": None, "results": rows}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def api(monkeypatch):
    server = CannedApi()
    monkeypatch.setenv("FSCHED_URL", server.url)
    monkeypatch.setenv("FSCHED_TOKEN", "tok123")
    yield server
    server.close()


class Objects:
    """The factories above, handed to tests as the ``objs`` fixture."""

    job = staticmethod(make_job)
    pending = staticmethod(pending)
    node = staticmethod(make_node)
    partition = staticmethod(make_partition)


@pytest.fixture
def objs() -> type[Objects]:
    return Objects


@pytest.fixture
def slurm_defaults(transactional_db) -> None:
    """The rows the limits' data migration makes (the ``normal`` QOS, ``root``, the default
    TRES), which the flush after an earlier transactional test took away.  Made again here
    rather than with ``serialized_rollback``: that one's flush skips post_migrate, and every
    transactional test after it then met an empty content-type table."""
    import importlib

    from django.apps import apps

    importlib.import_module("limits.migrations.0002_defaults").forwards(apps, None)


@pytest.fixture
def live_cli(live_server, users, monkeypatch, slurm_defaults):
    """run(user, "squeue", "-h", ...) -> (exit status, stdout, stderr): the real ``fsched``
    command (cli.main) against the real controller's API on a live server."""
    import contextlib
    import io

    from cli import main as cli_main
    from cluster.services.api_tokens import token_issue

    monkeypatch.setenv("FSCHED_URL", live_server.url)
    tokens: dict[str, str] = {}

    def run(user: str, *argv: str) -> tuple[int, str, str]:
        if user not in tokens:
            tokens[user] = token_issue(users[user])[1]
        monkeypatch.setenv("FSCHED_TOKEN", tokens[user])
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = cli_main.main(["fsched", *argv])
            except SystemExit as exc:  # argparse's usage errors
                status = int(exc.code or 0)
        return status, out.getvalue(), err.getvalue()

    return run
