"""The state directory is private whatever the umask, and an old exposed one is fixed on start.

The start is a real one: a Python process that sets Django up and opens the database
through fsched's SQLite backend, as the server and ``manage.py`` do.  Importing the
settings only reads: the directory and the keys are made by ``manage.py migrate`` (the
database) and ``manage.py fsched_bootstrap`` (the keys), as `make run` runs them.
"""

from __future__ import annotations

import io
import json
import logging
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from django.core.management import call_command

from cluster.core.state_files import (
    StateDirUnusable,
    create_keys,
    create_private_file,
    private_dir,
    read_key,
    secure_state_dir,
    tighten,
)

ROOT = Path(__file__).resolve().parents[2]
DB = "fsched.sqlite3"

# Starts like the server: Django set up (which tightens the state directory), then a write
# through the backend in WAL mode; prints every file's mode while the connection still
# holds -wal/-shm.
START = """
import json, os, stat, sys
os.umask(0o022)
os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
import django
django.setup()
from django.db import connection
with connection.cursor() as cursor:
    cursor.execute("CREATE TABLE IF NOT EXISTS probe (x)")
    cursor.execute("INSERT INTO probe VALUES (1)")
    state = sys.argv[1]
    modes = {name: stat.S_IMODE(os.stat(os.path.join(state, name)).st_mode) for name in os.listdir(state)}
    modes["."] = stat.S_IMODE(os.stat(state).st_mode)
    print(json.dumps(modes))
"""


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def run(argv: list[str], state: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FSCHED_", "DJANGO_"))}
    env.update(FSCHED_STATE_DIR=str(state), **extra)
    return subprocess.run(argv, check=False, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)


def start(state: Path) -> tuple[dict[str, int], str]:
    done = run([sys.executable, "-c", START, str(state)], state)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1]), done.stderr


def bootstrap(state: Path) -> str:
    """What `make run` runs first (config.demo.Cluster.setup)."""
    out = ""
    cli = str(state.parent / "cli.json")
    for args in (["migrate", "--no-input", "-v", "0"], ["fsched_bootstrap", "--username", "ops"]):
        done = run([sys.executable, "manage.py", *args], state, FSCHED_CLI_CONFIG=cli)
        assert done.returncode == 0, done.stderr
        out += done.stdout
    return out


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


@pytest.fixture
def shared_parent():
    """A directory every user may enter (pytest's own tmp is root's alone, which would make
    a 'nobody cannot read' test pass for the wrong reason)."""
    parent = Path(tempfile.mkdtemp(prefix="fsched-state-"))
    parent.chmod(0o755)
    yield parent
    shutil.rmtree(parent)


# Imports the settings and sets Django up, then says what it read.
IMPORT = """
import json, os
os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
import django
django.setup()
from config import settings
print(json.dumps([settings.SECRET_KEY, settings.FSCHED_AGENT_KEY]))
"""


def tree(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): mode(p) for p in [root, *root.rglob("*")]}


def test_importing_the_settings_writes_nothing(shared_parent):
    """Not the state directory, nor a key in it (they used to be made by any import: a
    linter's, `manage.py check`'s, a second server host's); nor does `manage.py check`."""
    fresh = shared_parent / "fresh"
    empty = shared_parent / "empty"
    empty.mkdir(mode=0o700)
    for state in (fresh, empty):
        done = run([sys.executable, "-c", IMPORT], state)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == ["", ""]
        done = run([sys.executable, "manage.py", "check"], state)
        assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in shared_parent.iterdir()) == ["empty"]
    assert list(empty.iterdir()) == []


def test_the_settings_read_the_keys_the_bootstrap_made(tmp_path):
    state = tmp_path / "state"
    created = create_keys(state, environ={})
    done = run([sys.executable, "-c", IMPORT], state)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [read_key(p) for p in created]
    # The environment's win, and the files are not read for them.
    done = run([sys.executable, "-c", IMPORT], state, FSCHED_SECRET_KEY="s" * 50, FSCHED_AGENT_KEY="a" * 32)
    assert json.loads(done.stdout) == ["s" * 50, "a" * 32]


def test_a_new_installation_is_private_under_umask_022(shared_parent, umask_022):
    state = shared_parent / "state"
    said = bootstrap(state)
    assert f"Created {state / 'secret_key'}, {state / 'agent_key'} (mode 0600)" in said
    modes, _ = start(state)
    assert modes["."] == 0o700
    for name in ("secret_key", "agent_key", DB, f"{DB}-wal", f"{DB}-shm", f"{DB}.gate"):
        assert modes[name] == 0o600, name


def test_the_bootstrap_makes_the_directory_and_keys_private(db, settings, tmp_path, monkeypatch):
    """Without migrate before it (the database elsewhere, PostgreSQL say), under the widest
    umask; a second run keeps the keys, and a key the environment gives gets no file."""
    state = tmp_path / "state"
    settings.STATE_DIR = state
    monkeypatch.setenv("FSCHED_CLI_CONFIG", str(tmp_path / "cli.json"))
    monkeypatch.delenv("FSCHED_SECRET_KEY", raising=False)
    monkeypatch.setenv("FSCHED_AGENT_KEY", "from-the-environment")
    old = os.umask(0)  # a plain mkdir() or open() would make them 0777 and 0666
    try:
        call_command("fsched_bootstrap", "--username", "ops", stdout=io.StringIO())
        key = read_key(state / "secret_key")
        monkeypatch.delenv("FSCHED_AGENT_KEY")
        out = io.StringIO()
        call_command("fsched_bootstrap", "--username", "ops", stdout=out)
    finally:
        os.umask(old)
    assert tree(state) == {".": 0o700, "secret_key": 0o600, "agent_key": 0o600}
    assert read_key(state / "secret_key") == key and len(key) >= 66
    assert f"Created {state / 'agent_key'} (mode 0600)" in out.getvalue()
    assert "secret_key" not in out.getvalue()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to bootstrap another user's directory")
def test_root_bootstrapping_the_service_directory_gives_it_the_keys(shared_parent):
    """The server runs as the service account: a key root kept to itself would be none."""
    state = private_dir(shared_parent / "state")
    os.chown(state, 65534, 65534)
    created = create_keys(state, environ={})
    assert [(p.stat().st_uid, p.stat().st_gid, mode(p)) for p in created] == [(65534, 65534, 0o600)] * 2


def test_an_old_exposed_installation_is_fixed_and_the_fix_logged(shared_parent, umask_022):
    state = shared_parent / "state"
    state.mkdir(mode=0o755)
    for name in ("secret_key", "agent_key"):
        (state / name).write_text("k" * 43)
    # The database as the old version left it, its -wal and -shm held open (0644 each).
    old = sqlite3.connect(state / DB)
    old.execute("PRAGMA journal_mode=WAL")
    old.execute("CREATE TABLE probe (x)")
    old.commit()
    try:
        assert {mode(state / n) for n in ("secret_key", DB, f"{DB}-wal", f"{DB}-shm")} == {0o644}
        modes, log = start(state)
    finally:
        old.close()
    assert modes["."] == 0o700
    for name in ("secret_key", "agent_key", DB, f"{DB}-wal", f"{DB}-shm"):
        assert modes[name] == 0o600, name
        assert f"{state / name} was mode 0644, readable by other users: changed to 0600" in log
    assert f"{state} was mode 0755, readable by other users: changed to 0700" in log
    assert "WARNING fsched.state" in log  # once Django's logging is up (the database's files)


def test_tightening_is_a_warning_and_takes_bits_away_only(tmp_path, caplog):
    state = tmp_path / "state"
    state.mkdir(mode=0o750)
    state.chmod(0o750)
    key = state / "agent_key"
    key.write_text("k")
    key.chmod(0o400)
    with caplog.at_level(logging.WARNING, logger="fsched.state"):
        secure_state_dir(state)
    assert mode(state) == 0o700 and mode(key) == 0o400
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.WARNING, f"{state} was mode 0750, readable by other users: changed to 0700")
    ]


def test_keys_are_created_0600_and_never_replaced(tmp_path):
    old = os.umask(0)  # the widest: a plain open() would create 0666
    try:
        created = create_keys(tmp_path, environ={})
    finally:
        os.umask(old)
    key = read_key(tmp_path / "agent_key")
    assert created == [tmp_path / "secret_key", tmp_path / "agent_key"]
    assert mode(tmp_path / "agent_key") == 0o600 and len(key) >= 43
    assert create_keys(tmp_path, environ={}) == []
    assert create_private_file(tmp_path / "agent_key", "other") is False
    assert read_key(tmp_path / "agent_key") == key
    assert sorted(p.name for p in tmp_path.iterdir()) == ["agent_key", "secret_key"]  # no temporary left


def test_a_shared_sticky_directory_is_refused_not_closed(tmp_path):
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    with pytest.raises(ValueError, match="shared directory"):
        private_dir(shared)
    assert mode(shared) == 0o1777


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
def test_a_file_this_user_may_not_change_is_reported_not_fatal(shared_parent):
    exposed = shared_parent / "secret_key"
    exposed.write_text("k")
    exposed.chmod(0o644)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: another user meets root's exposed file
        os.close(read)
        code = 1
        try:
            os.setgid(65534)
            os.setuid(65534)
            handler = logging.Handler()
            handler.emit = lambda r: os.write(write, f"{r.levelname} {r.getMessage()}".encode())
            logging.getLogger("fsched.state").addHandler(handler)
            code = 0 if tighten(exposed, 0o600) is False else 2
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        said = pipe.read().decode()
    assert os.waitpid(pid, 0)[1] == 0
    assert said == (
        f"ERROR {exposed} is mode 0644, readable by other users, and uid 65534 may not change it: "
        f"run chmod 0600 {exposed} as its owner"
    )
    assert mode(exposed) == 0o644


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
def test_a_state_directory_another_user_owns_is_said_in_one_line(shared_parent):
    """manage.py run by an administrator's own account on the service account's 0700
    directory: StateDirUnusable names the directory, the uid and what to do."""
    state = private_dir(shared_parent / "state")
    (state / "secret_key").write_text("k")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            os.setgid(65534)
            os.setuid(65534)
            secure_state_dir(state)
            os.write(write, b"no error")
        except StateDirUnusable as exc:
            os.write(write, str(exc).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        said = pipe.read().decode()
    os.waitpid(pid, 0)
    assert said == (
        f"FSCHED_STATE_DIR {state} is not usable by uid 65534 (Permission denied): "
        "run this as root, or set FSCHED_STATE_DIR"
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
def test_a_non_root_user_cannot_read_the_database(shared_parent):
    state = shared_parent / "state"
    bootstrap(state)
    start(state)
    control = shared_parent / "public"
    control.write_text("readable")
    control.chmod(0o644)

    def as_nobody(path: Path) -> tuple[bytes, str]:
        done = subprocess.run(
            ["cat", str(path)], check=False, user=65534, group=65534, extra_groups=[], capture_output=True
        )
        return done.stdout, done.stderr.decode(errors="replace")

    assert as_nobody(control) == (b"readable", "")  # the setup lets nobody in this far
    for name in (DB, "agent_key", "secret_key"):
        read, error = as_nobody(state / name)
        assert read == b"" and "Permission denied" in error, name
    # Even with the directory opened up, the files themselves stay closed.
    state.chmod(0o755)
    for name in (DB, f"{DB}.gate", "agent_key", "secret_key"):
        read, error = as_nobody(state / name)
        assert read == b"" and "Permission denied" in error, name
