"""What the limits pages show besides the account tree's bars: an association's decayed
usage per TRES with its unit, and each QOS with the limits set on it."""

from __future__ import annotations

from typing import Any

from limits.core.policy import QOS
from limits.core.usage import UsageRecord
from limits.selectors import QOS_COLUMNS, time_str
from slurmwords.tres import format_count, format_tres, sort_key

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
        return time_str(value)
    return str(value)


def qos_rows(qos: list[QOS]) -> list[dict[str, Any]]:
    """Each QOS with its priority, flags, usage factor and the limits set on it, as
    ``Name=value`` in sacctmgr's spelling, TRES with units (``GrpTRES=cpu=64,mem=4G``)."""
    rows = []
    for q in sorted(qos, key=lambda q: q.name):
        limits = []
        for label, column in QOS_COLUMNS:
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

