"""``sacct --json``: the accounting API's jobs in the shape of Slurm's ``sacct --json``
(its data_parser's ``jobs`` list: ``job_id``, ``state.current``, ``exit_code``,
``time``, ``steps[].step.id`` ...), the fields fsched keeps."""

from __future__ import annotations

import json
from datetime import datetime


def _epoch(iso: str | None) -> int:
    return int(datetime.fromisoformat(iso).timestamp()) if iso else 0


def _number(value: int | None, infinite: bool = False) -> dict:
    return {"set": value is not None or infinite, "infinite": infinite, "number": value or 0}


def _exit(code: int, signal: int) -> dict:
    status = "SIGNALED" if signal else ("ERROR" if code else "SUCCESS")
    return {
        "status": [status],
        "return_code": _number(code),
        "signal": {"id": _number(signal if signal else None), "name": ""},
    }


def _step(job_text: str, step: dict) -> dict:
    return {
        "step": {"id": f"{job_text}.{step['step_id']}", "name": step["name"]},
        "state": [step["state"]],
        "exit_code": _exit(step["exit_code"], step["exit_signal"]),
        "nodes": {"count": step["nnodes"], "range": step["node_list"], "list": [step["node_list"]]},
        "tasks": {"count": step["ntasks"]},
        "time": {
            "elapsed": step["elapsed"],
            "start": _number(_epoch(step["start_time"])),
            "end": _number(_epoch(step["end_time"])),
            "total": {"seconds": int(step.get("total_cpu_secs") or 0), "microseconds": 0},
        },
        "tres": {"allocated": step["alloc_tres"]},
    }


def _job(job: dict) -> dict:
    task = job.get("array_task_id")
    text = f"{job['array_job_id']}_{task}" if task is not None else str(job["job_id"])
    limit = job.get("time_limit")
    return {
        "account": job["account"],
        "array": {"job_id": job.get("array_job_id") or 0, "task_id": _number(task)},
        "comment": {"job": job.get("comment") or ""},
        "derived_exit_code": _exit(job["exit_code"], job["exit_signal"]),
        "exit_code": _exit(job["exit_code"], job["exit_signal"]),
        "job_id": job["job_id"],
        "name": job["name"],
        "nodes": job["node_list"],
        "partition": job["partition"],
        "qos": job["qos"],
        "state": {"current": [job["state"]], "reason": job["reason"]},
        "steps": [_step(text, s) for s in job.get("steps", [])],
        "time": {
            "elapsed": job["elapsed"],
            "eligible": _epoch(job.get("eligible_time")),
            "end": _epoch(job.get("end_time")),
            "start": _epoch(job.get("start_time")),
            "submission": _epoch(job.get("submit_time")),
            "limit": _number(limit, infinite=limit is None),
        },
        "tres": {"allocated": job["alloc_tres"], "requested": job["req_tres"]},
        "user": job["user"],
        "working_directory": job.get("work_dir") or "",
    }


def render(jobs: list[dict], command: list[str]) -> str:
    doc = {
        "meta": {"plugin": {"type": "", "name": "", "data_parser": "fsched"}, "command": command},
        "jobs": [_job(j) for j in jobs],
        "errors": [],
        "warnings": [],
    }
    return json.dumps(doc, indent=2) + "\n"
