"""scontrol requeue and requeuehold against the real controller (cli.main against a live
server): requeuehold puts the job back in the queue held by its user's hold, with
slurmctld's description, until ``scontrol release``; a running job's hold waits for its
run's end. Failures are worded as scontrol 23.11 words them."""

from __future__ import annotations

import pytest

from cluster.models import Job
from cluster.services import agents
from cluster.services.scheduling import schedule_pass
from tests.cli.test_nice import submitted
from tests.cluster.test_nice import register

pytestmark = pytest.mark.django_db(transaction=True)


def test_requeuehold_holds_the_job_until_released(demo, users, live_cli):
    register()
    job_id = submitted(live_cli("alice", "sbatch", "--wrap", "sleep 100"))
    schedule_pass()
    job = Job.objects.get(pk=job_id)
    assert job.state == "RUNNING"
    assert live_cli("alice", "scontrol", "requeuehold", f"JobId={job_id}") == (0, "", "")
    job.refresh_from_db()
    assert (job.state, job.hold) == ("RUNNING", "user")  # until its processes are gone
    agents.job_completed(completion={"job_id": job_id, "node": job.batch_host, "exit_code": 0, "signal": 15,
                                     "end_time": 0, "run": job.restart_count})  # fmt: skip
    job.refresh_from_db()
    assert (job.state, job.reason, job.priority, job.restart_count) == ("PENDING", "JobHeldUser", 0, 1)
    assert live_cli("alice", "squeue", "-h", "-j", str(job_id), "-o", "%T %r")[1] == (
        "PENDING job requeued in held state\n"
    )
    schedule_pass()
    assert Job.objects.get(pk=job_id).state == "PENDING"  # held: no pass starts it
    assert live_cli("alice", "scontrol", "release", str(job_id)) == (0, "", "")
    schedule_pass()
    job.refresh_from_db()
    assert (job.hold, job.reason) == ("", "BeginTime")  # then its last run's credentials expire


def test_requeue_errors_as_scontrol_words_them(demo, users, live_cli):
    register()
    pending = submitted(live_cli("alice", "sbatch", "--hold", "--wrap", "true"))
    status, _, err = live_cli("alice", "scontrol", "requeue", str(pending))
    assert (status, err) == (1, f"Job is pending execution for job {pending}\n")
    status, _, err = live_cli("alice", "scontrol", "requeuehold", "State=SpecialExit", str(pending))
    assert (status, err) == (1, "scontrol: error: State=SpecialExit is not supported by fsched\n")
    status, _, err = live_cli("alice", "scontrol", "requeuehold")
    assert (status, err) == (1, "scontrol: error: too few arguments for keyword:requeuehold\n")
    # Incomplete is taken (and the job list follows it).
    status, _, err = live_cli("alice", "scontrol", "requeue", "Incomplete", str(pending))
    assert (status, err) == (1, f"Job is pending execution for job {pending}\n")


def test_hold_and_uhold_as_slurmctld_takes_them(demo, users, live_cli):
    # An operator's hold is an administrator's, whoever owns the job; uhold a user's
    # whoever asks; a user's hold leaves an administrator's hold as it is (it could then
    # release it).
    own = submitted(live_cli("admin", "sbatch", "--begin=now+600", "--wrap", "true"))
    assert live_cli("admin", "scontrol", "hold", str(own)) == (0, "", "")
    assert (Job.objects.get(pk=own).hold, Job.objects.get(pk=own).reason) == ("admin", "JobHeldAdmin")
    alices = submitted(live_cli("alice", "sbatch", "--begin=now+600", "--wrap", "true"))
    assert live_cli("admin", "scontrol", "uhold", str(alices)) == (0, "", "")
    assert (Job.objects.get(pk=alices).hold, Job.objects.get(pk=alices).reason) == ("user", "JobHeldUser")
    assert live_cli("admin", "scontrol", "hold", str(alices)) == (0, "", "")  # the operator's, now
    assert Job.objects.get(pk=alices).hold == "admin"
    assert live_cli("alice", "scontrol", "hold", str(alices)) == (0, "", "")
    assert Job.objects.get(pk=alices).hold == "admin"
    status, _, err = live_cli("alice", "scontrol", "release", str(alices))
    assert (status, err) == (1, f"Access/permission denied for job {alices}\n")
