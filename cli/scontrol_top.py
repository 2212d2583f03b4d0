"""``scontrol top JOBID[,JOBID...]``: put jobs first among their owner's pending jobs
(``POST /api/jobs/top/``; the rules are cluster/services/job_top.py's).

As src/scontrol/scontrol.c and update_job.c's ``scontrol_top_job``: exactly one argument
(the list, ``JobId=`` or ``Job=`` before it allowed), silence on success, and on failure
``<error> for job <list>`` and exit 1 (nothing with -Q).
"""

from __future__ import annotations

import sys


def cmd_top(client, words: list[str], opts) -> int:
    from cli.client import ApiError  # noqa: PLC0415

    if len(words) != 1:
        # scontrol's _printf_error: no "scontrol: error:" before it, nothing with -Q.
        if not opts.quiet:
            sys.stderr.write(f"too {'few' if not words else 'many'} arguments for keyword:top\n")
        return 1
    ids = words[0]
    for prefix in ("jobid=", "job="):
        if ids[: len(prefix)].lower() == prefix:
            ids = ids[len(prefix) :]
    try:
        client.post("/api/jobs/top/", {"job_ids": ids})
    except ApiError as exc:
        if not opts.quiet:
            sys.stderr.write(f"{exc.message} for job {ids}\n")
        return 1
    return 0
