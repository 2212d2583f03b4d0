"""The HTTP client against a real (canned) HTTP server, and the credentials file."""

from __future__ import annotations

import io
import json
import os
import stat
from pathlib import Path

import pytest

from cli import client as cli_client
from cli.client import ApiError, Client, ConnectError, OutcomeUnknown, query_string, settings, split_url
from cli.main import main


def test_auth_header_keep_alive_and_json(api):
    api.routes[("GET", "/api/whoami/")] = (200, {"username": "alice", "is_staff": False})
    api.routes[("POST", "/api/jobs/cancel/")] = (200, {"cancelled": [1], "errors": []})
    c = Client()
    assert c.get("/api/whoami/") == {"username": "alice", "is_staff": False}
    assert c.post("/api/jobs/cancel/", {"job_ids": [1]}) == {"cancelled": [1], "errors": []}
    assert c.get("/api/whoami/")["username"] == "alice"
    assert api.connections == 1  # one connection for three requests
    first = api.requests[0]["headers"]
    assert first["Authorization"] == "Token tok123"
    assert api.requests[1]["body"] == {"job_ids": [1]}


def test_a_dropped_keep_alive_connection_is_reopened_once(api):
    api.drop_idle = True
    api.routes[("GET", "/api/whoami/")] = (200, {"username": "alice"})
    c = Client()
    assert [c.get("/api/whoami/")["username"] for _ in range(3)] == ["alice"] * 3
    assert api.connections == 3
    assert len(api.requests) == 3  # no request was sent twice


def test_chunked_answers(api):
    api.chunked = True
    api.routes[("GET", "/api/nodes/")] = (200, api.page([{"name": f"node{i:02d}"} for i in range(50)]))
    rows = Client().get_all("/api/nodes/")
    assert [r["name"] for r in rows][-1] == "node49"


def test_pagination_follows_offsets(api):
    first = {"count": 3, "next": "x", "previous": None, "results": [{"n": 1}, {"n": 2}]}
    api.routes[("GET", "/api/jobs/")] = (200, first)
    c = Client()
    # The server ignores offset here, so stop after the count is reached.
    assert len(c.get_all("/api/jobs/", {"user": "a"})) == 4
    assert api.requests[1]["query"] == "user=a&limit=100000&offset=2"


def test_api_errors_carry_the_message(api):
    api.routes[("POST", "/api/jobs/")] = (
        400,
        {"error": "Invalid partition name specified", "field": "partition"},
    )
    with pytest.raises(ApiError) as raised:
        Client().post("/api/jobs/", {"partition": "x"})
    assert raised.value.status == 400
    assert raised.value.message == "Invalid partition name specified"
    assert raised.value.payload["field"] == "partition"


def test_unauthenticated_gets_a_hint(api, capsys):
    api.routes[("GET", "/api/jobs/")] = (401, {"detail": "Invalid token."})
    assert main(["fsched", "squeue"]) == 1
    assert capsys.readouterr().err == "slurm_load_jobs error: Invalid token. (run `fsched login`)\n"


def test_connection_refused(monkeypatch, capsys):
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("FSCHED_URL", f"http://127.0.0.1:{port}")
    with pytest.raises(ConnectError):
        Client().get("/api/whoami/")
    assert main(["fsched", "sbatch", "--wrap", "true"]) == 1
    assert capsys.readouterr().err == (
        "fsched: error: Unable to contact slurm controller (connect failure)\n"
        f"fsched: error: tried http://127.0.0.1:{port}: Connection refused\n"
    )


def test_url_and_query_helpers():
    assert split_url("http://127.0.0.1:8000") == ("http", "127.0.0.1", 8000, "")
    assert split_url("https://ctl.example/fsched/") == ("https", "ctl.example", 443, "/fsched")
    assert split_url("[::1]:9000") == ("http", "::1", 9000, "")
    assert (
        query_string({"name": "node[01-02]", "state": None, "user": "a b"})
        == "?name=node%5B01-02%5D&user=a%20b"
    )


def test_settings_precedence(tmp_path, monkeypatch):
    path = tmp_path / "cli.json"
    path.write_text(json.dumps({"url": "http://saved:1", "token": "saved", "username": "bob"}))
    env = {"FSCHED_CLI_CONFIG": str(path)}
    assert settings(env) == ("http://saved:1", "saved", "bob")
    assert settings({**env, "FSCHED_URL": "http://env:2", "FSCHED_TOKEN": "t"}) == (
        "http://env:2",
        "t",
        "bob",
    )
    xdg = {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path)}
    assert cli_client.config_path(xdg) == str(tmp_path / "xdg" / "fsched" / "cli.json")
    assert cli_client.config_path({"HOME": str(tmp_path)}) == str(
        tmp_path / ".config" / "fsched" / "cli.json"
    )
    assert settings({"FSCHED_CLI_CONFIG": str(tmp_path / "missing.json")}) == (
        cli_client.DEFAULT_URL,
        None,
        None,
    )


def test_login_writes_a_private_credentials_file(api, capsys, monkeypatch, tmp_path):
    api.routes[("POST", "/api/auth/token/")] = (200, {"token": "fresh"})
    monkeypatch.delenv("FSCHED_TOKEN")
    monkeypatch.setattr("sys.stdin", io.StringIO("s3cret\n"))
    assert main(["fsched", "login", "--username", "alice", "--password-stdin"]) == 0
    assert api.requests[0]["body"] == {"username": "alice", "password": "s3cret"}
    assert "Authorization" not in api.requests[0]["headers"]
    path = os.environ["FSCHED_CLI_CONFIG"]
    assert json.loads(Path(path).read_text()) == {"url": api.url, "token": "fresh", "username": "alice"}
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600

    api.routes[("GET", "/api/whoami/")] = (200, {"username": "alice"})
    monkeypatch.delenv("FSCHED_URL")
    assert Client().get("/api/whoami/") == {"username": "alice"}
    assert api.requests[-1]["headers"]["Authorization"] == "Token fresh"


def test_login_refused(api, capsys, monkeypatch):
    api.routes[("POST", "/api/auth/token/")] = (400, {"error": "Unable to log in with provided credentials."})
    monkeypatch.setattr("sys.stdin", io.StringIO("wrong\n"))
    assert main(["fsched", "login", "-u", "alice", "--password-stdin"]) == 1
    assert "login failed: Unable to log in with provided credentials." in capsys.readouterr().err


def test_dispatch(capsys):
    assert main(["fsched"]) == 1
    assert "usage: fsched" in capsys.readouterr().err
    assert main(["fsched", "nosuch"]) == 1
    assert "fsched: error: unknown command 'nosuch'" in capsys.readouterr().err
    assert main(["/usr/bin/squeue", "--version"]) == 0  # invoked through a link named after the command
    assert capsys.readouterr().out.startswith("slurm ")


def test_a_connection_broken_after_the_request_was_sent_is_an_unknown_outcome():
    from tests.cli.breaking_server import CLOSE, BreakingServer

    server = BreakingServer([CLOSE], {})
    try:
        client = Client(url=server.url, token="t")
        with pytest.raises(OutcomeUnknown) as raised:  # sent, then no answer: it may have run
            client.request("POST", "/api/jobs/", {}, headers={"Idempotency-Key": "k1"})
        assert raised.value.message == cli_client.CONNECT_FAILURE  # other commands word it as before
        assert server.requests[0]["headers"]["idempotency-key"] == "k1"
    finally:
        server.close()


def test_connect_patience_waits_for_a_refusing_controller(monkeypatch):
    import socket
    import time

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = Client(url=f"http://127.0.0.1:{port}", token="t")
    started = time.monotonic()
    with pytest.raises(ConnectError) as raised:
        client.get("/api/whoami/")
    assert not isinstance(raised.value, OutcomeUnknown)  # refused: nothing was sent
    assert time.monotonic() - started < 0.2  # no patience unless asked
    started = time.monotonic()
    with pytest.raises(ConnectError):
        client.request("GET", "/api/whoami/", connect_patience=0.5)
    assert time.monotonic() - started >= 0.5
