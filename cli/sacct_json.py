"""``sacct --json``: the accounting API's jobs in the shape of Slurm's ``sacct --json``
(its data_parser's ``jobs`` list: ``job_id``, ``state.current``, ``exit_code``,
``time``, ``steps[].step.id`` ...), the fields fsched keeps."""

from __future__ import annotations

from slurmwords import data_parser as dp
from slurmwords import data_parser_client
from slurmwords.version import SLURM_VERSION


def _step(job_text: str, step: dict) -> dict:
    return {
        "step": {"id": f"{job_text}.{step['step_id']}", "name": step["name"]},
        "state": [step["state"]],
        "exit_code": dp.exit_code(step["exit_code"], step["exit_signal"]),
        "nodes": {"count": step["nnodes"], "range": step["node_list"], "list": [step["node_list"]]},
        "tasks": {"count": step["ntasks"]},
        "time": {
            "elapsed": step["elapsed"],
            "start": dp.timestamp(step["start_time"]),
            "end": dp.timestamp(step["end_time"]),
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
        "array": {"job_id": job.get("array_job_id") or 0, "task_id": dp.no_val(task)},
        "comment": {"job": job.get("comment") or ""},
        "derived_exit_code": dp.exit_code(job["exit_code"], job["exit_signal"]),
        "exit_code": dp.exit_code(job["exit_code"], job["exit_signal"]),
        "job_id": job["job_id"],
        "name": job["name"],
        "nodes": job["node_list"],
        "partition": job["partition"],
        "qos": job["qos"],
        "state": {"current": [job["state"]], "reason": job["reason"]},
        "steps": [_step(text, s) for s in job.get("steps", [])],
        "time": {
            "elapsed": job["elapsed"],
            "eligible": dp.epoch(job.get("eligible_time")),
            "end": dp.epoch(job.get("end_time")),
            "start": dp.epoch(job.get("start_time")),
            "submission": dp.epoch(job.get("submit_time")),
            "limit": dp.no_val(limit, infinite=limit is None),
        },
        "tres": {"allocated": job["alloc_tres"], "requested": job["req_tres"]},
        "user": job["user"],
        "working_directory": job.get("work_dir") or "",
    }


def render(jobs: list[dict], command: list[str]) -> str:
    """``command``: sacct's argv, its name first. The cluster and accounting plugin of
    ``meta`` are those of the other commands' JSON only: sacct reads no configuration."""
    user, group = data_parser_client.user_and_group()
    meta = dp.meta(
        command,
        user=user,
        group=group,
        cluster="",
        version=SLURM_VERSION,
        source=data_parser_client.terminal(),
    )
    return dp.dumps(dp.answer({"jobs": [_job(j) for j in jobs]}, meta))
