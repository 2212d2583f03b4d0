"""``scontrol write batch_script JOBID [FILE|-]``: a job's batch script, written to
``slurm-<jobid>.sh`` (or FILE; ``-`` for standard output), as Slurm's scontrol does.

Only the job's owner, its account's coordinators and administrators get it (the
controller refuses everyone else with "Access/permission denied")."""

from __future__ import annotations

import sys

USAGE = "scontrol write batch_script <job_id> [<filename>|-]\n"


def cmd_write(client, words: list[str], opts) -> int:
    from cli.client import ApiError  # noqa: PLC0415

    if not words or words[0].lower() != "batch_script" or len(words) not in (2, 3):
        sys.stderr.write(f"invalid write command; usage: {USAGE}")
        return 1
    job = words[1]
    if not (job.isascii() and job.isdigit()):
        sys.stderr.write(f"Invalid job id specified: {job}\n")
        return 1
    target = words[2] if len(words) == 3 else f"slurm-{int(job)}.sh"
    try:
        answer = client.get(f"/api/jobs/{int(job)}/script/")
    except ApiError as exc:
        message = "Invalid job id specified" if exc.status == 404 else exc.message
        sys.stderr.write(f"job script retrieval failed: {message}\n")
        return 1
    script = answer.get("script") or ""
    if not script:
        sys.stderr.write("job script retrieval failed: No batch script for job\n")
        return 1
    if target == "-":
        sys.stdout.write(script)
        return 0
    try:
        with open(target, "x", encoding="utf-8") as handle:
            handle.write(script)
    except OSError as exc:
        sys.stderr.write(f"failed to write {target}: {exc.strerror}\n")
        return 1
    sys.stdout.write(f"batch script for job {int(job)} written to {target}\n")
    return 0
