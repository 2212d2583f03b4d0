"""The PATH a job runs with: the user's own entries first, then Slurm's command names.

On a Slurm node ``srun``, ``scontrol`` and ``squeue`` are in /usr/bin, so a batch script (and
the workflow tools that write one: submitit, parsl) calls ``srun`` by name. fsched's
equivalents are the links of ``.venv/slurm-bin`` (``make setup`` or ``make agent`` makes
them) and ``fsched`` itself, beside the agent's Python. They go after the user's entries so
that a user's own build of a command still wins, as it would on a Slurm node.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# A job with no PATH of its own (--export=NONE) would get its shell's built-in default;
# the usual directories of that default stand for it, so that ours can follow.
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"


def slurm_command_dirs(executable: str = sys.executable) -> list[str]:
    """The venv's ``slurm-bin`` (when the setup made it) and the directory of ``fsched``."""
    bin_dir = Path(executable).parent  # not resolved: a venv's python is a link out of it
    found = [bin_dir.parent / "slurm-bin", bin_dir]
    return [str(d) for d in found if d.is_dir()]


def with_slurm_commands(path: str | None, dirs: list[str] | None = None) -> str:
    """``path`` (DEFAULT_PATH when the job has none) with ``dirs`` appended, each once."""
    dirs = slurm_command_dirs() if dirs is None else dirs
    entries = (path if path is not None else DEFAULT_PATH).split(os.pathsep)
    return os.pathsep.join(entries + [d for d in dirs if d not in entries])
