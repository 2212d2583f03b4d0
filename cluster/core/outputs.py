"""Expansion of sbatch's output file patterns (pure; the agent has the same rules)."""

from __future__ import annotations

import os
import re

_PATTERN = re.compile(r"%(\d*)([%AajxuNn])")


def expand_output_path(
    pattern: str,
    *,
    job_id: int,
    name: str,
    user: str,
    node: str,
    array_job_id: int | None,
    array_task_id: int | None,
    work_dir: str,
) -> str:
    def sub(match: re.Match[str]) -> str:
        width, code = match.group(1), match.group(2)
        value: str | int
        if code == "%":
            return "%"
        if code == "A":
            value = array_job_id if array_job_id is not None else job_id
        elif code == "a":
            value = array_task_id if array_task_id is not None else 4294967294
        elif code == "j":
            value = job_id
        elif code == "x":
            value = name
        elif code == "u":
            value = user
        elif code in ("N", "n"):
            value = node if code == "N" else 0
        else:
            return match.group(0)
        if width and isinstance(value, int):
            return str(value).zfill(int(width))
        return str(value)

    expanded = _PATTERN.sub(sub, pattern)
    return expanded if os.path.isabs(expanded) else os.path.join(work_dir, expanded)
