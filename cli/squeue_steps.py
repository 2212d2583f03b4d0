"""``squeue -s``: the running jobs' steps (``GET /api/steps/``), in Slurm's columns.

squeue's step format: ``%.15i %.8j %.9P %.8u %.9M %N`` (STEPID NAME PARTITION USER TIME
NODELIST), a running batch job's script listed as its ``N.batch`` step before srun's.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime

from cli.fmt import parse_format, render
from slurmwords.durations import format_duration

STEP_FORMAT = "%.15i %.8j %.9P %.8u %.9M %N"
HEADERS = {"i": "STEPID", "j": "NAME", "P": "PARTITION", "u": "USER", "M": "TIME", "N": "NODELIST",
           "l": "TIME_LIMIT", "T": "STATE", "A": "TASKS"}  # fmt: skip


def _elapsed(step: dict, now: datetime) -> int:
    start = step.get("start_time")
    if not start:
        return 0
    return max(0, int((now - datetime.fromisoformat(start)).total_seconds()))


def value(step: dict, spec: str, now: datetime) -> str:
    match spec:
        case "i":
            return str(step["id"])
        case "j":
            return str(step.get("name") or "")
        case "P":
            return str(step.get("partition") or "")
        case "u":
            return str(step.get("user") or "")
        case "M":
            return format_duration(_elapsed(step, now))
        case "N":
            return str(step.get("node_list") or "")
        case "l":
            limit = step.get("time_limit")
            return format_duration(None if limit is None else int(limit) * 60)
        case "T":
            return str(step.get("state") or "")
        case "A":
            return str(step.get("num_tasks") or "")
    raise ValueError(f"Invalid job step format specification: {spec}")


def format_steps(steps: list[dict], fmt: str, *, header: bool, now: datetime) -> list[str]:
    tokens = parse_format(fmt)
    for token in tokens:
        if not isinstance(token, str) and token.kind not in HEADERS:
            raise ValueError(f"Invalid job step format specification: {token.kind}")
    lines = [render(tokens, lambda f: HEADERS[f.kind])] if header else []
    lines += [render(tokens, lambda f, s=s: value(s, f.kind, now)) for s in steps]
    return lines


def selected(steps: list[dict], ns) -> list[dict]:
    """squeue's -j, -u and -p filters on the steps."""
    jobs = {j.strip().split(".")[0] for j in (ns.jobs or "").split(",") if j.strip()}
    users = {u for u in (ns.user or "").split(",") if u}
    parts = {p for p in (ns.partition or "").split(",") if p}
    return [
        s
        for s in steps
        if (not jobs or str(s["job_id"]) in jobs)
        and ((not users and ns.user is None) or s.get("user") in users)
        and (not parts or s.get("partition") in parts)
    ]


def main(client, ns) -> int:
    from cli.client import ApiError  # noqa: PLC0415

    try:
        steps = client.get("/api/steps/")["steps"]
    except ApiError as exc:
        sys.stderr.write(f"slurm_load_job_steps error: {exc.message}\n")
        return 1
    if ns.json:
        import json  # noqa: PLC0415 - only --json output pays for it

        json.dump({"steps": selected(steps, ns)}, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    try:
        lines = format_steps(selected(steps, ns), ns.format or STEP_FORMAT, header=not ns.noheader,
                             now=datetime.now(UTC))  # fmt: skip
    except ValueError as exc:
        sys.stderr.write(f"squeue: error: {exc}\n")
        return 1
    sys.stdout.write("".join(line + "\n" for line in lines))
    return 0
