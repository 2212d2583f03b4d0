"""The YAML/JSON job list: a workload as sbatch-style fields, read and written.

A list of jobs, or a mapping whose ``jobs`` key holds it; each job a mapping::

    - submit: 0              # seconds from the workload's start, or a time (2026-12-01T08:00:00)
      run_time: 1:30:00      # seconds, or a duration as Slurm writes it
      user: alice
      account: physics       # optional from here on
      partition: batch
      qos: normal
      nodes: 2
      ntasks: 8
      cpus_per_task: 2       # cpus-per-task is the same field
      mem: 4G                # per node, Slurm's size text (plain numbers are MB)
      time: 2:00:00          # Slurm's time limit text (plain numbers are minutes)
      licenses: power:full_node,fluent:1   # sbatch -L, HRES requests included
      name: sim
      dependency: afterok:3  # naming the list's own job_ids
      exit_code: 0
      job_id: 4              # optional: the job's number in the list (default: its position)

The numbers and texts are read with Slurm's own grammars (``slurmwords``), so ``time``
and ``mem`` mean here what they mean to ``sbatch``.  A license request is kept as text:
whether its names are licenses or hierarchical resources is the configuration's to say,
and the simulation refuses a bad one as ``sbatch`` would.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from cluster.core import dependencies
from simulator.records import SimJob
from simulator.workloads.errors import WorkloadError
from slurmwords.durations import format_minutes, parse_duration_seconds, parse_job_time_limit
from slurmwords.memory import format_memory_mb, parse_memory_mb

FIELDS = (
    "job_id",
    "submit",
    "run_time",
    "user",
    "account",
    "partition",
    "qos",
    "nodes",
    "ntasks",
    "cpus_per_task",
    "mem",
    "time",
    "licenses",
    "name",
    "dependency",
    "exit_code",
)
_REQUIRED = ("submit", "run_time", "user")
_TEXT_FIELDS = ("user", "account", "partition", "qos", "licenses", "name", "dependency")
_COUNT_FIELDS = ("nodes", "ntasks", "cpus_per_task")


@dataclass
class _Raw:
    """One job as read: its fields, and the line of the job and of each field."""

    line: int
    fields: dict[str, Any]
    lines: dict[str, int]


class _Job:
    def __init__(self, path: str | Path, raw: _Raw, position: int) -> None:
        self.path, self.raw, self.position = path, raw, position

    def fail(self, field: str | None, message: str) -> WorkloadError:
        line = self.raw.lines.get(field or "", self.raw.line)
        return WorkloadError(self.path, line, field, message)


# ------------------------------------------------------------------------- reading


def read_job_list(text: str, path: str | Path = "<jobs>", *, json_text: bool = False) -> list[SimJob]:
    """The jobs of a YAML (or, with ``json_text``, JSON) job list, submit times from 0."""
    raws = _json_jobs(text, path) if json_text else _yaml_jobs(text, path)
    jobs = [_Job(path, raw, i) for i, raw in enumerate(raws, 1)]
    submits = [_submit(job) for job in jobs]
    kinds = {type(s) is datetime for s in submits}
    if len(kinds) > 1:
        first_time = next(j for j, s in zip(jobs, submits, strict=True) if isinstance(s, datetime))
        raise first_time.fail("submit", "mixes times with seconds: give every job one or the other")
    seconds = _offsets(submits)
    out = [_sim_job(job, offset) for job, offset in zip(jobs, seconds, strict=True)]
    _check_ids(out, jobs)
    return sorted(out, key=lambda j: (j.submit, j.job_id))


def _offsets(submits: list[float | datetime]) -> list[float]:
    if not submits:
        return []
    if isinstance(submits[0], datetime):
        epochs = [s.timestamp() for s in submits]  # type: ignore[union-attr]
    else:
        epochs = [float(s) for s in submits]  # type: ignore[arg-type]
    first = min(epochs)
    return [e - first for e in epochs]


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """PyYAML's safe loader without YAML 1.1's base-60 numbers: ``time: 1:00:00`` is
    Slurm's text for an hour, not the integer 3600 (which ``time`` would read as minutes)."""


_INT, _FLOAT = "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"
_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in (_INT, _FLOAT)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    _INT,
    re.compile(r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+)$"),
    list("-+0123456789"),
)
_Loader.add_implicit_resolver(
    _FLOAT,
    re.compile(
        r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9_]+(?:[eE][-+][0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+0123456789."),
)


def _yaml_jobs(text: str, path: str | Path) -> list[_Raw]:
    """The job mappings with their lines, from the YAML node tree (PyYAML's C loader)."""
    loader = _Loader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return []
        items = _job_nodes(root, path)
        out = []
        for node in items:
            if not isinstance(node, yaml.MappingNode):
                raise WorkloadError(path, node.start_mark.line + 1, None, "a job must be a mapping of fields")
            fields: dict[str, Any] = {}
            lines: dict[str, int] = {}
            for key_node, value_node in node.value:
                key = str(loader.construct_object(key_node, deep=True))
                name = key.replace("-", "_")
                lines[name] = key_node.start_mark.line + 1
                if name in fields:
                    raise WorkloadError(path, lines[name], name, "given twice")
                fields[name] = loader.construct_object(value_node, deep=True)
            out.append(_Raw(node.start_mark.line + 1, fields, lines))
        return out
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        raise WorkloadError(path, line, None, f"not YAML: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise WorkloadError(path, None, None, f"not YAML: {exc}") from None
    finally:
        loader.dispose()


def _job_nodes(root: yaml.Node, path: str | Path) -> list[yaml.Node]:
    if isinstance(root, yaml.MappingNode):
        for key_node, value_node in root.value:
            if key_node.value == "jobs":
                root = value_node
                break
        else:
            raise WorkloadError(
                path,
                root.start_mark.line + 1,
                "jobs",
                "missing: a job list is a list of jobs, or a mapping whose 'jobs' holds one",
            )
    if not isinstance(root, yaml.SequenceNode):
        raise WorkloadError(path, root.start_mark.line + 1, "jobs", "not a list of jobs")
    return list(root.value)


def _json_jobs(text: str, path: str | Path) -> list[_Raw]:
    """The job objects with the line each starts on: decoded one by one, so a file of a
    hundred thousand jobs needs no YAML parser and an error still names its line."""
    decoder = json.JSONDecoder()
    pos = _skip(text, 0)
    line_at = _LineCounter(text)
    try:
        if text.startswith("{", pos):
            top, _ = decoder.raw_decode(text, pos)
            if "jobs" not in top:
                raise WorkloadError(
                    path,
                    line_at(pos),
                    "jobs",
                    "missing: a job list is a list of jobs, or an object whose 'jobs' holds one",
                )
            pos = _jobs_member(text, pos, decoder)
        if not text.startswith("[", pos):
            raise WorkloadError(path, line_at(pos), "jobs", "not a list of jobs")
        pos = _skip(text, pos + 1)
        out: list[_Raw] = []
        while not text.startswith("]", pos):
            start = pos
            value, pos = decoder.raw_decode(text, pos)
            if not isinstance(value, dict):
                raise WorkloadError(path, line_at(start), None, "a job must be an object of fields")
            fields = {}
            for key, field_value in value.items():
                fields[str(key).replace("-", "_")] = field_value
            out.append(_Raw(line_at(start), fields, {}))
            pos = _skip(text, pos)
            if text.startswith(",", pos):
                pos = _skip(text, pos + 1)
            elif not text.startswith("]", pos):
                raise WorkloadError(path, line_at(pos), None, "not JSON: expected ',' or ']' after a job")
        return out
    except json.JSONDecodeError as exc:
        raise WorkloadError(path, exc.lineno, None, f"not JSON: {exc.msg}") from None


def _jobs_member(text: str, pos: int, decoder: json.JSONDecoder) -> int:
    """Where the value of the object's ``jobs`` member starts (the object is valid JSON)."""
    pos = _skip(text, pos + 1)
    while True:
        key, pos = decoder.raw_decode(text, pos)
        pos = _skip(text, _skip(text, pos) + 1)  # past the ':'
        if key == "jobs":
            return pos
        _, pos = decoder.raw_decode(text, pos)
        pos = _skip(text, _skip(text, pos) + 1)  # past the ','


class _LineCounter:
    """Line numbers of increasing offsets, counted once."""

    def __init__(self, text: str) -> None:
        self.text, self.pos, self.line = text, 0, 1

    def __call__(self, pos: int) -> int:
        if pos < self.pos:
            self.pos, self.line = 0, 1
        self.line += self.text.count("\n", self.pos, pos)
        self.pos = pos
        return self.line


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


# --------------------------------------------------------------------- the fields


def _submit(job: _Job) -> float | datetime:
    fields = job.raw.fields
    unknown = sorted(set(fields) - set(FIELDS))
    if unknown:
        raise job.fail(unknown[0], f"unknown field (the fields: {', '.join(FIELDS)})")
    for name in _REQUIRED:
        if fields.get(name) in (None, ""):
            raise job.fail(name if name in fields else None, f"{name}: missing (every job needs one)")
    value = fields["submit"]
    if isinstance(value, datetime):
        return value if value.tzinfo else value.astimezone()
    if isinstance(value, bool):
        raise job.fail("submit", f"{value!r} is neither seconds nor a time")
    if isinstance(value, int | float):
        if not math.isfinite(value) or value < 0:
            raise job.fail("submit", f"{value!r} is not a number of seconds (0 or more)")
        return float(value)
    text = str(value).strip()
    try:
        return float(text) if text.replace(".", "", 1).isdigit() else _time(text)
    except ValueError:
        raise job.fail("submit", f"{text!r} is neither seconds nor a time (YYYY-MM-DDTHH:MM:SS)") from None


def _time(text: str) -> datetime:
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.astimezone()


def _seconds(job: _Job, name: str) -> float:
    value = job.raw.fields[name]
    if isinstance(value, int | float) and not isinstance(value, bool):
        if not math.isfinite(value) or value < 0:
            raise job.fail(name, f"{value!r} is not a number of seconds (0 or more)")
        return float(value)
    text = str(value).strip()
    if text.replace(".", "", 1).isdigit():
        return float(text)
    try:
        seconds = parse_duration_seconds(text)
    except ValueError as exc:
        raise job.fail(name, str(exc)) from None
    if seconds is None:
        raise job.fail(name, f"{text!r}: a job's run time cannot be unlimited")
    return float(seconds)


def _count(job: _Job, name: str, default: int, minimum: int = 1) -> int:
    value = job.raw.fields.get(name)
    if value is None:
        return default
    whole = isinstance(value, int) or (isinstance(value, str) and value.isascii() and value.isdigit())
    if isinstance(value, bool) or not whole:
        raise job.fail(name, f"{value!r} is not a whole number")
    if int(value) < minimum:
        raise job.fail(name, f"{value} is less than {minimum}")
    return int(value)


def _text(job: _Job, name: str) -> str:
    value = job.raw.fields.get(name)
    if value is None:
        return ""
    if isinstance(value, dict | list):
        raise job.fail(name, "must be text")
    return str(value).strip()


def _sim_job(job: _Job, submit: float) -> SimJob:
    fields = job.raw.fields
    for name in _TEXT_FIELDS:
        _text(job, name)
    mem = 0
    if fields.get("mem") not in (None, ""):
        try:
            mem = parse_memory_mb(str(fields["mem"]))
        except ValueError as exc:
            raise job.fail("mem", str(exc)) from None
    limit = None
    if fields.get("time") not in (None, ""):
        try:
            limit = parse_job_time_limit(str(fields["time"]))
        except ValueError as exc:
            raise job.fail("time", str(exc)) from None
    dependency = _text(job, "dependency")
    if dependency:
        try:
            dependencies.parse(dependency)
        except ValueError as exc:
            raise job.fail("dependency", f"{dependency!r}: {exc}") from None
    exit_code = _count(job, "exit_code", 0, minimum=0)
    if exit_code > 255:
        raise job.fail("exit_code", f"{exit_code} is more than 255")
    return SimJob(
        job_id=_count(job, "job_id", job.position),
        submit=submit,
        run_time=_seconds(job, "run_time"),
        user=_text(job, "user"),
        account=_text(job, "account"),
        partition=_text(job, "partition"),
        qos=_text(job, "qos"),
        nodes=_count(job, "nodes", 1),
        ntasks=_count(job, "ntasks", 1),
        cpus_per_task=_count(job, "cpus_per_task", 1),
        mem_mb=mem,
        time_limit=limit,
        licenses=_text(job, "licenses"),
        name=_text(job, "name"),
        dependency=dependency,
        exit_code=exit_code,
    )


def _check_ids(out: list[SimJob], jobs: list[_Job]) -> None:
    """Job numbers unique; a dependency names jobs of the list."""
    by_id: dict[int, _Job] = {}
    for sim, job in zip(out, jobs, strict=True):
        if sim.job_id in by_id:
            other = by_id[sim.job_id].raw.line
            raise job.fail("job_id", f"{sim.job_id} is also the number of the job on line {other}")
        by_id[sim.job_id] = job
    for sim, job in zip(out, jobs, strict=True):
        dep = dependencies.parse(sim.dependency) if sim.dependency else None
        for target in dep.job_ids() if dep else ():
            if target not in by_id:
                raise job.fail("dependency", f"job {target} is not in the list")


# ------------------------------------------------------------------------- writing


def job_fields(job: SimJob) -> dict[str, Any]:
    """A job as the list writes it: sbatch-style fields, defaults left out."""
    out: dict[str, Any] = {
        "job_id": job.job_id,
        "submit": _number(job.submit),
        "run_time": _number(job.run_time),
        "user": job.user,
    }
    for name in ("account", "partition", "qos"):
        if value := getattr(job, name):
            out[name] = value
    for name in _COUNT_FIELDS:
        if (value := getattr(job, name)) != 1:
            out[name] = value
    if job.mem_mb:
        out["mem"] = format_memory_mb(job.mem_mb)
    if job.time_limit is not None:
        out["time"] = format_minutes(job.time_limit)
    for name in ("licenses", "name", "dependency"):
        if value := getattr(job, name):
            out[name] = value
    if job.exit_code:
        out["exit_code"] = job.exit_code
    return out


def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else round(value, 3)


def job_list_json(jobs: Iterable[SimJob]) -> str:
    """The JSON job list's text (one job a line)."""
    rows = [job_fields(j) for j in jobs]
    body = ",\n".join(json.dumps(r, separators=(", ", ": ")) for r in rows)
    return '{"jobs": [\n' + body + ("\n" if rows else "") + "]}\n"


def write_job_list(jobs: Iterable[SimJob], path: str | Path) -> Path:
    """Write ``jobs`` as a job list: JSON for a ``.json`` path (one job a line), else YAML."""
    path = Path(path)
    if path.suffix.lower() == ".json":
        text = job_list_json(jobs)
    else:
        rows = [job_fields(j) for j in jobs]
        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        text = yaml.dump({"jobs": rows}, Dumper=dumper, sort_keys=False, default_flow_style=None, width=200)
    path.write_text(text, encoding="utf-8")
    return path
