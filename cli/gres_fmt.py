"""How the commands print a job's GRES: Slurm's TresPer* strings (``gres/gpu:2``)."""

from __future__ import annotations

# No typing.Any here: squeue imports this module, and typing (with re, enum and functools)
# was 30 of its 76 million instructions.


def tres_per_node(gres: str | None) -> str:
    """``--gres=gpu:2,mps:10`` as squeue's %b and TresPerNode= show it."""
    return ",".join(f"gres/{item}" for item in (gres or "").split(",") if item)


def gres_lines(job: dict) -> list[list[tuple[str, str]]]:
    """scontrol show job's lines after StdOut=, each only when set, in Slurm's order."""
    out = []
    if job.get("cpus_per_gpu"):
        out.append([("CpusPerTres", f"gres/gpu:{job['cpus_per_gpu']}")])
    if job.get("tres_per_job"):
        out.append([("TresPerJob", f"gres/{job['tres_per_job']}")])
    if job.get("gres"):
        out.append([("TresPerNode", tres_per_node(job["gres"]))])
    if job.get("tres_per_task"):
        out.append([("TresPerTask", f"gres/{job['tres_per_task']}")])
    return out
