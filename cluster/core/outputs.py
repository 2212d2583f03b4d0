"""The output file names ``scontrol show job`` prints (``StdOut=``), expanded as the agent
expands them where the job runs (:mod:`slurmwords.stdio_patterns`)."""

from __future__ import annotations

import os

from slurmwords.stdio_patterns import PatternFields, expand


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
    fields = PatternFields(
        job_id=job_id,
        name=name,
        user=user,
        node=node,
        array_job_id=array_job_id,
        array_task_id=array_task_id,
    )
    expanded = expand(pattern, fields)
    return expanded if os.path.isabs(expanded) else os.path.join(work_dir, expanded)
