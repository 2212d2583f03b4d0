"""The bench's distributed cluster: its own PostgreSQL database and Redis DB, and the
processes the README's distributed mode runs.

The database is created for the run (``fsched_bench_<pid>`` on the server named by
FSCHED_DATABASE_URL) and dropped afterwards, even when the run fails; the Redis DB is one
of 10-15 found empty and claimed, flushed afterwards.  A cluster already running on the
URLs given is therefore never touched.

Processes, as the README's distributed mode (sized for this 2-core machine):

* ``fsched server --no-cycles --workers 2``: one uvicorn worker per core;
* one Celery worker, ``--pool threads --concurrency 2`` (the choice: docs/scaling.md);
* one ``celery beat``.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import psycopg
import redis

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
REDIS_DBS = range(10, 16)
_CLAIM = "fsched-bench:claimed"


def _with_path(url: str, path: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(parts._replace(path=path))


@contextlib.contextmanager
def fresh_database(url: str, name: str) -> Iterator[str]:
    """CREATE DATABASE `name` on the server of `url`; yields its URL; drops it at the end."""
    admin = urllib.parse.urlsplit(url).path.lstrip("/") or "postgres"
    conninfo = _with_path(url, "/" + admin)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield _with_path(url, "/" + name)
    finally:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            # FORCE: a process the bench started and could not stop must not keep it alive.
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def fresh_redis_db(url: str) -> Iterator[str]:
    """The first of Redis DBs 10-15 that is empty, claimed for this run; yields its URL and
    flushes it at the end."""
    for number in REDIS_DBS:
        candidate = _with_path(url, f"/{number}")
        client = redis.Redis.from_url(candidate)
        # Empty, and claimed atomically so two benches cannot both take it.
        if client.dbsize() == 0 and client.set(_CLAIM, "1", nx=True):
            break
        client.close()
    else:
        raise RuntimeError(f"no empty Redis DB among {REDIS_DBS.start}-{REDIS_DBS.stop - 1} on {url}")
    try:
        yield candidate
    finally:
        client.flushdb()
        client.close()


SERVER_ARGS = ("--no-cycles", "--workers", "2")


def start_celery(env: dict[str, str], state: Path) -> list[subprocess.Popen[bytes]]:
    celery = str(BIN / "celery")
    commands = [
        [celery, "-A", "config", "worker", "-l", "warning", "--pool", "threads", "--concurrency", "2"],
        [celery, "-A", "config", "beat", "-l", "warning"],
    ]
    with open(state / "celery.log", "ab") as log:  # the children keep their own copies
        return [
            subprocess.Popen(command, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
            for command in commands
        ]


def stop(processes: list[subprocess.Popen[bytes]]) -> None:
    for proc in processes:
        if proc.poll() is None:
            proc.terminate()
    for proc in processes:
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
