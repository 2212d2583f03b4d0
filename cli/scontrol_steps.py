"""``scontrol show step [JOBID[.STEP]]``: srun's steps in Slurm's record layout."""

from __future__ import annotations

import sys

from cli.fmt import slurm_time
from slurmwords.durations import format_duration_long
from slurmwords.step_ids import step_number


def step_record(step: dict) -> list[list[tuple[str, str]]]:
    """Slurm's keys and order (``StepId= UserId= StartTime= TimeLimit=`` ...)."""
    limit = step.get("time_limit")
    return [
        [("StepId", str(step["id"])), ("UserId", str(step.get("user") or "")),
         ("StartTime", slurm_time(step.get("start_time"))),
         ("TimeLimit", format_duration_long(None if limit is None else int(limit) * 60))],
        [("State", str(step.get("state") or "")), ("Partition", str(step.get("partition") or "")),
         ("NodeList", str(step.get("node_list") or ""))],
        [("Nodes", str(step.get("num_nodes") or 0)), ("CPUs", str(step.get("num_cpus") or 0)),
         ("Tasks", str(step.get("num_tasks") or 0)), ("Name", str(step.get("name") or "")),
         ("Network", "(null)")],
        [("TRES", f"cpu={step.get('num_cpus') or 0},node={step.get('num_nodes') or 0}")],
        [("Dist", "Block")],
    ]  # fmt: skip


def show_step(client, name: str | None, opts, printer) -> int:
    from cli.client import ApiError  # noqa: PLC0415

    job, _, step = (name or "").partition(".")
    if name is not None and (not job.isdigit() or (step and step_number(step) is None)):
        sys.stderr.write(f"scontrol: error: Invalid job step id: {name}\n")
        return 1
    try:
        if not name:
            steps = [s for s in client.get("/api/steps/")["steps"] if s["step_id"] != "batch"]
        elif step:
            steps = [client.get(f"/api/jobs/{job}/steps/{step_number(step)}/")]
        else:
            steps = [s for s in client.get(f"/api/jobs/{job}/steps/")["steps"] if s["state"] == "RUNNING"]
    except ApiError as exc:
        if exc.status == 404:
            sys.stderr.write(f"Job step {name} not found\n")
            return 1
        sys.stderr.write(f"slurm_get_job_steps error: {exc.message}\n")
        return 1
    if not steps and not opts.json:
        sys.stdout.write(f"Job step {name} not found\n" if name else "No job steps in the system\n")
        return 0 if not name else 1
    printer("steps", steps, step_record, opts)
    return 0
