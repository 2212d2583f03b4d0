"""Run by .venv-tools' Python (submitit is not in fsched's venv): submit through submitit's
SlurmExecutor, unchanged, and print what submitit reports as one JSON line.

What submitit 1.5 uses of Slurm (submitit/slurm/slurm.py):
- ``shutil.which("srun")``: AutoExecutor picks Slurm when srun is on PATH.
- ``sbatch FILE``, the job id read from stdout with ``job ([0-9]+)``. The file's
  ``#SBATCH --job-name --time=MIN --nodes --signal=USR2@90 --output --error
  --open-mode=append --wckey=submitit`` always; ``--array=0-N%M`` (output ``%A_%a``) for
  map_array; on request ``--partition --ntasks-per-node --cpus-per-task --mem=NGB|NMB
  --mem-per-cpu --mem-per-gpu --gpus-per-node --gpus-per-task --cpus-per-gpu --gres --qos
  --account --comment --constraint --exclude --nodelist --dependency --exclusive[=...]
  --mail-type --mail-user``.
- In the script: ``srun --unbuffered --output DIR/%j_%t_log.out --error DIR/%j_%t_log.err
  PYTHON -u -m submitit.core._submit DIR``; the task reads SLURM_JOB_ID, SLURM_NTASKS,
  SLURM_JOB_NUM_NODES, SLURM_NODEID, SLURM_JOB_NODELIST, SLURM_PROCID, SLURM_LOCALID,
  SLURM_ARRAY_JOB_ID, SLURM_ARRAY_TASK_ID, and on USR2 runs ``scontrol requeue ID``.
- Polling: ``sacct -o JobID,State,NodeList --parsable2 -j ID [-j ID ...]``, the header read
  for the names, step lines (``.``) skipped, ``N_[0-3%2]`` folded array ids expanded; a
  state outside READY PENDING RUNNING UNKNOWN REQUEUED COMPLETING PREEMPTED is final.
- ``scancel ID`` (cancel), ``scancel ID --signal SIGTERM|USR2`` (its test helper).
"""

from __future__ import annotations

import json
import sys
import time

import submitit


def add(a: int, b: int) -> int:
    return a + b


def fail(message: str) -> None:
    raise ValueError(message)


def square(x: int) -> int:
    return x * x


def final_state(job: submitit.Job) -> str:
    """The job's state in sacct once it is final (the result pickle can come first)."""
    job.wait()
    while not job.watcher.is_done(job.job_id, mode="force"):
        time.sleep(0.5)
    return job.watcher.get_state(job.job_id, mode="cache")


def main(folder: str) -> None:
    executor = submitit.AutoExecutor(folder=folder)
    assert executor.cluster == "slurm", f"submitit found no srun on PATH ({executor.cluster})"
    executor.update_parameters(timeout_min=5, name="submitit-e2e")
    ok = executor.submit(add, 2, 3)
    bad = executor.submit(fail, "no such thing")
    # A map over an array job: sbatch --array=0-1%2, output files named %A_%a.
    squares = executor.map_array(square, [4, 5])
    report: dict[str, object] = {"job_ids": [ok.job_id, bad.job_id, *(j.job_id for j in squares)]}
    report["ok"] = {"result": ok.result(), "state": final_state(ok)}
    error = bad.exception()
    report["bad"] = {
        "error_type": type(error).__name__,
        "error": str(error),
        "state": final_state(bad),
    }
    report["squares"] = [{"result": j.result(), "state": final_state(j)} for j in squares]
    print(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1])
