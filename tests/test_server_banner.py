"""``fsched server`` says where it listens and in which mode, and warns about settings that
break a deployment on several hosts: run for real, its first lines read from stderr."""

from __future__ import annotations

import os
import select
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cluster.core.state_files import create_keys

ROOT = Path(__file__).resolve().parents[1]
FSCHED = str(Path(sys.executable).parent / "fsched")
# TEST-NET-2 (RFC 5737): no machine has it, so the bind fails and nothing is exposed; the
# banner comes before the bind.
UNREACHABLE = "198.51.100.7"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_lines(tmp_path: Path, *args: str, env: dict[str, str], answer: int | None = None) -> list[str]:
    """The server's own lines on stderr (the banner, then its warnings); with ``answer``,
    also wait until that port accepts a connection, so the banner is seen to be true."""
    full = {
        **os.environ,
        "FSCHED_STATE_DIR": str(tmp_path / "state"),
        "FSCHED_DATABASE_URL": "",
        "FSCHED_REDIS_URL": "",
        **env,
    }
    for name in ("FSCHED_SECRET_KEY", "FSCHED_AGENT_KEY", "FSCHED_ALLOWED_HOSTS", "FSCHED_HOST"):
        if name not in env:
            full.pop(name, None)
    create_keys(tmp_path / "state", environ=full)  # what the bootstrap does
    proc = subprocess.Popen(
        [FSCHED, "server", "--no-load-config", *args],
        env=full,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            # The warnings follow the banner at once: a second of silence after it ends them.
            ready, _, _ = select.select([proc.stderr], [], [], 1.0)
            if not ready:
                if lines:
                    break
                continue
            line = proc.stderr.readline()
            if not line:
                break
            lines.append(line.rstrip("\n"))
        while answer is not None and time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", answer)) == 0:
                    break
            time.sleep(0.2)
        else:
            if answer is not None:
                pytest.fail(f"nothing listened on {answer}: {lines}")
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return [ln for ln in lines if ln.startswith("fsched server: ")]


def test_embedded_banner_names_the_sqlite_file_and_the_cycles_and_tells_the_truth(tmp_path):
    port = free_port()
    lines = server_lines(tmp_path, "--port", str(port), env={}, answer=port)
    state = (tmp_path / "state").resolve()
    assert lines[0] == (
        f"fsched server: listening on http://127.0.0.1:{port} "
        f"(embedded: SQLite {state}/fsched.sqlite3; cycles in this process)"
    )
    assert not [ln for ln in lines if "warning" in ln]


def test_port_and_host_from_the_environment(tmp_path):
    port = free_port()
    lines = server_lines(
        tmp_path, "--no-cycles", env={"FSCHED_HOST": "127.0.0.1", "FSCHED_PORT": str(port)}, answer=port
    )
    assert lines[0].startswith(f"fsched server: listening on http://127.0.0.1:{port} (embedded: ")
    assert lines[0].endswith("; no cycles (--no-cycles))")


def test_distributed_banner_never_shows_a_password_and_warns_of_per_host_keys(tmp_path):
    env = {
        "FSCHED_DATABASE_URL": "postgres://fsched:s3cret-db@127.0.0.1:55433/fsched_b",
        "FSCHED_REDIS_URL": "redis://:s3cret-redis@127.0.0.1:56380/2",
    }
    port = free_port()
    lines = server_lines(
        tmp_path, "--host", UNREACHABLE, "--port", str(port), "--workers", "4", "--no-cycles", env=env
    )
    assert lines[0] == (
        f"fsched server: listening on http://{UNREACHABLE}:{port} (distributed: PostgreSQL "
        "fsched@127.0.0.1:55433/fsched_b, Redis 127.0.0.1:56380/2; 4 workers; cycles in Celery)"
    )
    text = "\n".join(lines)
    assert "s3cret" not in text
    assert f"--host {UNREACHABLE} is reachable from other hosts, but FSCHED_ALLOWED_HOSTS" in text
    assert "400 Bad Request" in text
    assert "distributed mode without FSCHED_SECRET_KEY" in text
    assert "distributed mode without FSCHED_AGENT_KEY" in text


def test_no_warning_when_the_address_is_allowed_and_the_keys_are_shared(tmp_path):
    env = {
        "FSCHED_DATABASE_URL": "postgres://fsched@127.0.0.1:55433/fsched_b",
        "FSCHED_REDIS_URL": "redis://127.0.0.1:56380/2",
        "FSCHED_ALLOWED_HOSTS": f"{UNREACHABLE},localhost",
        "FSCHED_SECRET_KEY": "k" * 50,
        "FSCHED_AGENT_KEY": "a" * 32,
    }
    lines = server_lines(tmp_path, "--host", UNREACHABLE, "--port", str(free_port()), "--no-cycles", env=env)
    assert (
        "(distributed: PostgreSQL fsched@127.0.0.1:55433/fsched_b, Redis 127.0.0.1:56380/2; 1 worker;"
        in (lines[0])
    )
    assert not [ln for ln in lines if "warning" in ln], lines


def test_a_dns_name_in_allowed_hosts_is_trusted_to_name_the_host(tmp_path):
    env = {"FSCHED_ALLOWED_HOSTS": "ctl.example.org"}
    lines = server_lines(tmp_path, "--host", UNREACHABLE, "--port", str(free_port()), "--no-cycles", env=env)
    assert not [ln for ln in lines if "warning" in ln], lines


def test_a_server_started_before_migrate_says_so_in_one_line_and_exits(tmp_path):
    env = {**os.environ, "FSCHED_STATE_DIR": str(tmp_path / "state"), "FSCHED_DATABASE_URL": "",
           "FSCHED_REDIS_URL": "", "FSCHED_SECRET_KEY": "s" * 50, "FSCHED_AGENT_KEY": "a" * 32}  # fmt: skip
    done = subprocess.run(
        [FSCHED, "server", "--port", str(free_port())],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    sqlite = tmp_path / "state" / "fsched.sqlite3"
    assert done.returncode != 0
    assert (
        f"start-up failed: the database {sqlite} has no fsched tables: run `manage.py migrate` first"
        in done.stderr
    )
    assert "Traceback" not in done.stderr


def test_a_server_started_before_the_bootstrap_names_the_keys_and_what_to_run(tmp_path):
    state = tmp_path / "state"
    env = {k: v for k, v in os.environ.items() if k not in ("FSCHED_SECRET_KEY", "FSCHED_AGENT_KEY")}
    env.update(FSCHED_STATE_DIR=str(state), FSCHED_DATABASE_URL="", FSCHED_REDIS_URL="")
    argv = [FSCHED, "server", "--port", str(free_port())]
    done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2  # final: `make run` does not start it again
    assert done.stderr == (
        f"fsched server: error: FSCHED_SECRET_KEY is not set and {state}/secret_key does not exist; "
        f"FSCHED_AGENT_KEY is not set and {state}/agent_key does not exist: "
        "run `manage.py fsched_bootstrap` to create them\n"
    )
    assert not state.exists()
    # One key given, the other's file there but empty (a failed copy, say).
    state.mkdir(mode=0o700)
    (state / "agent_key").write_text("")
    env["FSCHED_SECRET_KEY"] = "s" * 50
    done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert done.stderr == (
        f"fsched server: error: FSCHED_AGENT_KEY is not set and {state}/agent_key is empty: "
        "run `manage.py fsched_bootstrap` to create it\n"
    )


def test_another_asgi_server_without_keys_fails_its_start_with_the_same_words(settings, tmp_path):
    from config import asgi

    settings.STATE_DIR = tmp_path
    settings.FSCHED_AGENT_KEY = ""
    with pytest.raises(asgi.NotSetUp) as refused:
        asgi._startup()
    assert str(refused.value) == (
        f"FSCHED_AGENT_KEY is not set and {tmp_path}/agent_key does not exist: "
        "run `manage.py fsched_bootstrap` to create it"
    )
