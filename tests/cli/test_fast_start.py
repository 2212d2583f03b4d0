"""The installed ``fsched`` starts Python without ``site`` (``python -S``, scripts/fsched and
scripts/fsched_fast_start.py): it finds fsched's packages itself, from any directory and
with an empty environment, in the checkout's venv or in a venv elsewhere, and the commands
that need the server's packages run again under a plain interpreter."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cli.main import COMMANDS, NEEDS_SITE

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
INSTALLED = BIN / "fsched"
SLURM_BIN = BIN.parent / "slurm-bin"
FAST_START = str(ROOT / "scripts" / "fsched_fast_start.py")
PY_VERSION = f"python{sys.version_info[0]}.{sys.version_info[1]}"


def _run(argv: list[str], cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        argv, cwd=cwd, env=env or {}, capture_output=True, text=True, check=False, timeout=120
    )


def _imported(stderr: str) -> set[str]:
    """Module names from PYTHONPROFILEIMPORTTIME's lines (``-X importtime`` by environment:
    a shebang's options cannot be added to)."""
    return {line.rsplit("|", 1)[1].strip() for line in stderr.splitlines() if line.startswith("import time:")}


def test_the_install_starts_fsched_without_site():
    first = INSTALLED.read_text().splitlines()[0]
    assert first.startswith(f"#!{BIN}/python")
    assert first.endswith(" -S")


def test_sbatch_from_another_directory_with_an_empty_environment_runs_without_site(tmp_path):
    run = _run([str(INSTALLED), "sbatch", "--help"], tmp_path, {"PYTHONPROFILEIMPORTTIME": "1"})
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("usage: sbatch")
    imported = _imported(run.stderr)
    assert "cli.sbatch" in imported
    assert "site" not in imported


@pytest.mark.skipif(not SLURM_BIN.is_dir(), reason="`make setup` makes .venv/slurm-bin")
def test_a_slurm_command_name_runs_the_fast_start(tmp_path):
    run = _run([str(SLURM_BIN / "squeue"), "--help"], tmp_path, {"PYTHONPROFILEIMPORTTIME": "1"})
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("usage: squeue")
    assert "site" not in _imported(run.stderr)


@pytest.mark.parametrize("command", sorted(set(COMMANDS) - NEEDS_SITE))
def test_every_client_command_needs_nothing_from_site_packages(command, tmp_path):
    # A command that came to import a package of site-packages (or Django) would fail here:
    # it belongs in NEEDS_SITE, or its import belongs where only the server runs it.
    run = _run([str(INSTALLED), command, "--help"], tmp_path)
    # seff's usage ends with status 1, as contribs/seff's does.
    assert run.returncode == (1 if command == "seff" else 0), run.stderr
    assert "usage:" in run.stdout.lower()


@pytest.mark.parametrize("command", sorted(NEEDS_SITE))
def test_the_commands_of_the_server_packages_run_again_with_site(command, tmp_path):
    run = _run([str(INSTALLED), command, "--help"], tmp_path, {"PYTHONPROFILEIMPORTTIME": "1"})
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(f"usage: fsched {command}")
    assert "site" in _imported(run.stderr)


def test_the_agent_finds_its_packages(tmp_path):
    # agent.main imports psutil and ClusterShell at load, from site-packages.
    run = _run([str(INSTALLED), "agent", "--help"], tmp_path, {"PYTHONPROFILEIMPORTTIME": "1"})
    assert run.returncode == 0, run.stderr
    assert {"psutil", "ClusterShell.NodeSet"} <= _imported(run.stderr)


def test_simulate_finds_the_simulator_installed(tmp_path):
    # Under -S the simulator's packages (Django) are not on the path: without the second run
    # the command would say the simulator is not installed on this host.
    argv = ["simulate", "--conf", str(tmp_path / "nowhere"), "--workload", "w", "--out", "o"]
    run = _run([str(INSTALLED), *argv], tmp_path)
    assert run.returncode == 1
    assert f"--conf: {tmp_path / 'nowhere' / 'slurm.conf'}: no such file" in run.stderr


def _venv_elsewhere(tmp_path: Path, editable: bool = True) -> Path:
    """A venv outside the checkout with fsched installed in it, editable (a .pth naming the
    checkout) or not (the packages copied into site-packages), and its script as pip writes
    it (the interpreter alone on the first line), then the install's fast start."""
    venv = tmp_path / "elsewhere" / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    site_packages = venv / "lib" / PY_VERSION / "site-packages"
    if editable:
        (site_packages / "__editable__.fsched-0.1.0.pth").write_text(f"{ROOT}\n")
    else:
        no_bytecode = shutil.ignore_patterns("__pycache__")
        for package in ("cli", "slurmwords"):
            shutil.copytree(ROOT / package, site_packages / package, ignore=no_bytecode)
    script = (ROOT / "scripts" / "fsched").read_text().split("\n", 1)[1]
    (venv / "bin" / "fsched").write_text(f"#!{venv / 'bin' / 'python3'}\n{script}")
    _fast_start(venv)
    return venv


def _fast_start(venv: Path) -> None:
    subprocess.run([str(venv / "bin" / "python"), "-I", FAST_START], check=True, timeout=120, cwd=ROOT)


def _packages_line(command: Path) -> str:
    return next(line for line in command.read_text().splitlines() if line.startswith("PACKAGES = "))


def test_an_editable_install_in_a_venv_elsewhere_finds_the_checkout(tmp_path):
    venv = _venv_elsewhere(tmp_path)
    assert _packages_line(venv / "bin" / "fsched") == f"PACKAGES = {str(ROOT)!r}"
    run = _run([str(venv / "bin" / "fsched"), "sbatch", "--help"], tmp_path, {"PYTHONPROFILEIMPORTTIME": "1"})
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("usage: sbatch")
    assert "site" not in _imported(run.stderr)


def test_a_regular_install_in_a_venv_elsewhere_finds_its_site_packages(tmp_path):
    # `pip install .` copies the packages into site-packages and writes no .pth.
    venv = _venv_elsewhere(tmp_path, editable=False)
    site_packages = venv / "lib" / PY_VERSION / "site-packages"
    assert _packages_line(venv / "bin" / "fsched") == f"PACKAGES = {str(site_packages)!r}"
    run = _run([str(venv / "bin" / "fsched"), "squeue", "--help"], tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("usage: squeue")


def test_packages_that_moved_since_the_install_are_found_by_site(tmp_path):
    # The checkout the install wrote is gone; the venv's .pth names where it is now.
    venv = _venv_elsewhere(tmp_path)
    command = venv / "bin" / "fsched"
    command.write_text(command.read_text().replace(_packages_line(command), f"PACKAGES = {str(tmp_path)!r}"))
    run = _run([str(command), "sbatch", "--help"], tmp_path, {"PYTHONPROFILEIMPORTTIME": "1"})
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("usage: sbatch")
    assert "site" in _imported(run.stderr)


def test_the_fast_start_line_is_written_once(tmp_path):
    venv = _venv_elsewhere(tmp_path)
    _fast_start(venv)
    lines = (venv / "bin" / "fsched").read_text().splitlines()
    assert lines[0] == f"#!{venv / 'bin' / 'python3'} -S"
    assert lines.count(f"PACKAGES = {str(ROOT)!r}") == 1


def test_a_line_left_in_stdouts_buffer_reaches_the_pipe_at_the_fast_exit(tmp_path):
    # sbatch --version writes one short line and returns; nothing flushes it but the exit.
    run = _run([str(INSTALLED), "sbatch", "--version"], tmp_path)
    assert (run.returncode, run.stdout, run.stderr) == (0, "slurm 23.11.0 (fsched)\n", "")


def _exit_fast(code: str) -> subprocess.CompletedProcess:
    """``code`` then ``exit_fast(3)`` in a fresh interpreter started as the command is."""
    start = f"import sys; sys.path.append({str(ROOT)!r}); from cli.main import exit_fast"
    program = f"{start}\n{code}\nexit_fast(3)"
    return _run([sys.executable, "-S", "-c", program], ROOT)


def test_the_fast_exit_flushes_stdout_and_keeps_the_status():
    run = _exit_fast("print('written', end='')")
    assert (run.returncode, run.stdout) == (3, "written")


def test_the_fast_exit_leaves_atexit_callbacks_to_the_ordinary_exit():
    run = _exit_fast("import atexit; atexit.register(print, 'at exit')")
    assert (run.returncode, run.stdout) == (3, "at exit\n")


def test_the_fast_exit_waits_for_a_thread_as_the_ordinary_exit_does():
    run = _exit_fast(
        "import threading, time\n"
        "threading.Thread(target=lambda: (time.sleep(0.2), print('thread done'))).start()"
    )
    assert (run.returncode, run.stdout) == (3, "thread done\n")


def test_a_status_that_is_not_a_number_is_printed_as_the_ordinary_exit_prints_it():
    program = f"import sys; sys.path.append({str(ROOT)!r}); from cli.main import exit_fast; exit_fast('bad')"
    run = _run([sys.executable, "-S", "-c", program], ROOT)
    assert (run.returncode, run.stderr) == (1, "bad\n")
