"""A workload from the cluster's own history: the jobs that ended in the last days, as the
simulator's YAML/JSON job list (docs/simulator-workloads.md), written by the controller
from its database (the CLI's ``fsched simulate --from-history`` asks the API instead)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from cluster.models import Job

MAX_JOBS = 200_000


def history_jobs(days: float, *, now: datetime) -> list[dict[str, object]]:
    """Jobs that started and ended within ``days`` before ``now``, oldest submission first;
    each with its request and its recorded run time (end - start), submit as seconds after
    the first submission."""
    rows = list(
        Job.objects.filter(
            end_time__gte=now - timedelta(days=days), end_time__lte=now, start_time__isnull=False
        )
        .order_by("submit_time", "id")
        .values(
            "id",
            "submit_time",
            "start_time",
            "end_time",
            "user",
            "account",
            "partition",
            "qos",
            "min_nodes",
            "num_tasks",
            "cpus_per_task",
            "mem_per_node",
            "time_limit",
            "licenses",
            "name",
            "exit_code",
        )[:MAX_JOBS]
    )
    if not rows:
        return []
    first = rows[0]["submit_time"]
    out = []
    for r in rows:
        job: dict[str, object] = {
            "job_id": r["id"],
            "submit": round((r["submit_time"] - first).total_seconds(), 3),
            "run_time": round(max(0.0, (r["end_time"] - r["start_time"]).total_seconds()), 3),
            "user": r["user"],
            "nodes": r["min_nodes"],
            "ntasks": r["num_tasks"],
            "cpus_per_task": r["cpus_per_task"],
        }
        for key, field in (
            ("account", "account"),
            ("partition", "partition"),
            ("qos", "qos"),
            ("licenses", "licenses"),
            ("name", "name"),
        ):
            if r[field]:
                job[key] = r[field]
        if r["mem_per_node"]:
            job["mem"] = f"{r['mem_per_node']}M"
        if r["time_limit"]:
            job["time"] = str(r["time_limit"])
        if r["exit_code"]:
            job["exit_code"] = r["exit_code"]
        out.append(job)
    return out


def history_text(days: float, *, now: datetime) -> str:
    return json.dumps({"jobs": history_jobs(days, now=now)}, indent=None)
