"""A finished step's statistics, as Slurm's accounting keeps them (pure: no I/O).

When a step ends, slurmstepd sends slurmdbd its tasks' figures added up as
``jobacctinfo_aggregate`` adds them (each TRES's largest value with its node and task,
its smallest, its total), and sacct prints the step's Max*, Min* and Ave* fields from
them. fsched keeps, per node, the last report of the step's agent (a task's largest
figures since it started, and its current ones) and each task's figures from its reaping
(:func:`merge_task`), and adds them up with sstat's own :func:`sstat_fields.step_stats`,
so that sacct's figures of a step are the ones sstat showed last, completed to its end.

The accounting API carries the sums (:func:`to_wire`), not the tasks: a step of a
thousand tasks is one record, as in slurmdbd.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from slurmwords import sstat_fields as sf

_ZERO_TASK = {
    "pids": [],
    "rss_kb": 0,
    "max_rss_kb": 0,
    "vmem_kb": 0,
    "max_vmem_kb": 0,
    "pages": 0,
    "max_pages": 0,
    "cpu_secs": 0.0,
    "read_bytes": None,
    "max_read_bytes": None,
    "write_bytes": None,
    "max_write_bytes": None,
}


def merge_task(task: int, report: Mapping[str, Any] | None, end: Mapping[str, Any] | None) -> dict[str, Any]:
    """One task's final figures: its last report (a TaskUsage's wire form), completed by
    its figures at the end, each the larger of the two: the batch step's from the job's
    end report (``max_rss_kb``, ``cpu_secs``), an srun task's from its reaping (a
    TaskEnd's: CPU seconds as ``user_cpu_secs`` + ``system_cpu_secs``, ``pages``, and
    ``max_rss_kb`` only for a task with no report). A task with no report (it ended
    before the agent's first sample) has its end figures alone, its current RSS its
    largest."""
    out: dict[str, Any] = {**_ZERO_TASK, **(report or {}), "task": task}
    if end:
        cpu = end.get("cpu_secs")
        if cpu is None and end.get("user_cpu_secs") is not None:
            cpu = float(end["user_cpu_secs"]) + float(end.get("system_cpu_secs") or 0)
        if cpu is not None:
            out["cpu_secs"] = max(float(out["cpu_secs"]), float(cpu))
        if end.get("max_rss_kb") is not None and (report is None or end.get("cpu_secs") is not None):
            # rusage's largest RSS counts the task from the agent's fork, before its exec
            # (the agent's own pages): an srun task's samples are better, where it has any.
            # The batch step's end figure is the agent's samples' largest (``cpu_secs``).
            out["max_rss_kb"] = max(int(out["max_rss_kb"]), int(end["max_rss_kb"]))
            if report is None:
                out["rss_kb"] = out["max_rss_kb"]
        if end.get("pages") is not None:
            out["max_pages"] = max(int(out["max_pages"]), int(end["pages"]))
            if report is None:
                out["pages"] = out["max_pages"]
    return out


def node_tasks(
    reports: Iterable[Mapping[str, Any]], ends: Iterable[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """A node's tasks of the step, by task id: its last report's merged with the end figures."""
    by_report = {int(t["task"]): t for t in reports}
    by_end = {int(e["task"]): e for e in ends}
    return [merge_task(task, by_report.get(task), by_end.get(task)) for task in sorted(by_report | by_end)]


def cpu_time_of(ends: Iterable[Mapping[str, Any]], ntasks: int) -> tuple[float, float] | None:
    """(user, system) CPU seconds summed over the step's tasks, from their reaping (Slurm's
    UserCPU and SystemCPU are rusage's); None unless every task has them."""
    rows = [e for e in ends if e.get("user_cpu_secs") is not None]
    if not ntasks or len(rows) != ntasks:
        return None
    return (
        round(sum(float(e["user_cpu_secs"]) for e in rows), 6),
        round(sum(float(e.get("system_cpu_secs") or 0) for e in rows), 6),
    )


def _extremes(table: Mapping[str, sf.Extreme]) -> dict[str, list[Any]]:
    return {name: [e.value, e.node, e.task] for name, e in table.items()}


def to_wire(stats: sf.Stats, cpu: tuple[float, float] | None = None) -> dict[str, Any]:
    """The sums of a step for the accounting API (``cpu``: its user and system seconds)."""
    return {
        "ntasks": stats.ntasks,
        "nodes": list(stats.nodes),
        "in_max": _extremes(stats.in_max),
        "in_min": _extremes(stats.in_min),
        "in_tot": dict(stats.in_tot),
        "out_max": _extremes(stats.out_max),
        "out_min": _extremes(stats.out_min),
        "out_tot": dict(stats.out_tot),
        "cpu_freq": stats.cpu_freq,
        "user_cpu_secs": cpu[0] if cpu else None,
        "system_cpu_secs": cpu[1] if cpu else None,
    }


def _table(values: Mapping[str, Any]) -> dict[str, sf.Extreme]:
    return {
        str(name): sf.Extreme(int(v[0]), str(v[1]), None if v[2] is None else int(v[2]))
        for name, v in values.items()
    }


def from_wire(job_step: str, data: Mapping[str, Any]) -> sf.Stats:
    """The sums of one step of the accounting API, as sstat's figures."""
    return sf.Stats(
        job_step,
        nodes=[str(n) for n in data.get("nodes") or []],
        ntasks=int(data.get("ntasks") or 0),
        in_max=_table(data.get("in_max") or {}),
        in_min=_table(data.get("in_min") or {}),
        in_tot={str(k): int(v) for k, v in (data.get("in_tot") or {}).items()},
        out_max=_table(data.get("out_max") or {}),
        out_min=_table(data.get("out_min") or {}),
        out_tot={str(k): int(v) for k, v in (data.get("out_tot") or {}).items()},
        cpu_freq=None if data.get("cpu_freq") is None else int(data["cpu_freq"]),
    )


def max_rss_kb(data: Mapping[str, Any]) -> int | None:
    """The step's MaxRSS in KiB (its largest task's), as seff reads tres_usage_in_max."""
    top = (data.get("in_max") or {}).get(sf.MEM)
    return None if top is None else int(top[0]) // 1024


def total_cpu_secs(data: Mapping[str, Any]) -> float | None:
    """The step's TotalCPU: its tasks' CPU time added up."""
    if data.get("user_cpu_secs") is not None:
        return round(float(data["user_cpu_secs"]) + float(data.get("system_cpu_secs") or 0), 6)
    total = (data.get("in_tot") or {}).get(sf.CPU)
    return None if total is None else int(total) / sf.CPU_TIME_ADJ


__all__ = ["cpu_time_of", "from_wire", "max_rss_kb", "merge_task", "node_tasks", "to_wire", "total_cpu_secs"]
