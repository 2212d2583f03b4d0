"""The embedded backend must never open and close the database file behind SQLite's back.

Closing any descriptor of a file drops every POSIX lock the process holds on it, so an
``open``/``close`` of the database by a new connection's set-up cancels the SHARED lock an
open WAL connection of the same process holds.  Another process closing its last
connection then takes the EXCLUSIVE lock, checkpoints and deletes the -wal and -shm files
under the server's feet: "disk I/O error", then "database disk image is malformed".
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from config.sqlite.base import DatabaseWrapper

WAL = "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"


def _wrapper(path: Path, alias: str) -> DatabaseWrapper:
    settings = {
        "ENGINE": "config.sqlite",
        "NAME": str(path),
        "OPTIONS": {"init_command": WAL},
        "ATOMIC_REQUESTS": False,
        "AUTOCOMMIT": True,
        "CONN_MAX_AGE": 0,
        "CONN_HEALTH_CHECKS": False,
        "TIME_ZONE": None,
        "USER": "",
        "PASSWORD": "",
        "HOST": "",
        "PORT": "",
        "TEST": {},
    }
    return DatabaseWrapper(settings, alias)


def _open_and_close_elsewhere(path: Path) -> None:
    code = "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('select * from t'); c.close()"
    subprocess.run([sys.executable, "-c", code, str(path)], check=True, timeout=30)


def _two_connections_and_another_process(db: Path) -> None:
    first = _wrapper(db, "first")
    second = _wrapper(db, "second")
    try:
        with first.cursor() as cur:
            cur.execute("CREATE TABLE t (x INTEGER)")
            cur.execute("INSERT INTO t VALUES (1)")
        wal = Path(f"{db}-wal")
        assert wal.exists()
        # A second connection of the same process, as a new thread of the server opens.
        second.ensure_connection()
        # A process that is not the last one open must leave the WAL where it is.
        _open_and_close_elsewhere(db)
        assert wal.exists(), "another process believed itself the last and removed the WAL"
        with first.cursor() as cur:
            cur.execute("INSERT INTO t VALUES (2)")
            assert cur.execute("SELECT count(*) FROM t").fetchone()[0] == 2
        assert sqlite3.connect(db).execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        second.close()
        first.close()


def test_a_new_connection_keeps_the_locks_of_the_open_ones(tmp_path: Path, django_db_blocker) -> None:
    # In a thread of its own, as the server's connections are: an earlier test may leave an
    # event loop running in this one, where Django refuses synchronous database calls.
    with django_db_blocker.unblock(), ThreadPoolExecutor(1) as pool:
        pool.submit(_two_connections_and_another_process, tmp_path / "fsched.sqlite3").result()
