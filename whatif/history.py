"""A workload from the cluster's own history: the jobs that ended in the last days, as
the simulator's records, written as its JSON job list (docs/simulator-workloads.md) by the
controller from its database (the CLI's ``fsched simulate --from-history`` asks the API
instead)."""

from __future__ import annotations

from datetime import datetime, timedelta

from cluster.models import Job
from simulator.records import SimJob
from simulator.workloads.joblist import job_list_json

MAX_JOBS = 200_000
_FIELDS = (
    "id", "submit_time", "start_time", "end_time", "user", "account", "partition", "qos", "min_nodes",
    "num_tasks", "cpus_per_task", "mem_per_node", "time_limit", "licenses", "name", "exit_code",
)  # fmt: skip


def history_jobs(days: float, *, now: datetime) -> list[SimJob]:
    """Jobs that started and ended within ``days`` before ``now``, oldest submission first;
    each with its request and its recorded run time (end - start), submit as seconds after
    the first submission."""
    ended = Job.objects.filter(end_time__gte=now - timedelta(days=days), end_time__lte=now)
    rows = list(
        ended.filter(start_time__isnull=False)
        .order_by("submit_time", "id")
        .values(*_FIELDS)[:MAX_JOBS]
    )
    if not rows:
        return []
    first = rows[0]["submit_time"]
    return [
        SimJob(
            job_id=r["id"],
            submit=round((r["submit_time"] - first).total_seconds(), 3),
            run_time=round(max(0.0, (r["end_time"] - r["start_time"]).total_seconds()), 3),
            user=r["user"],
            account=r["account"],
            partition=r["partition"],
            qos=r["qos"],
            nodes=r["min_nodes"],
            ntasks=r["num_tasks"],
            cpus_per_task=r["cpus_per_task"],
            mem_mb=r["mem_per_node"] or 0,
            time_limit=r["time_limit"] or None,
            licenses=r["licenses"],
            name=r["name"],
            exit_code=r["exit_code"],
        )
        for r in rows
    ]


def history_text(days: float, *, now: datetime) -> str:
    return job_list_json(history_jobs(days, now=now))
