"""``sacct -D``: the earlier runs of requeued jobs as accounting records (cluster/run_models.py).

Slurm's database holds one record per run, and without ``--duplicates`` slurmdbd keeps each
job's last only; with it, every record that matches the selection, a job's in the order it
was submitted (``as_mysql_jobacct_process.c``).  fsched's job row is the last run, so
``-D`` adds the earlier runs kept at each requeue.  A run is matched on its own fields as a
job is (its state, its times, its partition...), and on its job's (user, ids, visibility).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import Q

from cluster import accounting, visibility
from cluster.core import job_steps
from cluster.models import ClusterConfig, Job
from cluster.run_models import JobRun


def earlier_runs(
    *, viewer: Any, filters: accounting.Filters, after: int, upto: int | None, now: datetime
) -> list[dict[str, Any]]:
    """The earlier runs that match, of the jobs with ids in ``(after, upto]`` (no bound
    above for None: the last page), as the accounting API's job records, by job and run."""
    jobs = Job.objects.filter(visibility.visible_jobs(viewer))
    if filters.job_ids is not None:
        jobs = jobs.filter(filters.job_ids)
    if filters.users:
        jobs = jobs.filter(user__in=filters.users)
    elif not filters.all_users and viewer.get_username() != accounting.ROOT:
        jobs = jobs.filter(user=viewer.get_username())
    runs = JobRun.objects.filter(job__in=jobs.values("pk"), job_id__gt=after)
    if upto is not None:
        runs = runs.filter(job_id__lte=upto)
    for values, name in (
        (filters.accounts, "account"),
        (filters.partitions, "partition"),
        (filters.names, "name"),
        (filters.qos, "qos"),
    ):
        if values:
            runs = runs.filter(Q(**{f"{name}__in": values}))
    if filters.time_limit is not None:
        runs = runs.filter(accounting.time_limit_q(*filters.time_limit))
    # The same fields as a job's: slurmdbd's window and state match holds for a run as is.
    runs = runs.filter(accounting.window_q(filters, now))
    found = list(runs.select_related("job").order_by("job_id", "run"))
    if filters.nodes:
        found = [run for run in found if accounting.ran_on(run, filters.nodes)]  # type: ignore[arg-type]
    found = [r for r in found if accounting.in_range(r.nnodes, filters.nnodes)]
    found = [r for r in found if accounting.in_range(r.alloc_cpus, filters.ncpus)]
    cluster = ClusterConfig.current().cluster_name
    return [run_record(run, viewer, now, cluster) for run in found]


def run_record(run: JobRun, viewer: Any, now: datetime, cluster: str) -> dict[str, Any]:
    """One earlier run as a job record: the job's own fields, the run's where a run has
    its own."""
    out = accounting.job_record(run.job, viewer, {}, now, cluster)
    out.update(
        {
            "name": run.name,
            "partition": run.partition,
            "account": run.account,
            "qos": run.qos,
            "state": run.state,
            "cancelled_by": None,
            "reason": run.reason,
            "exit_code": run.exit_code,
            "exit_signal": run.exit_signal,
            "submit_time": run.submit_time.isoformat(),
            "eligible_time": run.eligible_time.isoformat() if run.eligible_time else None,
            "start_time": run.start_time.isoformat(),
            "end_time": run.end_time.isoformat(),
            "elapsed": job_steps.elapsed_seconds(run.start_time, run.end_time, run.paused_seconds, now),
            "time_limit": run.time_limit,
            "nnodes": run.nnodes,
            "alloc_cpus": run.alloc_cpus,
            "alloc_tres": run.alloc_tres,
            "node_list": run.node_list,
            "restarts": run.run,
            "suspended": run.paused_seconds,
            "max_rss_kb": run.max_rss_kb,
            "total_cpu_secs": run.total_cpu_secs,
            "steps": list(run.steps),
        }
    )
    return out


def with_earlier_runs(jobs: list[dict[str, Any]], runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A page's job records and earlier runs in slurmdbd's order: by job id, a job's runs
    in the order they were submitted (its last run, the job row, last)."""
    merged = [(j["job_id"], 0, i, j) for i, j in enumerate(runs)]
    merged += [(j["job_id"], 1, i, j) for i, j in enumerate(jobs)]
    return [record for *_, record in sorted(merged, key=lambda m: m[:3])]
