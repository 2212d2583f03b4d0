"""A job's PATH: the user's entries, then Slurm's command names (#16 point 2: srun on the
job's PATH on the nodes, as on a Slurm node)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from agent.job_path import slurm_command_dirs, with_slurm_commands
from agent.jobs import Account, job_environment


def test_the_user_s_entries_come_first_and_each_directory_once() -> None:
    links, own = "/opt/fsched/slurm-bin", "/opt/fsched/bin"
    assert with_slurm_commands("/home/u/bin:/usr/bin", [links, own]) == f"/home/u/bin:/usr/bin:{links}:{own}"
    # Already there (a job submitted from inside a job): not added twice, order kept.
    assert with_slurm_commands(f"{own}:/usr/bin", [links, own]) == f"{own}:/usr/bin:{links}"
    # A job with no PATH of its own (--export=NONE): a shell's usual default first.
    assert with_slurm_commands(None, [links, own]) == f"/usr/local/bin:/usr/bin:/bin:{links}:{own}"


def test_the_directories_are_the_venv_s_links_and_fsched_s_own(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    python = tmp_path / "bin" / "python"
    assert slurm_command_dirs(str(python)) == [str(tmp_path / "bin")]  # no links made (yet)
    (tmp_path / "slurm-bin").mkdir()
    assert slurm_command_dirs(str(python)) == [str(tmp_path / "slurm-bin"), str(tmp_path / "bin")]


def test_a_job_s_environment_finds_srun_after_the_user_s_path() -> None:
    env = job_environment({"job_id": 3, "environment": {"PATH": "/home/u/bin"}}, Account(name="alice"))
    entries = env["PATH"].split(":")
    assert entries[0] == "/home/u/bin"
    assert str(Path(sys.executable).parent) in entries[1:]


def test_the_setup_s_links_run_the_command_they_are_named_after() -> None:
    """``make setup`` links Slurm's names to fsched; the agent's PATH finds them."""
    slurm_bin = Path(sys.executable).parent.parent / "slurm-bin"
    assert str(slurm_bin) in slurm_command_dirs(), "make setup makes .venv/slurm-bin"
    for name in ("sbatch", "srun", "salloc", "squeue", "scancel", "scontrol", "sinfo", "sacct"):
        assert os.path.realpath(slurm_bin / name) == os.path.realpath(Path(sys.executable).parent / "fsched")
    out = subprocess.run([slurm_bin / "sacct", "--help"], capture_output=True, text=True, check=True).stdout
    assert out.startswith("Usage: sacct")
