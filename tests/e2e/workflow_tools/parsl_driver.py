"""Run by .venv-tools' Python (parsl is not in fsched's venv): parsl's SlurmProvider with its
SrunLauncher, unchanged, and what parsl reports as one JSON line.

What parsl 2026.10 uses of Slurm (parsl/providers/slurm, parsl/launchers):
- ``sacct -X`` once: exit 0 means poll with sacct, else with squeue.
- ``sbatch FILE``, the id read with ``Submitted batch job (?P<id>\\S*)``. The file's
  ``#SBATCH --job-name --output --error --nodes --time=MIN --ntasks-per-node --exclusive``,
  and on request ``--partition --account --qos --constraint --clusters --gpus-per-node
  --gres --mem=Ng --cpus-per-task``.
- In the script: SLURM_CPUS_ON_NODE, SLURM_JOB_NUM_NODES, SLURM_JOB_NAME, and ``srun
  --ntasks N -l bash cmd_NAME.sh`` starting the worker pool, which connects back to this
  process (here on loopback).
- Polling: ``sacct [--clusters=C] -X --noheader --format=jobid,state%20 --job 'ID,ID'``,
  the first two words of each line (``CANCELLED by 0`` is CANCELLED); or ``squeue
  [--clusters=C] --noheader --format='%i %t' --job 'ID,ID'`` with the compact states.
- ``scancel [--clusters=C] ID ID`` when the executor scales in or shuts down.
"""

from __future__ import annotations

import json
import sys
import time

import parsl
from parsl.app.app import bash_app, python_app
from parsl.config import Config
from parsl.executors import HighThroughputExecutor
from parsl.jobs.states import JobState, JobStatus
from parsl.launchers import SrunLauncher
from parsl.providers import SlurmProvider


@python_app
def add(a: int, b: int) -> int:
    return a + b


@python_app
def slurm_job_id() -> str:
    import os  # parsl runs this in the worker, on the node

    return os.environ["SLURM_JOB_ID"]


@python_app
def fail(message: str) -> None:
    raise ValueError(message)


@bash_app
def shell_exit(code: int) -> str:
    return f"exit {code}"


def main(run_dir: str) -> None:
    provider = SlurmProvider(
        nodes_per_block=1,
        init_blocks=1,
        min_blocks=0,
        max_blocks=1,
        walltime="00:05:00",
        cmd_timeout=30,
        launcher=SrunLauncher(),
    )
    executor = HighThroughputExecutor(
        label="fsched", address="127.0.0.1", max_workers_per_node=2, cores_per_worker=1, provider=provider
    )
    config = Config(executors=[executor], run_dir=run_dir, usage_tracking=0, strategy="none")
    parsl.load(config)
    report: dict[str, object] = {"status_command": provider._cmd}  # sacct's, or squeue's fallback
    try:
        report["sum"] = add(2, 3).result(timeout=90)
        report["slurm_job_id"] = slurm_job_id().result(timeout=30)
        error = fail("no such thing").exception(timeout=30)
        report["python_error"] = {"type": type(error).__name__, "message": str(error)}
        error = shell_exit(3).exception(timeout=30)
        report["bash_error"] = {"type": type(error).__name__, "exitcode": getattr(error, "exitcode", None)}
        job_ids = list(provider.resources)
        report["block_ids"] = job_ids
        report["running"] = [s.state.name for s in provider.status(job_ids)]
    finally:
        parsl.dfk().cleanup()  # scancel of the block
    # The block's end as parsl reads it through sacct: scancel marked it CANCELLED in this
    # provider without asking Slurm, so a provider that knows only the job id asks sacct.
    poller = SlurmProvider(cmd_timeout=30)
    for job_id in job_ids:
        poller.resources[job_id] = {"job_id": job_id, "status": JobStatus(JobState.PENDING),
                                    "job_stdout_path": None, "job_stderr_path": None}  # fmt: skip
    deadline = time.monotonic() + 60
    while True:
        states = [s.state.name for s in poller.status(job_ids)]
        if not {"PENDING", "RUNNING"} & set(states) or time.monotonic() > deadline:
            break
        time.sleep(1)
    report["ended"] = states
    print(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1])
