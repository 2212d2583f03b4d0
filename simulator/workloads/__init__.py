"""Workloads for the simulator: read a file into ``SimJob`` records, write a job list.

Two formats (docs/simulator-workloads.md): the Parallel Workloads Archive's Standard
Workload Format (``.swf``, :mod:`simulator.workloads.swf`) and a YAML or JSON job list with
sbatch-style fields (:mod:`simulator.workloads.joblist`).  The generator
(:mod:`simulator.workloads.generate`) writes job lists.  Standard library and PyYAML only:
no Django, so a workload is read the same in the engine, the CLI and the tests.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from simulator.records import SimJob
from simulator.workloads.errors import WorkloadError
from simulator.workloads.joblist import read_job_list, write_job_list

__all__ = ["WorkloadError", "detect_format", "read_job_list", "read_workload", "write_job_list"]

SWF, JSON, YAML = "swf", "json", "yaml"
_BY_SUFFIX = {".swf": SWF, ".json": JSON, ".yaml": YAML, ".yml": YAML}


def detect_format(path: str | Path, text: str) -> str:
    """``swf``, ``json`` or ``yaml``: by the file's extension, else by its first line
    that is not blank (``;`` or a line of numbers is SWF, ``[``/``{`` JSON, else YAML)."""
    known = _BY_SUFFIX.get(Path(path).suffix.lower())
    if known:
        return known
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith(";"):
            return SWF
        if stripped[0] in "[{":
            return JSON
        fields = stripped.split()
        if len(fields) >= 2 and all(f.lstrip("-").replace(".", "", 1).isdigit() for f in fields):
            return SWF
        return YAML
    return YAML


def read_workload(
    path: str | Path,
    *,
    cpus_per_node: int | None = None,
    partitions: Mapping[int, str] | None = None,
    queues: Mapping[int, str] | None = None,
    notes: list[str] | None = None,
) -> list[SimJob]:
    """The jobs of a workload file, in submission order, submit times from 0.

    ``cpus_per_node``, ``partitions`` and ``queues`` apply to SWF only (see
    :func:`simulator.workloads.swf.read_swf`).  ``notes`` receives one line per job left
    out (an SWF job cancelled before it started) or per dependency dropped; without it they
    are written to stderr.  Raises
    :class:`WorkloadError` naming ``file:line`` and the field.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise WorkloadError(path, None, None, f"cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise WorkloadError(path, None, None, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    kind = detect_format(path, text)
    if kind == SWF:
        from simulator.workloads.swf import parse_swf  # noqa: PLC0415 - SWF files only

        return parse_swf(
            text, path, cpus_per_node=cpus_per_node, partitions=partitions, queues=queues, notes=notes
        )
    return read_job_list(text, path, json_text=kind == JSON)
