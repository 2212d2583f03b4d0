"""Run by .venv-tools' Python (submitit is not in fsched's venv): submit through submitit's
SlurmExecutor, unchanged, and print what submitit reports as one JSON line.

submitit writes a batch script whose ``srun`` runs the pickled function, submits it with
``sbatch``, and polls ``sacct -o JobID,State,NodeList --parsable2 -j ...`` until the state is
final; the job writes its result (or the exception's traceback) to a pickle beside it.
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
