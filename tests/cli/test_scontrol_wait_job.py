"""scontrol wait_job, show daemons and show topology against the real controller
(cli.main against a live server), worded as scontrol 23.11 words them."""

from __future__ import annotations

import socket

import pytest

from cli import scontrol_daemons, scontrol_wait_job
from cluster.models import Job
from cluster.services.scheduling import schedule_pass
from tests.cli.test_nice import submitted
from tests.cluster.test_nice import register

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_running_job_is_ready_and_others_are_not(demo, users, live_cli):
    register()
    running = submitted(live_cli("alice", "sbatch", "--wrap", "sleep 100"))
    schedule_pass()
    assert Job.objects.get(pk=running).state == "RUNNING"
    assert live_cli("alice", "scontrol", "wait_job", str(running)) == (
        0, "", f"scontrol: Nodes are ready for job {running}\n"
    )  # fmt: skip
    held = submitted(live_cli("alice", "sbatch", "--hold", "--wrap", "true"))
    assert live_cli("alice", "scontrol", "wait_job", f"{held}_7") == (
        1, "", f"scontrol: Job {held} no longer running\n"
    )  # fmt: skip
    assert live_cli("alice", "scontrol", "wait_job", "99999") == (
        1, "", "scontrol: Problem running job 99999\n"
    )  # fmt: skip
    assert live_cli("alice", "scontrol", "wait_job", "x") == (1, "", "Invalid job_id x\n")
    assert live_cli("alice", "scontrol", "wait_job") == (1, "", "too few arguments for keyword:wait_job\n")
    assert live_cli("alice", "scontrol", "wait_job", "1", "2") == (
        1, "", "too many arguments for keyword:wait_job\n"
    )  # fmt: skip


def test_a_configuring_job_is_waited_for_until_it_runs_or_the_time_is_up(demo, users, live_cli, monkeypatch):
    register()
    job_id = submitted(live_cli("alice", "sbatch", "-p", "cloud", "--wrap", "true"))
    schedule_pass()
    assert Job.objects.get(pk=job_id).state == "CONFIGURING"  # its cloud node powers up
    slept: list[float] = []
    monkeypatch.setattr(scontrol_wait_job, "sleep", slept.append)
    status, out, err = live_cli("alice", "scontrol", "wait_job", str(job_id))
    # The demo's SuspendTimeout=5 and ResumeTimeout=60: five times their sum, by 3 s.
    assert (status, out) == (1, "")
    assert err == f"scontrol: Waiting for nodes to boot\nscontrol: Problem running job {job_id}\n"
    assert slept == [3] * 109

    def boots(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == 2:
            Job.objects.filter(pk=job_id).update(state="RUNNING")

    slept.clear()
    monkeypatch.setattr(scontrol_wait_job, "sleep", boots)
    assert live_cli("alice", "scontrol", "wait_job", str(job_id)) == (
        0, "", f"scontrol: Waiting for nodes to boot\nscontrol: Nodes are ready for job {job_id}\n"
    )  # fmt: skip
    assert slept == [3, 3]


def test_show_daemons_and_topology(demo, users, live_cli):
    # The demo's SlurmctldHost is localhost; no agent serves a node in this test.
    assert live_cli("alice", "scontrol", "show", "daemons") == (0, "slurmctld \n", "")
    assert live_cli("alice", "scontrol", "show", "topology") == (0, "", "")
    assert live_cli("alice", "scontrol", "show", "topo", "node01") == (0, "", "")


def test_daemons_by_the_host_names():
    here = socket.gethostname()
    node = {"name": "node01", "agent": f"{here}:abc"}
    assert scontrol_daemons.daemons(["localhost"], [node], here) == "slurmctld slurmd"
    assert scontrol_daemons.daemons(["ctl(10.0.0.1)"], [node], here) == "slurmd"
    assert scontrol_daemons.daemons(["ctl"], [{"name": "n1", "agent": "other:1"}], here) == "(null)"
    assert scontrol_daemons.daemons([], [node], here) == "(null)"  # slurmd needs a controller
    assert scontrol_daemons.controller_hosts("ctl1(10.0.0.1), ctl2") == ["ctl1", "ctl2"]
