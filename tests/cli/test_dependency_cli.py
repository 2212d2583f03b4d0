"""``sbatch -d/--dependency`` (#16 point 1) through the real commands against a live
controller: submitted (no longer "ignored"), refused with Slurm's words, shown by
``squeue -o %E``/``%r`` and ``scontrol show job``'s ``Dependency=``, changed and cleared by
``scontrol update JobId=N Dependency=``."""

from __future__ import annotations

import pytest

from cli import sbatch
from cluster.services.scheduling import schedule_pass

pytestmark = pytest.mark.django_db(transaction=True)


def submitted(result: tuple[int, str, str]) -> int:
    status, out, err = result
    assert (status, err) == (0, ""), err
    return int(out.split()[-1])


def squeue(live_cli, job_id: int, fmt: str) -> str:
    status, out, err = live_cli("alice", "squeue", "-h", "-j", str(job_id), "-o", fmt)
    assert (status, err) == (0, ""), err
    return out.strip()


def dependency_line(live_cli, job_id: int) -> str:
    status, out, err = live_cli("alice", "scontrol", "show", "job", str(job_id))
    assert (status, err) == (0, ""), err
    return next(line.strip() for line in out.splitlines() if "Dependency=" in line)


def test_dependency_is_an_option_not_an_ignored_one():
    assert all("--dependency" not in flags for flags in sbatch.UNSUPPORTED)
    assert sbatch.parse_args(["-d", "afterok:5", "job.sh"]).dependency == "afterok:5"
    assert sbatch.parse_args(["--dependency=singleton", "job.sh"]).dependency == "singleton"


def test_submitted_shown_updated_and_cleared(users, demo, live_cli):
    first = submitted(live_cli("alice", "sbatch", "--begin=now+3600", "--wrap", "true"))
    job_id = submitted(live_cli("alice", "sbatch", "-d", f"afterok:{first}", "--wrap", "true"))
    assert squeue(live_cli, job_id, "%E|%r") == f"afterok:{first}(unfulfilled)|Dependency"
    schedule_pass()
    assert squeue(live_cli, job_id, "%E|%r") == f"afterok:{first}(unfulfilled)|Dependency"
    assert dependency_line(live_cli, job_id) == (
        f"JobState=PENDING Reason=Dependency Dependency=afterok:{first}(unfulfilled)"
    )
    assert squeue(live_cli, first, "%E") == "(null)"

    status, _out, err = live_cli(
        "alice", "scontrol", "update", f"JobId={job_id}", f"Dependency=afterany:{first}"
    )
    assert (status, err) == (0, ""), err
    assert squeue(live_cli, job_id, "%E") == f"afterany:{first}(unfulfilled)"
    status, _out, err = live_cli("alice", "scontrol", "update", f"JobId={job_id}", "Dependency=")
    assert (status, err) == (0, ""), err
    assert dependency_line(live_cli, job_id).endswith("Dependency=(null)")


def test_refused_with_slurms_words(users, demo, live_cli):
    status, out, err = live_cli("alice", "sbatch", "-d", "afterok:987654", "--wrap", "true")
    assert status != 0 and out == ""
    assert err == "sbatch: error: Batch job submission failed: Job dependency problem\n"
    status, out, err = live_cli(
        "alice", "sbatch", "--dependency=afterok:1,afterany:2?after:3", "--wrap", "true"
    )
    assert status != 0 and "Job dependency problem" in err
