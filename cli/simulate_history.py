"""``fsched simulate --from-history DAYS``: the cluster's own finished jobs as a workload.

The jobs come from the accounting API that ``fsched sacct`` reads (``GET
/api/accounting/jobs/``, page by page with its cursor): every user's jobs that ended in the
last DAYS days, in a final state.  Each becomes a line of a job list
(docs/simulator-workloads.md) with its request as sbatch took it (nodes, tasks, CPUs per
task, memory per node, time limit, licenses) and what happened: its submit time as an
offset from the first submission, its run time (end - start) and exit code.  A job that
never started (cancelled while pending) has no run time and is left out; dependencies are
left out too, as a finished job's dependency no longer names what it waited for.

Written here as plain JSON, not with ``simulator.workloads``: the CLI imports neither
Django nor the simulator (the import-linter contracts), and the format is the one that
package reads.
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path

from cli import sacct
from slurmwords.durations import format_minutes
from slurmwords.memory import format_memory_mb

# Slurm's final job states: a job that ended in one of them during the window.
FINAL_STATES = (
    "COMPLETED",
    "FAILED",
    "TIMEOUT",
    "CANCELLED",
    "NODE_FAIL",
    "PREEMPTED",
    "BOOT_FAIL",
    "DEADLINE",
    "OUT_OF_MEMORY",
)
DAY = 86400


def _epoch(iso: str | None) -> float | None:
    return datetime.fromisoformat(iso).timestamp() if iso else None


def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else round(value, 3)


def history_query(days: float, now: float) -> dict[str, str]:
    """The accounting query: every user's jobs that ended in the last ``days`` days."""
    if not days > 0:
        raise ValueError(f"--from-history: {days!r} is not a number of days (more than 0)")
    return {
        "all_users": "1",
        "state": ",".join(FINAL_STATES),
        "start": str(int(now - days * DAY)),
        "end": str(int(now)),
    }


def job_row(job: dict, first_submit: float) -> dict:
    """One accounting job as a job-list entry (sbatch-style fields, defaults left out)."""
    request = job.get("request") or {}
    submit, start, end = (_epoch(job.get(k)) for k in ("submit_time", "start_time", "end_time"))
    nodes = request.get("min_nodes") or job.get("nnodes") or 1
    # A controller without "request": the figures sacct prints (ReqCPUS, ReqMem).
    ntasks = request.get("num_tasks") or job.get("req_cpus") or 1
    cpus_per_task = request.get("cpus_per_task") or 1
    mem = request.get("mem_per_node") if request else (job.get("req_mem_mb") or 0) // nodes
    row: dict = {
        "job_id": job["job_id"],
        "submit": _number((submit or 0) - first_submit),
        "run_time": _number(max(0.0, (end or 0) - (start or 0))),
        "user": job["user"],
    }
    for name in ("account", "partition", "qos"):
        if job.get(name):
            row[name] = job[name]
    for name, value in (("nodes", nodes), ("ntasks", ntasks), ("cpus_per_task", cpus_per_task)):
        if value != 1:
            row[name] = value
    if mem:
        row["mem"] = format_memory_mb(mem)
    if job.get("time_limit") is not None:
        row["time"] = format_minutes(job["time_limit"])
    if request.get("licenses"):
        row["licenses"] = request["licenses"]
    if job.get("name"):
        row["name"] = job["name"]
    if job.get("exit_code"):
        row["exit_code"] = job["exit_code"]
    return row


def history_workload(client, days: float, out_path: str | Path, *, now: float | None = None) -> Path:
    """Write the finished jobs of the last ``days`` days as a JSON job list at ``out_path``.

    ``client`` is a :class:`cli.client.Client` (its errors pass through: ``ApiError``,
    ``ConnectError``).  Returns the path written; a window with no finished job writes an
    empty list.
    """
    params = history_query(days, time.time() if now is None else now)
    ran = [
        job
        for page in sacct.pages(client, params)
        for job in page
        if job.get("start_time") and job.get("end_time") and job.get("submit_time")
    ]
    first = min((_epoch(j["submit_time"]) for j in ran), default=0.0)
    rows = sorted((job_row(j, first or 0.0) for j in ran), key=lambda r: (r["submit"], r["job_id"]))
    body = ",\n".join(json.dumps(r, separators=(", ", ": ")) for r in rows)
    path = Path(out_path)
    path.write_text('{"jobs": [\n' + body + ("\n" if rows else "") + "]}\n", encoding="utf-8")
    return path
