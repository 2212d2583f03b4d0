"""``scontrol update JobId=N NumTasks=T`` of a pending job, as slurmctld's update_job takes
it: the job's task count (and so the CPUs it asks for) changes, a job no longer pending
refuses, less than 1 is "Task count specification invalid"; the job is then checked
against its partition as a submission is."""

from __future__ import annotations

import pytest

from cluster.models import Job
from cluster.services.scheduling import schedule_pass

pytestmark = pytest.mark.django_db(transaction=True)


def submitted(result: tuple[int, str, str]) -> int:
    status, out, err = result
    assert (status, err) == (0, ""), err
    return int(out.split()[-1])


def test_a_pending_job_takes_a_new_task_count(users, demo, live_cli):
    job_id = submitted(live_cli("alice", "sbatch", "--begin=now+3600", "--wrap", "true"))
    assert live_cli("alice", "scontrol", "update", f"JobId={job_id}", "NumTasks=3") == (0, "", "")
    status, out, _ = live_cli("alice", "squeue", "-h", "-j", str(job_id), "-o", "%C")
    assert (status, out) == (0, "3\n")
    assert live_cli("alice", "scontrol", "update", f"JobId={job_id}", "NumTasks=0") == (
        1,
        "",
        f"Task count specification invalid for job {job_id}\n",
    )
    assert live_cli("alice", "scontrol", "update", f"JobId={job_id}", "NumTasks=x") == (
        1,
        "",
        "scontrol: error: Invalid NumTasks value: x\n",
    )
    # More tasks on one node than any node of the partition has CPUs: never runs there.
    status, _, err = live_cli("alice", "scontrol", "update", f"JobId={job_id}", "NumTasks=64", "NumNodes=1")
    assert (status, err) == (
        1,
        "scontrol: error: CPU count per node can not be satisfied\n"
        f"Requested node configuration is not available for job {job_id}\n",
    )
    assert Job.objects.get(pk=job_id).num_tasks == 3


def test_a_running_job_refuses(users, demo, live_cli):
    job_id = submitted(live_cli("alice", "sbatch", "--wrap", "sleep 60"))
    schedule_pass()
    assert Job.objects.get(pk=job_id).state in ("RUNNING", "CONFIGURING")
    assert live_cli("alice", "scontrol", "update", f"JobId={job_id}", "NumTasks=2") == (
        1,
        "",
        f"Job is no longer pending execution for job {job_id}\n",
    )
