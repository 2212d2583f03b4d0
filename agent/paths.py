"""Output file names of a batch job, as slurmstepd computes them (pure: no I/O).

``sbatch --output/--error/--input`` take a pattern the agent expands on the node with
:func:`slurmwords.stdio_patterns.expand` (the controller shows ``StdOut=`` with the same
function).  Relative names are relative to the job's working directory.  The default
output is ``slurm-%j.out`` (``slurm-%A_%a.out`` for array tasks); an absent error pattern
means stderr goes to the output file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from slurmwords.stdio_patterns import PatternFields, expand

DEFAULT_OUTPUT = "slurm-%j.out"
DEFAULT_ARRAY_OUTPUT = "slurm-%A_%a.out"


def resolve(path: str, work_dir: str) -> str:
    """An absolute path: ``path`` as is when absolute, else under ``work_dir``."""
    return path if os.path.isabs(path) else os.path.normpath(os.path.join(work_dir, path))


@dataclass(frozen=True)
class JobFiles:
    """Absolute file names for a job's standard streams.

    ``stderr`` is None when stderr shares the output file; ``stdin`` is None for /dev/null.
    """

    stdout: str
    stderr: str | None
    stdin: str | None


def fields_of(job: Mapping[str, Any]) -> PatternFields:
    """The pattern fields of a launch object (see docs/agent-protocol.md)."""
    return PatternFields(
        job_id=int(job["job_id"]),
        name=str(job.get("name") or ""),
        user=str(job.get("user") or ""),
        node=str(job.get("batch_host") or ""),
        array_job_id=None if job.get("array_job_id") is None else int(job["array_job_id"]),
        array_task_id=None if job.get("array_task_id") is None else int(job["array_task_id"]),
    )


def job_files(job: Mapping[str, Any]) -> JobFiles:
    """Expand and resolve ``std_out``/``std_err``/``std_in`` of a launch object."""
    fields = fields_of(job)
    work_dir = str(job.get("work_dir") or "/")
    default = DEFAULT_OUTPUT if fields.array_task_id is None else DEFAULT_ARRAY_OUTPUT
    out_pattern = job.get("std_out") or default
    stdout = resolve(expand(out_pattern, fields), work_dir)
    stderr: str | None = None
    if job.get("std_err"):
        stderr = resolve(expand(job["std_err"], fields), work_dir)
        if stderr == stdout:
            stderr = None
    stdin = resolve(expand(job["std_in"], fields), work_dir) if job.get("std_in") else None
    return JobFiles(stdout=stdout, stderr=stderr, stdin=stdin)


def appends(job: Mapping[str, Any]) -> bool:
    """Whether the output files are opened with O_APPEND: ``--open-mode=append``, and a
    run after a requeue (``run`` > 0) unless ``--open-mode=truncate`` was asked for:
    Slurm appends a requeued batch job's output to what its earlier run wrote."""
    mode = job.get("open_mode")
    return mode == "append" or (mode != "truncate" and int(job.get("run") or 0) > 0)
