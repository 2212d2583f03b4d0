"""sacct's step statistics fields (pure): AveCPU, MaxRSS, MinCPUNode ... as src/sacct/print.c
prints them from a step's sums (the accounting API's ``stats``, slurmwords.step_statistics).

A job's own line leaves them empty, as sacct's ``_get_tres_cnt`` does for a job, and so
does a step with no statistics (still running: slurmstepd sends them at its end).  The
figures are sstat's (slurmwords.sstat_fields); sacct prints them its own way where it
differs from sstat: sizes in ``--units`` when given; disk figures in megabytes, as
print.c divides them by 2^20 before ``_print_small_double`` (``1.43M``, ``0.25M``,
``3G``); ConsumedEnergy 0 on every line, as without an energy plugin (a job's line reads
its AllocTRES energy, which is none).  TotalCPU, UserCPU and SystemCPU of a job's line
are its ended steps' added up, as sacct's options.c adds them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from slurmwords import sstat_fields as sf
from slurmwords import step_statistics

UNITS = "KMGTP"

# (job, step, options) -> text; Options is sacct_fields' (``units``).
Getter = Callable[[dict, "dict | None", Any], "str | None"]


def convert(value: float, unit: int, want: str | None) -> str:
    """Slurm's ``convert_num_unit`` of ``value`` counted in the ``unit``-th of ("", K, M,
    G, T, P): without ``--units``, exactly (a unit up while the value is a whole number of
    half units: ``1.50M``); with ``--units=X``, in X (``3.91G``)."""
    return sf.convert_num(value, unit=unit) if want is None else sf.convert_to(value, unit, want)


def stats_of(job: dict, step: dict | None) -> sf.Stats | None:
    """The step's figures (read once per step), None for a job's line or a step without."""
    if step is None or not step.get("stats"):
        return None
    cached = step.get("_stats")
    if cached is None:
        name = f"{job['job_id']}.{step['step_id']}"
        cached = step["_stats"] = step_statistics.from_wire(name, step["stats"])
    return cached


def _value(stats: sf.Stats, table: str, name: str) -> int | None:
    if table == "ave":
        return stats.ave(stats.in_tot).get(name)
    if table == "ave_out":
        return stats.ave(stats.out_tot).get(name)
    found = getattr(stats, table).get(name)
    return None if found is None else found.value


def size(table: str, name: str) -> Getter:
    """MaxRSS, AveVMSize, MaxPages ...: ``convert_num_unit`` of the figure."""

    def get(job: dict, step: dict | None, opts: Any) -> str | None:
        stats = stats_of(job, step)
        value = None if stats is None else _value(stats, table, name)
        return None if value is None else convert(value, 0, opts.units)

    return get


def disk(table: str) -> Getter:
    """MaxDiskRead, AveDiskWrite ...: megabytes, ``_print_small_double``'s."""

    def get(job: dict, step: dict | None, opts: Any) -> str | None:
        stats = stats_of(job, step)
        value = None if stats is None else _value(stats, table, sf.DISK)
        if value is None:
            return None
        mb = value / (1 << 20)
        if mb > 1:
            return convert(mb, 2, opts.units)
        return f"{mb:.2f}M" if mb > 0 else "0"

    return get


def where(table: str, name: str, what: str) -> Getter:
    """Max*Node, Max*Task, MinCPUNode, MinCPUTask: where the figure was."""

    def get(job: dict, step: dict | None, _opts: Any) -> str | None:
        stats = stats_of(job, step)
        return None if stats is None else sf.where_value(stats, table, name, what)

    return get


def cpu(table: str) -> Getter:
    """AveCPU, MinCPU: whole seconds, ``_elapsed_time``'s (``00:01:05``)."""

    def get(job: dict, step: dict | None, _opts: Any) -> str | None:
        stats = stats_of(job, step)
        value = None if stats is None else _value(stats, table, sf.CPU)
        return None if value is None else sf.elapsed(value)

    return get


def cpu_freq(job: dict, step: dict | None, opts: Any) -> str | None:
    """AveCPUFreq: the tasks' mean, kilo by 1000 and converted as far as it goes."""
    stats = stats_of(job, step)
    if stats is None or stats.cpu_freq is None or not stats.ntasks:
        return None
    value = stats.cpu_freq / stats.ntasks
    if opts.units is None or int(value) == 0:
        return sf.convert_kilo(value)
    unit, target = 1, UNITS.index(opts.units) + 1
    while unit < target:
        value, unit = value / 1000, unit + 1
    while unit > target:
        value, unit = value * 1000, unit - 1
    letter = UNITS[unit - 1] if unit else ""
    return f"{int(value)}{letter}" if int(value) == value else f"{value:.2f}{letter}"


def tres(table: str, how: str) -> Getter:
    """TRESUsageIn*/Out*: ``slurmdb_make_tres_string_from_simple``'s lists, as print.c asks
    for them: figures with the BYTES flag (cpu a time, sizes converted, in ``--units`` when
    given); nodes by name; task ids as plain numbers (no BYTES flag: cpu's too)."""

    def get(job: dict, step: dict | None, opts: Any) -> str | None:
        stats = stats_of(job, step)
        if stats is None:
            return None
        if how == "ave":
            return sf.tres_text(stats.ave(getattr(stats, table)), noconvert=False, units=opts.units)
        if how == "tot":
            return sf.tres_text(getattr(stats, table), noconvert=False, units=opts.units)
        values: dict[str, sf.Extreme] = getattr(stats, table)
        if how == "node":
            return sf.node_text(values)
        if how == "task":
            tasks = {name: e.task for name, e in values.items() if e.task is not None}
            return ",".join(f"{name}={tasks[name]}" for name in sorted(tasks)) or None
        return sf.tres_text({k: e.value for k, e in values.items()}, noconvert=False, units=opts.units)

    return get


def energy(_job: dict, _step: dict | None, _opts: Any) -> str:
    return "0"


def _ended_steps(job: dict) -> list[dict]:
    return [s for s in job.get("steps") or [] if s.get("stats") or s.get("total_cpu_secs") is not None]


def cpu_seconds(key: str) -> Callable[[dict, dict | None], float | None]:
    """A step's ``key`` (total, user or system CPU seconds); a job's: its steps' summed."""

    def get(job: dict, step: dict | None) -> float | None:
        if step is not None:
            return _step_cpu(step, key)
        values = [_step_cpu(s, key) for s in _ended_steps(job)]
        kept = [v for v in values if v is not None]
        if not kept:
            return job.get(key) if key == "total_cpu_secs" else None
        return round(sum(kept), 6)

    return get


def _step_cpu(step: dict, key: str) -> float | None:
    if key == "total_cpu_secs":
        return step.get(key)
    stats = step.get("stats") or {}
    return stats.get(key)


__all__ = ["convert", "cpu", "cpu_freq", "cpu_seconds", "disk", "energy", "size", "stats_of", "tres", "where"]
