"""``sacct -B/--batch-script`` and ``--env-vars``: each job's batch script or environment
instead of the table, as sacct's ``_print_script``/``_print_env`` print them
(src/sacct/options.c).

slurmdbd keeps them only with ``AccountingStoreFlags=job_script`` (``job_env``); without
the flag, or for a job whose script the caller may not read or that has none (an
allocation), sacct prints ``NONE``.  fsched keeps every batch job's script and
environment with the job: the flag decides whether sacct shows them, as in Slurm.
"""

from __future__ import annotations

from cli.sacct_fields import job_id_text

RULE = "-" * 80
HEADS = {
    "script": "Batch Script for {id}",
    "environment": "Environment used for {id} (must be batch to display)",
}
FLAGS = {"script": "job_script", "environment": "job_env"}


def stored(client, kind: str) -> bool:
    """Whether AccountingStoreFlags keeps ``kind`` (script or environment)."""
    config = client.get("/api/config/")
    options = config.get("options", {}) if isinstance(config, dict) else {}
    value = str(options.get("AccountingStoreFlags") or "")
    return FLAGS[kind] in [f.strip().lower() for f in value.split(",")]


def text(client, job: dict, kind: str, keep: bool) -> str:
    """One job's block: its head, the rule, the script (or NONE), a blank line."""
    from cli.client import ApiError  # noqa: PLC0415

    body = None
    if keep and job.get("batch", True) is not False:
        try:
            answer = client.get(f"/api/jobs/{job['job_id']}/script/")
        except ApiError:
            answer = None  # gone (purged), or not the caller's to read
        body = answer.get(kind) if isinstance(answer, dict) else None
    if kind == "environment" and isinstance(body, dict):
        body = "".join(f"{k}={v}\n" for k, v in body.items())
    return f"{HEADS[kind].format(id=job_id_text(job, None))}\n{RULE}\n{body or 'NONE' + chr(10)}\n"
