"""sbatch ``--signal=[{R|B}:]<sig_num>[@sig_time]`` on the node.

With ``B:`` the agent sends the signal to the batch script's process ``sig_time`` seconds
before the job's time limit, counted from the start the agent saw (the controller ends
the job at the limit itself): Slurm signals "only the batch shell".  Without it Slurm
signals every job step and never the batch shell, so this timer is not armed: each
step's launch carries the signal and its instant (steps/core/warning.py) and the agent
running the step's tasks signals them (agent/steps.py).  Checkpointing tools (submitit's
``--signal=USR2@90``, run under srun) trap it and save their state.

Not covered: a limit changed by ``scontrol update`` after the start, time spent
SUSPENDED (the controller does not count it; this timer does), and jobs adopted by a
restarted agent (their launch object, which carries the option, is not kept).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agent.spool import SCRIPT_NAME
from slurmwords.job_options import parse_signal

if TYPE_CHECKING:
    from agent.jobs import Job, JobManager

log = logging.getLogger(__name__)


def delay(launch: Mapping[str, Any]) -> tuple[float, int, bool] | None:
    """(seconds after the start, signal number, batch shell only) or None: no ``--signal``,
    no time limit, or a value that does not parse (the controller checked it already)."""
    text, limit = launch.get("signal"), launch.get("time_limit")
    if not isinstance(text, str) or not text or not isinstance(limit, int) or limit <= 0:
        return None
    try:
        spec = parse_signal(text)
    except ValueError:
        log.warning("job %s: unusable --signal %r ignored", launch.get("job_id"), text)
        return None
    # A sig_time longer than the limit: Slurm's periodic check sends it at once.
    return max(0.0, limit * 60.0 - spec.seconds), spec.number, spec.batch_only


def script_pid(wrapper_pid: int) -> int | None:
    """The batch script's process: the wrapper's child that exec'd the script file."""
    try:
        with open(f"/proc/{wrapper_pid}/task/{wrapper_pid}/children") as f:
            children = f.read().split()
    except OSError:
        return None
    for child in children:
        try:
            with open(f"/proc/{child}/comm") as f:
                if f.read().strip() == SCRIPT_NAME:
                    return int(child)
        except OSError:
            continue
    return None


def arm(manager: JobManager, job: Job, launch: Mapping[str, Any]) -> None:
    """Schedule the job's ``--signal`` on the event loop; cancelled with the job's timers."""
    planned = delay(launch)
    if planned is None or not planned[2]:
        return  # none, or the steps' (steps/core/warning.py)
    seconds, number, _ = planned
    loop = asyncio.get_running_loop()
    job.timers.append(loop.call_later(seconds, _fire, manager, job, number))


def _fire(manager: JobManager, job: Job, number: int) -> None:
    if manager.running_job(job.state.job_id) is not job:
        return  # ended, or a later run replaced it
    sig = signal.Signals(number)
    pid = script_pid(job.state.pid)
    if pid is None:
        log.info("job %d: --signal B:%s: no batch script process to signal", job.state.job_id, sig.name)
        return
    log.info("job %d: --signal B:%s to the batch script (pid %d)", job.state.job_id, sig.name, pid)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)
