"""``scontrol notify JOBID MESSAGE...``: a message to the job's salloc/srun or batch
script's stderr (``POST /api/jobs/{id}/notify/``; cluster/services/job_notify.py).

As src/scontrol/scontrol.c and update_job.c's ``scontrol_job_notify``: the job id is read
with ``atoi`` (``12_3`` is job 12), the words after it are joined by spaces, success is
silent, a failure is ``job notify failure: <error>`` (slurm_perror) and exit 1.
"""

from __future__ import annotations

import sys

from slurmwords.c_numbers import atoi


def cmd_notify(client, words: list[str], opts) -> int:
    from cli.client import ApiError  # noqa: PLC0415

    if len(words) < 2:
        sys.stderr.write("too few arguments for keyword:notify\n")
        return 1
    job_id = atoi(words[0])
    if job_id <= 0:
        # scontrol prints this without a newline, then "job notify failure: No error"
        # (errno is still 0): the line alone here.
        sys.stderr.write(f"Invalid job_id {words[0]}\n")
        return 1
    try:
        client.post(f"/api/jobs/{job_id}/notify/", {"message": " ".join(words[1:])})
    except ApiError as exc:
        sys.stderr.write(f"job notify failure: {exc.message}\n")
        return 1
    return 0
