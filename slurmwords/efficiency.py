"""A job's efficiency as Slurm's ``seff`` (contribs/seff) works it out and prints it, from one
job of the accounting API (``GET /api/accounting/jobs/``, docs/api.md): ``fsched seff`` prints
:func:`report`, the console's job page draws :func:`of_job`'s figures as bars.

seff's arithmetic, kept as it is so that the numbers match a Slurm site's:

- CPU time is the steps' TotalCPU added up (their microseconds added, then rounded once);
- memory is the largest step MaxRSS (one task's peak) times that step's task count, an
  estimate unless that step ran one task; a step whose MaxRSS equals an earlier one's
  does not replace it (seff's ``<``);
- efficiency is over the job's allocation: CPUs x wall-clock time, and the allocated
  memory (AllocTRES mem); a job without CPUs or nodes counts one of each.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# seff's own version, which ``seff -v`` prints (contribs/seff/seff).
SEFF_VERSION = "2.1"
_MEM_UNITS = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024**2, "P": 1024**3}
_PREFIXES = ("K", "M", "G", "T", "P", "E")


@dataclass(frozen=True)
class Efficiency:
    job_id: int
    array_job_id: str  # "N_T" for an array task, "" otherwise
    cluster: str
    user: str
    group: str
    state: str
    exit_status: int
    ncpus: int
    nnodes: int
    ntasks: int  # the tasks of the step with the largest MaxRSS (0: no step reported one)
    req_mem_kb: float
    per_node: bool  # memory asked per node (--mem), not per CPU (--mem-per-cpu)
    cpu_secs: int
    walltime: int
    mem_kb: float
    alloc_mem_kb: float

    @property
    def core_walltime(self) -> int:
        return self.walltime * self.ncpus

    @property
    def cpu_efficiency(self) -> float:
        return self.cpu_secs / self.core_walltime * 100 if self.core_walltime else 0.0

    @property
    def mem_efficiency(self) -> float:
        return self.mem_kb / self.alloc_mem_kb * 100 if self.alloc_mem_kb else 0.0

    @property
    def pending(self) -> bool:
        return self.state == "PENDING"

    @property
    def cpu_used_text(self) -> str:
        return time_text(self.cpu_secs)

    @property
    def walltime_text(self) -> str:
        return time_text(self.walltime)

    @property
    def cpu_text(self) -> str:
        """CPU Efficiency's words: ``36.25% of 04:08:20 core-walltime``."""
        return f"{self.cpu_efficiency:.2f}% of {time_text(self.core_walltime)} core-walltime"

    @property
    def mem_used_text(self) -> str:
        """Memory Utilized's words: an estimate unless the step ran one task."""
        return kb_text(self.mem_kb) + ("" if self.ntasks == 1 else " (estimated maximum)")

    @property
    def mem_text(self) -> str:
        """Memory Efficiency's words: ``30.00% of 1000.00 MB``, with the share per node (or
        per core with --mem-per-cpu) when the step ran several tasks."""
        whole = f"{self.mem_efficiency:.2f}% of {kb_text(self.alloc_mem_kb)}"
        if self.ntasks == 1:
            return whole
        if self.per_node:
            return f"{whole} ({kb_text(self.alloc_mem_kb / self.nnodes)}/node)"
        return f"{whole} ({kb_text(self.alloc_mem_kb / self.ncpus)}/core)"


def tres_mem_mb(tres: str) -> float:
    """``mem=`` of a TRES list (``cpu=2,mem=4000M,node=1``) in MB; 0 when it has none."""
    for item in (tres or "").split(","):
        name, _, value = item.partition("=")
        if name == "mem" and value:
            unit = value[-1].upper()
            number = value[:-1] if unit in _MEM_UNITS else value
            try:
                return float(number) * _MEM_UNITS.get(unit, 1)
            except ValueError:
                return 0.0
    return 0.0


def _step_usage(steps: list[dict]) -> tuple[int, float, int]:
    """(CPU seconds, memory in KB, its step's tasks) over the job's steps, as seff adds them."""
    secs = usecs = 0
    mem, ntasks = 0.0, 0
    for step in steps:
        total = float(step.get("total_cpu_secs") or 0)
        whole = math.floor(total)
        secs += whole
        usecs += round((total - whole) * 1_000_000)
        rss = step.get("max_rss_kb")
        if rss is not None and mem < rss:
            mem, ntasks = float(rss), int(step.get("ntasks") or 0)
    return secs + int(usecs / 1_000_000 + 0.5), mem * ntasks, ntasks


def of_job(job: dict, group: str = "") -> Efficiency:
    """The figures of one accounting job; ``group``: its user's group name (seff's getgrgid)."""
    ncpus = int(job.get("alloc_cpus") or 0) or 1
    nnodes = (int(job.get("nnodes") or 0) if job.get("start_time") else 0) or 1
    cpu_secs, mem_kb, ntasks = _step_usage(job.get("steps") or [])
    array = job.get("array_job_id")
    return Efficiency(
        job_id=int(job["job_id"]),
        array_job_id=f"{array}_{job.get('array_task_id')}" if array is not None else "",
        cluster=job.get("cluster") or "",
        user=job.get("user") or "",
        group=group,
        state=job.get("state") or "",
        exit_status=int(job.get("exit_code") or 0),
        ncpus=ncpus,
        nnodes=nnodes,
        ntasks=ntasks,
        req_mem_kb=tres_mem_mb(job.get("req_tres") or "") * 1024,
        per_node=not (job.get("request") or {}).get("mem_per_cpu"),
        cpu_secs=cpu_secs,
        walltime=int(job.get("elapsed") or 0),
        mem_kb=mem_kb,
        alloc_mem_kb=tres_mem_mb(job.get("alloc_tres") or "") * 1024,
    )


def time_text(secs: int) -> str:
    """seff's time2str: ``[D-]HH:MM:SS``."""
    days, rest = divmod(int(secs), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    return (f"{days}-" if days else "") + f"{hours:02d}:{minutes:02d}:{seconds:02d}"


def kb_text(kb: float) -> str:
    """seff's kbytes2str: ``1.50 GB``, in the largest 1024-power unit at or under it."""
    if kb == 0:
        return "0.00 MB"
    exp = int(math.log(kb) / math.log(1024))
    return f"{kb / 1024**exp:.2f} {_PREFIXES[exp] if 0 <= exp < len(_PREFIXES) else ''}B"


def _number(value: float) -> str:
    """A figure as Perl prints a number: no ``.0`` on a whole one."""
    return str(int(value)) if float(value).is_integer() else f"{value:.15g}"


def debug_lines(e: Efficiency) -> list[str]:
    """``seff -d``: the raw figures, then a blank line."""
    values = [
        str(e.job_id), e.array_job_id, e.user, e.group, e.state, e.cluster, str(e.ncpus), str(e.nnodes),
        str(e.ntasks), _number(e.req_mem_kb), str(int(e.per_node)), str(e.cpu_secs), str(e.walltime),
        _number(e.mem_kb), str(e.exit_status),
    ]  # fmt: skip
    return [
        "Slurm data: JobID ArrayJobID User Group State Clustername Ncpus Nnodes Ntasks Reqmem PerNode "
        "Cput Walltime Mem ExitStatus",
        "Slurm data: " + " ".join(values),
        "",
    ]


def report(e: Efficiency) -> list[str]:
    """seff's lines for the job."""
    out = [f"Job ID: {e.job_id}"]
    if e.array_job_id:
        out.append(f"Array Job ID: {e.array_job_id}")
    out += [f"Cluster: {e.cluster}", f"User/Group: {e.user}/{e.group}"]
    if e.state in ("PENDING", "RUNNING"):
        out.append(f"State: {e.state}")
    else:
        out.append(f"State: {e.state} (exit code {e.exit_status})")
    if e.ncpus == 1:
        out.append(f"Cores: {e.ncpus}")
    else:
        out += [f"Nodes: {e.nnodes}", f"Cores per node: {e.ncpus // e.nnodes}"]
    if e.pending:
        return [*out, "Efficiency not available for jobs in the PENDING state."]
    out += [
        f"CPU Utilized: {e.cpu_used_text}",
        f"CPU Efficiency: {e.cpu_text}",
        f"Job Wall-clock time: {e.walltime_text}",
        f"Memory Utilized: {e.mem_used_text}",
        f"Memory Efficiency: {e.mem_text}",
    ]
    if e.state == "RUNNING":
        out.append(f"WARNING: Efficiency statistics may be misleading for {e.state} jobs.")
    return out


def primary_group(user: str) -> str:
    """The user's group name on this host (seff's getgrgid of the job's gid); "" if unknown."""
    try:
        import grp  # noqa: PLC0415 - only seff pays for them
        import pwd  # noqa: PLC0415

        gid = pwd.getpwnam(user).pw_gid
    except (ImportError, KeyError):
        return ""
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)
