"""``sacct -T/--truncate``: jobs' and steps' times cut to the window (pure; ``now`` passed in).

slurmdbd does it when it reads the jobs (as_mysql_jobacct_process.c, without
``JOBCOND_FLAG_NO_TRUNC``): the window ends at ``-E`` or now, whichever is earlier; a job's
start before the window becomes the window's start, an end after it (or none yet, running or
pending) the window's end, and a job that never started starts when it ends; its Elapsed is
then end less start.  A step is cut the same way, only when the window has a start
(``-j`` without ``-S`` has none), and a step that would start after it ends gets neither.

fsched keeps a job's suspended seconds but not when they fell, so a cut Elapsed is the
shorter of the cut span and the job's whole Elapsed (exact unless a suspension fell outside
the window).
"""

from __future__ import annotations

from datetime import UTC, datetime


def _epoch(text: str | None) -> int:
    return int(datetime.fromisoformat(text).timestamp()) if text else 0


def _iso(seconds: int) -> str | None:
    return datetime.fromtimestamp(seconds, tz=UTC).isoformat() if seconds else None


def window_end(end: int | None, now: int) -> int:
    """The window's end as slurmdbd cuts to it: ``-E`` if given and past, else now."""
    return now if not end or end > now else end


def truncated(job: dict, start: int, end: int) -> dict:
    """``job`` (the accounting API's dict) with its and its steps' times cut to
    [``start``, ``end``]; ``start`` 0 is a window from the epoch."""
    job_start, job_end = _epoch(job.get("start_time")), _epoch(job.get("end_time"))
    if job_start and job_start < start:
        job_start = start
    if not job_end or job_end > end:
        job_end = end
    if not job_start:
        job_start = job_end
    out = {
        **job,
        "start_time": _iso(job_start),
        "end_time": _iso(job_end),
        "elapsed": max(0, min(job_end - job_start, int(job.get("elapsed") or 0) or job_end - job_start)),
    }
    if start:
        out["steps"] = [_step(step, start, end) for step in job.get("steps", [])]
    return out


def _step(step: dict, start: int, end: int) -> dict:
    s, e = _epoch(step.get("start_time")), _epoch(step.get("end_time"))
    if s and s < start:
        s = start
    if not s and e:
        s = e
    if not e or e > end:
        e = end
    if s and e and s > e:
        s = e = 0
    span = e - s if s else 0
    return {
        **step,
        "start_time": _iso(s),
        "end_time": _iso(e),
        "elapsed": max(0, min(span, int(step.get("elapsed") or 0) or span)),
    }
