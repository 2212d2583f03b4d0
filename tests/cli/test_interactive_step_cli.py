"""The interactive step (SLURM_INTERACTIVE_STEP) is ``N.interactive`` to every command:
sstat -j, scontrol show step, squeue -s and scancel take and print it so."""

from __future__ import annotations

import pytest

from cluster.services import step_usage
from slurmwords import agent_messages as am
from slurmwords.step_ids import INTERACTIVE_STEP
from steps import services
from steps.models import Step
from tests.steps.test_step_services import body, running_job

pytestmark = pytest.mark.django_db(transaction=True)


def test_commands_take_and_print_n_interactive(demo, users, live_cli):
    job = running_job(users["alice"])
    step = services.create_step(actor=users["alice"], job_id=job.id, data=body(interactive=True))
    node = step.layout[0][0]
    usage = am.TaskUsage(
        task=0, pids=[9], rss_kb=2048, max_rss_kb=2048, vmem_kb=4096, max_vmem_kb=4096, pages=0,
        max_pages=0, cpu_secs=1.0, read_bytes=None, max_read_bytes=None, write_bytes=None,
        max_write_bytes=None,
    )  # fmt: skip
    record = am.StepUsageRecord(job_id=job.id, step=str(INTERACTIVE_STEP), node=node, tasks=[usage])
    step_usage.usage_reported(nodes=[node], msg=am.StepUsage(time=1.0, nodes=[node], steps=[record]))
    status, out, err = live_cli(
        "alice", "sstat", "-P", "-n", "-j", f"{job.id}.interactive", "-o", "jobid,maxrss"
    )
    assert (status, err, out) == (0, "", f"{job.id}.interactive|2M\n")
    status, out, err = live_cli("alice", "scontrol", "show", "step", f"{job.id}.interactive")
    assert status == 0 and out.startswith(f"StepId={job.id}.interactive UserId=alice "), (out, err)
    status, out, _ = live_cli("alice", "squeue", "-s", "-h", "-o", "%i")
    assert f"{job.id}.interactive" in out.split()
    status, out, err = live_cli("alice", "scancel", f"{job.id}.interactive")
    assert (status, err) == (0, ""), err
    assert Step.objects.get(pk=step.pk).state == "CANCELLED"
    status, _, err = live_cli("alice", "scancel", f"{job.id}.interactive")
    assert status == 1 and err == (
        f"scancel: error: Kill job error on job step id {job.id}.interactive: "
        "Job/step already completing or completed\n"
    )
