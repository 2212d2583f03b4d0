"""``scontrol update JobId=N Priority=P`` through the real command against a live controller,
as slurmctld's update_job takes it: an operator's value is kept by the scheduler (and its nice
reset), a user may not raise one and a lowering is refused as not persistent, 0 holds,
a held job refuses a value, scontrol's parse_uint32 refuses what is not a number below
NO_VAL, and the errors print as scontrol 23.11 does ("<error> for job N")."""

from __future__ import annotations

import pytest

from cluster.models import Event, Job
from cluster.services.scheduling import schedule_pass

pytestmark = pytest.mark.django_db(transaction=True)


def submitted(result: tuple[int, str, str]) -> int:
    status, out, err = result
    assert (status, err) == (0, ""), err
    return int(out.split()[-1])


def priority_of(live_cli, job_id: int) -> str:
    status, out, err = live_cli("alice", "squeue", "-h", "-j", str(job_id), "-o", "%Q %r")
    assert (status, err) == (0, ""), err
    return out.strip()


def test_an_operator_sets_a_priority_the_pass_keeps(users, demo, live_cli):
    first = submitted(live_cli("alice", "sbatch", "--begin=now+3600", "--nice=7", "--wrap", "true"))
    second = submitted(live_cli("alice", "sbatch", "--begin=now+3600", "--wrap", "true"))
    schedule_pass()
    # The demo's multifactor with no weight: every job's priority is 1.
    assert priority_of(live_cli, first) == "1 BeginTime"
    assert live_cli("admin", "scontrol", "update", f"JobId={first}", "Priority=5000") == (0, "", "")
    schedule_pass()
    schedule_pass()
    assert priority_of(live_cli, first) == "5000 BeginTime"
    job = Job.objects.get(pk=first)
    assert (job.priority, job.priority_set, job.nice) == (5000, 5000, 0)  # the nice reset, as slurmctld does
    event = Event.objects.filter(job_id=first).latest("id")
    assert event.user == "admin" and event.detail["after"]["priority"] == 5000
    # The job's user may not raise it, and a lowering would not last: refused, unchanged.
    assert live_cli("alice", "scontrol", "update", f"JobId={second}", "Priority=10") == (
        1,
        "",
        f"Access/permission denied for job {second}\n",
    )
    assert live_cli("alice", "scontrol", "update", f"JobId={first}", "Priority=10") == (
        1,
        "",
        f"Changes to job priority are not persistent, change nice instead for job {first}\n",
    )
    assert Job.objects.get(pk=first).priority == 5000
    # Another user's job: not even visible to change.
    assert live_cli("bob", "scontrol", "update", f"JobId={first}", "Priority=1")[0] == 1


def test_priority_0_holds_and_a_held_job_refuses_a_value(users, demo, live_cli):
    job_id = submitted(live_cli("alice", "sbatch", "--begin=now+3600", "--wrap", "true"))
    schedule_pass()
    assert live_cli("alice", "scontrol", "update", f"JobId={job_id}", "Priority=0") == (0, "", "")
    assert priority_of(live_cli, job_id) == "0 JobHeldUser"
    assert live_cli("admin", "scontrol", "update", f"JobId={job_id}", "Priority=9") == (
        1,
        "",
        f"Job is in held state, pending scheduler release for job {job_id}\n",
    )
    assert live_cli("alice", "scontrol", "release", str(job_id))[0] == 0
    schedule_pass()
    assert priority_of(live_cli, job_id) == "1 BeginTime"


@pytest.mark.parametrize("value", ["abc", "-1", "4294967294", "12x", " "])
def test_scontrol_refuses_a_value_parse_uint32_refuses(users, demo, live_cli, value):
    job_id = submitted(live_cli("alice", "sbatch", "--begin=now+3600", "--wrap", "true"))
    assert live_cli("admin", "scontrol", "update", f"JobId={job_id}", f"priority={value}") == (
        1,
        "",
        f"scontrol: error: Invalid Priority value: {value}\n",
    )
    assert Job.objects.get(pk=job_id).priority_set == 0
