"""Allocation-only jobs on their batch host, and what a job's processes are handed to
reach the controller (issue #16 point 2).

An allocation-only job (salloc's, or srun's outside an allocation) runs the Prolog and
then no process: it holds its nodes until the controller's ``cancel`` ends it, either a
release (its holder's command ended, with that status) or a scancel/time limit.  It lives
in the agent's memory only: an agent restarted meanwhile does not report it, and the
controller ends it as lost, as Slurm ends an allocation whose node's slurmd lost it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

ENDPOINT = "/ws/agent/"


@dataclass
class HeldAllocation:
    """An allocation-only job on this node: no process, no spool state."""

    job_id: int
    node: str
    run: int
    started: float
    silent: bool = False  # read by JobManager.flush with the processes' ends

    @property
    def state(self) -> HeldAllocation:  # flush reads ``job.state.job_id`` of a silent end
        return self


def api_url(controller: str) -> str:
    """The controller's HTTP URL from the agent's (``ws://h:8000/ws/agent/`` → ``http://h:8000``)."""
    url = controller.strip()
    for ws, plain in (("ws://", "http://"), ("wss://", "https://")):
        if url.startswith(ws):
            url = plain + url[len(ws) :]
    url = url.rstrip("/")
    if url.endswith(ENDPOINT.rstrip("/")):
        url = url[: -len(ENDPOINT.rstrip("/"))]
    return url


def credential_env(job: Mapping[str, Any], url: str | None) -> dict[str, str]:
    """What lets the CLI in a job find the controller and authenticate as that job: the
    job credential (in the process's environment only, which /proc shows to its own user
    and root alone, never on a command line or in a file) and the controller's URL."""
    env: dict[str, str] = {}
    credential = job.get("credential")
    if isinstance(credential, str) and credential:
        env["FSCHED_JOB_CREDENTIAL"] = credential
    if url:
        env["FSCHED_URL"] = url
    return env
