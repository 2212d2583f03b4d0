"""Output file names of a batch job, as slurmstepd computes them (pure: no I/O).

``sbatch --output/--error/--input`` take a pattern the agent expands on the node:

    %j  job id               %x  job name            %u  user name
    %N  batch host           %A  array master job id %a  array task id
    %%  a literal percent

A number between ``%`` and a numeric specifier zero-pads it (``%3a`` → ``007``).
As in Slurm, outside arrays ``%A`` is the job id and ``%a`` is ``4294967294`` (NO_VAL),
a pattern containing a backslash is not expanded (the backslashes are dropped),
and an unknown specifier is kept as written. Relative names are relative to the
job's working directory. The default output is ``slurm-%j.out`` (``slurm-%A_%a.out``
for array tasks); an absent error pattern means stderr goes to the output file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Slurm's NO_VAL: what %a expands to for a job that is not an array task.
NO_VAL = 4294967294
# A zero-padding width larger than this is surely a typo; Slurm caps it too.
MAX_WIDTH = 10

DEFAULT_OUTPUT = "slurm-%j.out"
DEFAULT_ARRAY_OUTPUT = "slurm-%A_%a.out"


@dataclass(frozen=True)
class PatternFields:
    """The values a pattern can refer to."""

    job_id: int
    name: str = ""
    user: str = ""
    node: str = ""
    array_job_id: int | None = None
    array_task_id: int | None = None

    @property
    def is_array(self) -> bool:
        return self.array_task_id is not None


def expand_pattern(pattern: str, fields: PatternFields) -> str:
    """Expand ``%`` specifiers in one file name pattern."""
    if "\\" in pattern:
        return pattern.replace("\\", "")
    numbers = {
        "j": fields.job_id,
        "A": fields.array_job_id if fields.is_array and fields.array_job_id is not None else fields.job_id,
        "a": fields.array_task_id if fields.is_array else NO_VAL,
    }
    strings = {"x": fields.name, "u": fields.user, "N": fields.node}
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c != "%":
            out.append(c)
            i += 1
            continue
        j = i + 1
        while j < n and pattern[j].isdigit():
            j += 1
        if j >= n:  # a trailing "%" or "%3": nothing to expand
            out.append(pattern[i:])
            break
        spec = pattern[j]
        width = min(int(pattern[i + 1 : j]), MAX_WIDTH) if j > i + 1 else 0
        if spec == "%" and j == i + 1:
            out.append("%")
        elif spec in numbers:
            out.append(str(numbers[spec]).zfill(width))
        elif spec in strings:
            out.append(strings[spec])
        else:
            out.append(pattern[i : j + 1])
        i = j + 1
    return "".join(out)


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
    out_pattern = job.get("std_out") or (DEFAULT_ARRAY_OUTPUT if fields.is_array else DEFAULT_OUTPUT)
    stdout = resolve(expand_pattern(out_pattern, fields), work_dir)
    stderr: str | None = None
    if job.get("std_err"):
        stderr = resolve(expand_pattern(job["std_err"], fields), work_dir)
        if stderr == stdout:
            stderr = None
    stdin = resolve(expand_pattern(job["std_in"], fields), work_dir) if job.get("std_in") else None
    return JobFiles(stdout=stdout, stderr=stderr, stdin=stdin)
