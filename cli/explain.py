"""``fsched explain JOBID``: why a pending job waits, one cause per line, with what would
release it (``GET /api/jobs/{id}/explain/``).

    $ fsched explain 12
    JobId=12 JobState=PENDING Reason=QOSGrpJobsLimit
    QOSGrpJobsLimit: GrpJobs=2 (QOS normal): 2 running [QOS QOS normal] -> Released when ...
    StartTime=2026-12-02T11:00:00 SchedNodeList=node[01-02]

The last line is backfill's planned start, where it plans one.

Slurm has no such command: squeue and scontrol print the reason code alone
(``QOSGrpJobsLimit``), and the limit, level, HRES layer or node states behind it are here.
A job the load thresholds STOPPED is explained too: the figures that stopped it and
what continues it, on a line that starts with its state.
``JOBID`` is a job id or an array task (``12_3``); ``--json`` prints the API's answer.
"""

from __future__ import annotations

import sys

from cli.client import ApiError, Client, CliError
from cli.fmt import make_parser, slurm_time

PROG = "explain"
INVALID = "Invalid job id specified"


def cause_line(cause: dict) -> str:
    """``<reason>: <what holds it> [<level>] -> <what would release it>``."""
    line = f"{cause.get('reason') or 'None'}: {cause.get('holder') or '(no detail)'}"
    if cause.get("level"):
        line += f" [{cause['level']}]"
    if cause.get("release"):
        line += f" -> {cause['release']}"
    return line


def render(answer: dict) -> str:
    """The explainer as plain text: a header line, then one line per cause."""
    state, reason = answer.get("state") or "UNKNOWN", answer.get("reason") or "None"
    lines = [f"JobId={answer.get('job_id')} JobState={state} Reason={reason}"]
    causes = answer.get("causes") or []
    if state != "PENDING" and causes:
        # A job stopped by the load thresholds: why, and what continues it, under its state
        # (its reason code is Slurm's for a job holding nodes, which says nothing of this).
        lines.extend(cause_line({**c, "reason": state}) for c in causes)
    elif state != "PENDING":
        lines.append(f"Job {answer.get('job_id')} is not pending: nothing holds it.")
    elif causes:
        lines.extend(cause_line(c) for c in causes)
    else:
        # No extension explains this reason: what the last scheduler pass recorded.
        detail = answer.get("reason_detail") or ""
        release = "The next scheduler pass re-checks it."
        lines.append(cause_line({"reason": reason, "holder": detail, "release": release}))
    if state == "PENDING" and answer.get("start_time"):
        # Backfill's plan, in scontrol show job's words for a pending job.
        when = slurm_time(answer["start_time"])
        lines.append(f"StartTime={when} SchedNodeList={answer.get('sched_nodes') or '(null)'}")
    return "\n".join(lines) + "\n"


def _job_id(client: Client, text: str) -> int:
    """A job id, or an array task ``12_3`` looked up by the API's ``job_id`` filter."""
    head, sep, task = text.partition("_")
    if not head.isdigit() or (sep and not task.isdigit()):
        raise CliError(INVALID)
    if not sep:
        return int(head)
    found = client.get_all("/api/jobs/", {"job_id": text, "state": "all"})
    if not found:
        raise CliError(INVALID)
    return int(found[0]["job_id"])


def main(argv: list[str]) -> int:
    parser = make_parser("fsched explain", description="Why a pending job waits, and what would release it.")
    parser.add_argument("job", metavar="JOBID", help="job id, or array task as 12_3")
    parser.add_argument("--json", action="store_true", help="print the API's answer as JSON")
    args = parser.parse_args(argv)
    client = Client()
    try:
        answer = client.get(f"/api/jobs/{_job_id(client, args.job.strip())}/explain/")
    except ApiError as exc:
        raise CliError(exc.message) from None
    if args.json:
        import json  # noqa: PLC0415 - only --json output pays for it

        json.dump(answer, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render(answer))
    return 0
