"""What the limits pages show besides the account tree's bars: an association's decayed
usage per TRES with its unit, and each QOS with the limits set on it."""

from __future__ import annotations

from typing import Any

from limits.core.policy import QOS
from limits.core.usage import UsageRecord
from slurmwords.durations import format_minutes_long
from slurmwords.tres import format_count, format_tres, sort_key

# sacctmgr's QOS column names for the limits a QOS sets, in sacctmgr show qos's order.
QOS_LIMITS = (
    ("GrpTRES", "grp_tres"),
    ("GrpTRESMins", "grp_tres_mins"),
    ("GrpTRESRunMins", "grp_tres_run_mins"),
    ("GrpJobs", "grp_jobs"),
    ("GrpJobsAccrue", "grp_jobs_accrue"),
    ("GrpSubmit", "grp_submit_jobs"),
    ("GrpWall", "grp_wall"),
    ("MaxTRES", "max_tres_per_job"),
    ("MaxTRESPerNode", "max_tres_per_node"),
    ("MaxTRESMins", "max_tres_mins_per_job"),
    ("MaxWall", "max_wall_duration_per_job"),
    ("MaxTRESPU", "max_tres_per_user"),
    ("MaxJobsPU", "max_jobs_per_user"),
    ("MaxSubmitPU", "max_submit_jobs_per_user"),
    ("MaxTRESPA", "max_tres_per_account"),
    ("MaxJobsPA", "max_jobs_per_account"),
    ("MaxSubmitPA", "max_submit_jobs_per_account"),
    ("MaxJobsAccruePU", "max_jobs_accrue_per_user"),
    ("MaxJobsAccruePA", "max_jobs_accrue_per_account"),
    ("MinTRES", "min_tres_per_job"),
    ("MinPrioThres", "min_prio_threshold"),
)

# The unit of one minute of each TRES; memory is counted in MB and printed with its own
# unit (format_count), so its minutes read "2G-min".
_UNITS = {"cpu": "CPU-min", "node": "node-min", "billing": "billing-min", "energy": "J-min"}


def tres_minutes(record: UsageRecord) -> list[str]:
    """GrpTRESRaw as a person reads it: each TRES with decayed minutes used, with units
    (``cpu: 42 CPU-min``, ``mem: 2G-min``, ``gres/gpu: 3 gpu-min``); only those used."""
    out = []
    for name in sorted(record.tres_seconds, key=sort_key):
        minutes = int(record.tres_seconds[name] // 60)
        if minutes <= 0:
            continue
        if name in ("mem", "vmem"):
            out.append(f"{name}: {format_count(name, minutes)}-min")
        else:
            unit = _UNITS.get(name, f"{name.rpartition('/')[2]}-min")
            out.append(f"{name}: {minutes} {unit}")
    return out


def _limit_text(column: str, value: Any) -> str:
    if isinstance(value, dict):
        return format_tres(value)
    if "wall" in column:
        return format_minutes_long(value, unlimited="")
    return str(value)


def qos_rows(qos: list[QOS]) -> list[dict[str, Any]]:
    """Each QOS with its priority, flags, usage factor and the limits set on it, as
    ``Name=value`` in sacctmgr's spelling, TRES with units (``GrpTRES=cpu=64,mem=4G``)."""
    rows = []
    for q in sorted(qos, key=lambda q: q.name):
        limits = []
        for label, column in QOS_LIMITS:
            value = getattr(q.limits, column)
            if value is None or value == {}:
                continue
            limits.append(f"{label}={_limit_text(column, value)}")
        rows.append(
            {
                "name": q.name,
                "priority": q.priority,
                "flags": ",".join(sorted(q.flags)),
                "usage_factor": q.usage_factor,
                "limits": limits,
            }
        )
    return rows

