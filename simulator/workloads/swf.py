"""The Standard Workload Format (SWF) of the Parallel Workloads Archive, read into ``SimJob``.

One job a line, 18 whitespace-separated numbers, ``-1`` where a value is unknown; lines
starting with ``;`` are the header's comments (``; MaxProcs: 128``).  The fields, in order:

     1 job number            7 used memory (KB/proc)     13 group id
     2 submit time (s)       8 requested processors      14 executable number
     3 wait time (s)         9 requested time (s)        15 queue number
     4 run time (s)         10 requested memory (KB/proc) 16 partition number
     5 allocated processors 11 status                    17 preceding job number
     6 average CPU time (s) 12 user id                   18 think time (s)

What becomes of them (docs/simulator-workloads.md says the same for users):

* processors (requested, else allocated) are ``ntasks``; ``nodes`` is the processors
  divided by the processors per node, rounded up, when those are known (the reader's
  ``cpus_per_node``, else the header's ``MaxProcs`` / ``MaxNodes`` when they differ and
  divide evenly), else 1: the least ``sbatch -n`` alone asks for;
* requested time is the time limit in minutes, rounded up (as ``sbatch -t`` rounds
  seconds); requested memory, KB per processor, becomes MB per node for the tasks of one node;
* partition (else queue) numbers become names through a mapping: the reader's argument,
  else the header's ``; Partition: 1 batch`` lines (or ``; Partitions: 1=batch 2=long``,
  the same for queues); an unmapped number leaves the default partition;
* user id N is user ``userN`` (``account`` stays the user's default); executable N names
  the job ``appN``;
* status 1 (completed) exits 0, 0 and 4 (failed) exit 1, 5 (cancelled while running)
  exits 143, the status of a shell killed by scancel's SIGTERM;
* the preceding job is an ``afterany`` dependency: SWF records that the job was submitted
  after that one ended, whatever its end (its think time is already in the submit time);
* a job cancelled before it started (status 5 with run time 0 or -1) never ran: it is left
  out with a note, as is any job whose run time is unknown, and a dependency on a job left
  out is dropped with a note.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from simulator.records import SimJob
from simulator.workloads.errors import WorkloadError

FIELD_NAMES = (
    "job number",
    "submit time",
    "wait time",
    "run time",
    "allocated processors",
    "average CPU time",
    "used memory",
    "requested processors",
    "requested time",
    "requested memory",
    "status",
    "user id",
    "group id",
    "executable number",
    "queue number",
    "partition number",
    "preceding job number",
    "think time",
)
UNKNOWN = -1
COMPLETED, FAILED, PARTIAL, LAST_PARTIAL, FAILED_PARTIAL, CANCELLED = 1, 0, 2, 3, 4, 5
_EXIT_BY_STATUS = {FAILED: 1, FAILED_PARTIAL: 1, CANCELLED: 143}
_PAIR_RE = re.compile(r"(\d+)\s*=\s*([A-Za-z0-9_.\-]+)")
_ONE_RE = re.compile(r"^\s*(\d+)\s*[:=]?\s+([A-Za-z0-9_.\-]+)")


def _field(index: int) -> str:
    return f"field {index + 1} ({FIELD_NAMES[index]})"


class _Header:
    def __init__(self) -> None:
        self.values: dict[str, str] = {}
        self.partitions: dict[int, str] = {}
        self.queues: dict[int, str] = {}

    def add(self, text: str) -> None:
        key, colon, value = text.lstrip(";").strip().partition(":")
        if not colon:
            return  # free text
        key = key.strip().lower()
        self.values.setdefault(key, value.strip())
        target = {
            "partition": self.partitions,
            "partitions": self.partitions,
            "queue": self.queues,
            "queues": self.queues,
        }.get(key)
        if target is None:
            return
        if key.endswith("s"):
            for number, name in _PAIR_RE.findall(value):
                target.setdefault(int(number), name)
        elif m := _ONE_RE.match(value):
            target.setdefault(int(m.group(1)), m.group(2))

    def number(self, key: str) -> int | None:
        raw = self.values.get(key.lower(), "").split()
        return int(raw[0]) if raw and raw[0].isdigit() else None

    def cpus_per_node(self) -> int | None:
        procs, nodes = self.number("MaxProcs"), self.number("MaxNodes")
        if procs and nodes and procs > nodes and procs % nodes == 0:
            return procs // nodes
        return None


def _numbers(path: str | Path, line: int, fields: list[str]) -> list[float]:
    out = []
    for index, raw in enumerate(fields):
        try:
            value = float(raw)
        except ValueError:
            raise WorkloadError(path, line, _field(index), f"{raw!r} is not a number") from None
        if not math.isfinite(value):
            raise WorkloadError(path, line, _field(index), f"{raw!r} is not a number")
        if value < 0 and value != UNKNOWN:
            raise WorkloadError(path, line, _field(index), f"{raw} is negative (only -1, unknown)")
        out.append(value)
    return out


def _whole(path: str | Path, line: int, values: list[float], index: int) -> int:
    value = values[index]
    if value != int(value):
        raise WorkloadError(path, line, _field(index), f"{value:g} is not a whole number")
    return int(value)


def parse_swf(
    text: str,
    path: str | Path = "<swf>",
    *,
    cpus_per_node: int | None = None,
    partitions: Mapping[int, str] | None = None,
    queues: Mapping[int, str] | None = None,
    notes: list[str] | None = None,
) -> list[SimJob]:
    """The jobs of an SWF text (the module docstring says how each field is read)."""
    if cpus_per_node is not None and cpus_per_node < 1:
        raise WorkloadError(path, None, "cpus_per_node", f"{cpus_per_node} is not a positive number")
    header = _Header()
    rows: list[tuple[int, list[float]]] = []
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if not stripped:
            continue
        if stripped.startswith(";"):
            header.add(stripped)
            continue
        fields = stripped.split()
        if len(fields) != len(FIELD_NAMES):
            raise WorkloadError(
                path, number, None, f"an SWF line has {len(FIELD_NAMES)} fields, this one {len(fields)}"
            )
        rows.append((number, _numbers(path, number, fields)))
    per_node = cpus_per_node or header.cpus_per_node()
    part_names = dict(partitions if partitions is not None else header.partitions)
    queue_names = dict(queues if queues is not None else header.queues)
    jobs: list[SimJob] = []
    seen: dict[int, int] = {}
    skipped: set[int] = set()
    lines: dict[int, int] = {}
    for line, values in rows:
        job = _job(path, line, values, per_node, part_names, queue_names, seen, skipped, notes)
        if job is not None:
            jobs.append(job)
            lines[job.job_id] = line
    return _finish(path, jobs, lines, skipped, notes)


def _job(  # noqa: PLR0917 - one call site, the reader's state
    path, line, values, per_node, part_names, queue_names, seen, skipped, notes
) -> SimJob | None:
    job_id = _whole(path, line, values, 0)
    if job_id < 1:
        raise WorkloadError(path, line, _field(0), f"{job_id} is not a job number (1 or more)")
    if job_id in seen:
        raise WorkloadError(path, line, _field(0), f"job {job_id} is also on line {seen[job_id]}")
    seen[job_id] = line
    submit, run_time, status = values[1], values[3], _whole(path, line, values, 10)
    if submit == UNKNOWN:
        raise WorkloadError(path, line, _field(1), "unknown (-1): the job cannot be replayed")
    if status == CANCELLED and run_time in (0, UNKNOWN):
        skipped.add(job_id)
        _note(notes, f"{path}:{line}: job {job_id} left out: cancelled before it started")
        return None
    if run_time == UNKNOWN:
        skipped.add(job_id)
        _note(notes, f"{path}:{line}: job {job_id} left out: its run time is unknown (-1)")
        return None
    procs = _whole(path, line, values, 7)
    if procs in (UNKNOWN, 0):
        procs = _whole(path, line, values, 4)
    if procs < 1:
        raise WorkloadError(path, line, _field(7), "no processor count (fields 5 and 8 are both unknown)")
    nodes = -(-procs // per_node) if per_node else 1
    limit = values[8]
    mem_kb = values[9]
    tasks_per_node = -(-procs // nodes)
    part, queue = _whole(path, line, values, 15), _whole(path, line, values, 14)
    user, app = _whole(path, line, values, 11), _whole(path, line, values, 13)
    preceding = _whole(path, line, values, 16)
    return SimJob(
        job_id=job_id,
        submit=submit,
        run_time=run_time,
        user=f"user{user}" if user != UNKNOWN else "user0",
        partition=part_names.get(part) or queue_names.get(queue) or "",
        nodes=nodes,
        ntasks=procs,
        mem_mb=-(-int(mem_kb * tasks_per_node) // 1024) if mem_kb > 0 else 0,
        # sbatch -t rounds seconds up to whole minutes; 0 asks for no limit.
        time_limit=-(-int(limit) // 60) if limit > 0 else None,
        name=f"app{app}" if app != UNKNOWN else "",
        dependency=f"afterany:{preceding}" if preceding > 0 else "",
        exit_code=_EXIT_BY_STATUS.get(status, 0),
    )


def _finish(path, jobs: list[SimJob], lines: dict[int, int], skipped: set[int], notes) -> list[SimJob]:
    """Submit times from 0 in submission order; dependencies on jobs not replayed dropped."""
    if not jobs:
        return []
    first = min(j.submit for j in jobs)
    out = []
    for job in sorted(jobs, key=lambda j: (j.submit, j.job_id)):
        dependency = job.dependency
        if dependency:
            target = int(dependency.partition(":")[2])
            if target not in lines:
                why = "left out" if target in skipped else "not in the file"
                _note(
                    notes,
                    f"{path}:{lines[job.job_id]}: job {job.job_id}: dependency on job {target} "
                    f"dropped ({why})",
                )
                dependency = ""
        out.append(replace(job, submit=job.submit - first, dependency=dependency))
    return out


def _note(notes: list[str] | None, text: str) -> None:
    if notes is None:
        # On stderr, not through logging: the simulator's Django settings configure the
        # log, and a job left out must be said whoever reads the file.
        sys.stderr.write(f"note: {text}\n")
    else:
        notes.append(text)


def read_swf(path: str | Path, **options) -> list[SimJob]:
    """:func:`parse_swf` of a file."""
    return parse_swf(Path(path).read_text(encoding="utf-8"), path, **options)
