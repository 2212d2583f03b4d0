"""``scontrol wait_job JOBID``: wait until a running job's nodes are ready for it (booted
by power saving, its prolog done), as prolog scripts and wrappers around salloc use it.

As src/scontrol/info_job.c's ``_wait_nodes_ready``: the job id read with ``atoi``; one
question to the controller every 3 seconds for at most five times SuspendTimeout plus
ResumeTimeout (none when either is 0: power saving off); ``Waiting for nodes to boot``
after the first answer that is not ready yet; then ``Nodes are ready for job N`` (exit 0),
``Job N no longer running`` (the job is not running: pending, ended) or ``Problem running
job N`` (an unknown job, or still not ready at the end), exit 1. These are ``info()``
lines: on stderr after ``scontrol: ``, printed with -Q too.

A CONFIGURING job is one whose nodes boot or whose prolog runs (slurmctld answers EAGAIN
for it); a RUNNING or SUSPENDED job is past both in fsched, so it is ready.
"""

from __future__ import annotations

import sys
import time

from slurmwords.c_numbers import atoi

POLL_SLEEP = 3  # seconds, as scontrol's
READY = frozenset({"RUNNING", "SUSPENDED"})
# Slurm's defaults when slurm.conf leaves them out.
DEFAULT_SUSPEND_TIMEOUT = 30
DEFAULT_RESUME_TIMEOUT = 60

sleep = time.sleep


def _seconds(options: dict, name: str, default: int) -> int:
    value = options.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _info(text: str) -> None:
    sys.stderr.write(f"scontrol: {text}\n")


def _state(client, job_id: int) -> str | None:
    """The job's state; "" when the controller cannot answer now (asked again), None when
    it has no such job (slurmctld's READY_JOB_FATAL)."""
    from cli.client import ApiError  # noqa: PLC0415

    try:
        job = client.get(f"/api/jobs/{job_id}/")
    except ApiError as exc:
        return None if exc.status == 404 else ""
    except OSError:
        return ""
    return str(job.get("state") or "") if isinstance(job, dict) else ""


def cmd_wait_job(client, words: list[str], opts) -> int:
    if len(words) != 1:
        if not opts.quiet:
            sys.stderr.write(f"too {'few' if not words else 'many'} arguments for keyword:wait_job\n")
        return 1
    job_id = atoi(words[0])
    if job_id <= 0:
        sys.stderr.write(f"Invalid job_id {words[0]}\n")
        return 1
    options = (client.get("/api/config/") or {}).get("options") or {}
    suspend = _seconds(options, "SuspendTimeout", DEFAULT_SUSPEND_TIMEOUT)
    resume = _seconds(options, "ResumeTimeout", DEFAULT_RESUME_TIMEOUT)
    if not suspend or not resume:
        return 0  # power saving off: nodes never boot for a job
    max_delay = (suspend + resume) * 5  # room for ResumeRate's queue, as scontrol's
    waited = 0
    attempt = 0
    state: str | None = ""
    while waited < max_delay:
        if attempt:
            if attempt == 1:
                _info("Waiting for nodes to boot")
            sleep(POLL_SLEEP)
            waited += POLL_SLEEP
        attempt += 1
        state = _state(client, job_id)
        if state is None:
            break
        if state in {"", "CONFIGURING"}:
            continue
        if state in READY:
            _info(f"Nodes are ready for job {job_id}")
            return 0
        _info(f"Job {job_id} no longer running")
        return 1
    _info(f"Problem running job {job_id}")
    return 1
