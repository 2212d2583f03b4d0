"""The installed ``fsched`` command is the repository's launcher, and an ``fsched sbatch``
run through it loads no module the submission does not use (pip's console-script wrapper
imported ``re``, with enum, functools and collections, for a Windows-only argv[0] fix)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INSTALLED = Path(sys.executable).parent / "fsched"


def _body(path: Path) -> list[str]:
    """The file without what the install writes: the interpreter (first line) and PACKAGES."""
    return [line for line in path.read_text().splitlines()[1:] if not line.startswith("PACKAGES = ")]


def test_the_installed_command_is_the_repositorys_launcher():
    assert INSTALLED.exists(), "run `make .venv/.installed`"
    assert _body(INSTALLED) == _body(ROOT / "scripts" / "fsched")
    assert INSTALLED.read_text().startswith(f"#!{sys.executable}")


def test_sbatch_through_the_installed_command_imports_only_what_it_uses(tmp_path):
    with socket.socket() as sock:  # a port nobody listens on: the run ends at connect()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {
        "FSCHED_URL": f"http://127.0.0.1:{port}",
        "FSCHED_CLI_CONFIG": str(tmp_path / "none.json"),
        "PATH": "",
    }
    done = subprocess.run(
        [sys.executable, "-X", "importtime", str(INSTALLED), "sbatch", "--wrap=true"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    lines = done.stderr.splitlines()
    imported = {line.rsplit("|", 1)[1].strip() for line in lines if line.startswith("import time:")}
    assert "cli.sbatch" in imported and "cli.client" in imported
    heavy = {"re", "enum", "functools", "collections", "argparse", "json", "typing", "http.client", "types"}
    assert heavy & imported == set()
    assert done.returncode == 1
    assert [line for line in lines if not line.startswith("import time:")] == [
        "fsched: error: Unable to contact slurm controller (connect failure)",
        f"fsched: error: tried http://127.0.0.1:{port}: Connection refused",
    ]


def test_squeue_through_the_installed_command_imports_neither_typing_nor_re(tmp_path):
    # typing (with re, enum and functools) was two fifths of the instructions of a squeue.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {"FSCHED_URL": f"http://127.0.0.1:{port}", "FSCHED_CLI_CONFIG": str(tmp_path / "none.json")}
    done = subprocess.run(
        [sys.executable, "-X", "importtime", str(INSTALLED), "squeue"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    lines = done.stderr.splitlines()
    imported = {line.rsplit("|", 1)[1].strip() for line in lines if line.startswith("import time:")}
    assert "cli.squeue" in imported and "cli.client" in imported
    assert {"re", "enum", "functools", "typing", "argparse", "json", "types"} & imported == set()
    assert done.returncode == 1
