"""Launches the agent does not hold and cancels never acknowledged time out (issues 10, 18).

The clock is passed in: jobs are placed at chosen times before ``now``. A launch is judged
at its agent's ping (its job list, as slurmd's registration), a cancel by the health cycle.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from cluster import clock
from cluster.core.states import NodeFlag
from cluster.models import Event, Job, Node
from cluster.services import agents
from cluster.services.jobs import job_submit
from cluster.services.launch_watch import KILL_TASK_FAILED, launch_watch_pass
from cluster.services.scheduling import schedule_pass
from tests.cluster.test_prolog_epilog_service import set_option

pytestmark = pytest.mark.django_db

NODES = [f"node{i:02d}" for i in range(1, 33)]


def register(now):
    agents.agent_register(
        agent_id="test:1",
        nodes=[{"name": n, "cpus": 4, "real_memory": 2000, "boot_time": 1.0} for n in NODES],
        running=[],
        completions=[],
        now=now,
    )


def running_job(user, *, started, **spec) -> Job:
    job_id = job_submit(
        user=user, spec={"wrap": "true", "work_dir": "/tmp", "partition": "batch", **spec}
    ).job_ids[0]
    schedule_pass()
    Job.objects.filter(pk=job_id).update(start_time=started)
    job = Job.objects.get(pk=job_id)
    assert (job.state, job.launched) == ("RUNNING", False)
    return job


def ping(now, *, jobs=(), in_flight=(), nodes=NODES) -> list[int]:
    """The agent's ping holding ``jobs`` (None: an agent that sends no list); the ids failed."""
    held = None if jobs is None else list(jobs)
    return agents.agent_ping(nodes=list(nodes), now=now, jobs=held, in_flight=list(in_flight))


def test_launch_never_reported_started_is_requeued_after_batch_start_timeout(demo, users):
    now = timezone.now()
    register(now - timedelta(minutes=5))
    late = running_job(users["alice"], started=now - timedelta(seconds=11))
    young = running_job(users["alice"], started=now - timedelta(seconds=9))
    assert ping(now) == [late.id]
    late.refresh_from_db()
    assert (late.state, late.restart_count, late.batch_host, late.alloc) == ("PENDING", 1, "", {})
    why = f"Batch JobId={late.id} missing from batch node node09 (not found BatchStartTime after startup)"
    assert Event.objects.filter(job_id=late.id, new_state="PENDING", reason=why).exists()
    young.refresh_from_db()
    assert young.state == "RUNNING"


def test_launch_timeout_ends_a_job_that_may_not_requeue_node_fail(demo, users):
    now = timezone.now()
    register(now - timedelta(minutes=5))
    job = running_job(users["alice"], started=now - timedelta(seconds=30), requeue=False)
    host = job.batch_host
    ping(now)
    job.refresh_from_db()
    assert (job.state, job.reason) == ("NODE_FAIL", "NodeFail")
    assert Node.objects.get(name=host).base_state == "IDLE"  # its nodes are released


def test_launch_timeout_counts_from_the_batch_hosts_registration_and_from_slurm_conf(demo, users):
    now = timezone.now()
    register(now - timedelta(minutes=5))
    job = running_job(users["alice"], started=now - timedelta(seconds=30))
    register(now - timedelta(seconds=3))  # the agent came back and was sent the launch again
    ping(now)
    assert Job.objects.get(pk=job.id).state == "RUNNING"
    set_option("BatchStartTimeout", "60")
    ping(now + timedelta(seconds=30))
    assert Job.objects.get(pk=job.id).state == "RUNNING"
    ping(now + timedelta(seconds=61))
    assert Job.objects.get(pk=job.id).state == "PENDING"


def test_a_started_job_is_never_timed_out(demo, users):
    now = timezone.now()
    register(now - timedelta(minutes=5))
    job = running_job(users["alice"], started=now - timedelta(hours=1))
    agents.job_started(job_id=job.id, node=job.batch_host, run=0)
    assert ping(now) == []
    assert ping(now, jobs=None) == []
    assert Job.objects.get(pk=job.id).state == "RUNNING"


def test_cancel_never_acknowledged_ends_the_job_and_drains_its_node(demo, users):
    now = timezone.now()
    register(now - timedelta(minutes=5))
    stuck = running_job(users["alice"], started=now - timedelta(minutes=3))
    slow = running_job(users["alice"], started=now - timedelta(minutes=3))
    agents.jobs_started(items=[{"job_id": j.id, "node": j.batch_host, "run": 0} for j in (stuck, slow)])
    # demo slurm.conf: KillWait=5, and UnkillableStepTimeout's default 60.
    Job.objects.filter(pk=stuck.id).update(
        final_state="CANCELLED", kill_requested=now - timedelta(seconds=66)
    )
    Job.objects.filter(pk=slow.id).update(final_state="CANCELLED", kill_requested=now - timedelta(seconds=64))
    assert launch_watch_pass(now=now) == "kill_failed=1 drained=1"
    stuck.refresh_from_db()
    assert (stuck.state, stuck.alloc) == ("CANCELLED", {})
    assert Event.objects.filter(job_id=stuck.id, new_state="CANCELLED", reason=KILL_TASK_FAILED).exists()
    node = Node.objects.get(name=stuck.batch_host)
    assert node.flags & NodeFlag.DRAIN
    assert (node.reason, node.reason_user) == ("Kill task failed", "slurm")
    assert Job.objects.get(pk=slow.id).state == "RUNNING"


def test_an_administrators_drain_reason_is_kept(demo, users):
    now = timezone.now()
    register(now - timedelta(minutes=5))
    job = running_job(users["alice"], started=now - timedelta(minutes=3))
    agents.job_started(job_id=job.id, node=job.batch_host, run=0)
    Node.objects.filter(name=job.batch_host).update(flags=int(NodeFlag.DRAIN), reason="disk swap")
    Job.objects.filter(pk=job.id).update(final_state="TIMEOUT", kill_requested=now - timedelta(minutes=5))
    assert launch_watch_pass(now=now).endswith("drained=0")
    assert Job.objects.get(pk=job.id).state == "TIMEOUT"
    assert Node.objects.get(name=job.batch_host).reason == "disk swap"


def _pass_committing_at(pass_clock, commit_clock, capture):
    """A pass whose clock reads ``pass_clock`` and whose transaction commits, sending its
    launches, when the controller's clock reads ``commit_clock``."""
    clock.install(lambda: commit_clock)
    try:
        with capture(execute=True):
            schedule_pass(now=pass_clock)
    finally:
        clock.uninstall()


def test_a_long_pass_launches_get_the_whole_timeout_from_their_commit(
    demo, users, django_capture_on_commit_callbacks
):
    # Measured in distributed mode: a pass starting 2,845 jobs committed 27 s after its
    # clock, and the launches were timed out from that clock before the agents could answer.
    now = timezone.now()
    register(now - timedelta(minutes=5))
    spec = {"wrap": "true", "work_dir": "/tmp", "partition": "batch"}
    job_id = job_submit(user=users["alice"], spec=spec).job_ids[0]
    pass_clock, sent = now - timedelta(seconds=30), now - timedelta(seconds=5)
    _pass_committing_at(pass_clock, sent, django_capture_on_commit_callbacks)
    job = Job.objects.get(pk=job_id)
    assert (job.state, job.start_time, job.launch_sent) == ("RUNNING", pass_clock, sent)
    assert ping(now) == []
    assert ping(sent + timedelta(seconds=11)) == [job_id]
    assert Job.objects.get(pk=job_id).state == "PENDING"


def test_a_quick_pass_records_no_launch_time(demo, users, django_capture_on_commit_callbacks):
    now = timezone.now()
    register(now - timedelta(minutes=5))
    spec = {"wrap": "true", "work_dir": "/tmp", "partition": "batch"}
    job_id = job_submit(user=users["alice"], spec=spec).job_ids[0]
    _pass_committing_at(now, now + timedelta(milliseconds=300), django_capture_on_commit_callbacks)
    job = Job.objects.get(pk=job_id)
    assert (job.state, job.launch_sent) == ("RUNNING", None)
    assert ping(now + timedelta(seconds=11)) == [job_id]


def test_a_job_the_agent_holds_is_not_missing_though_its_start_is_not_reported(demo, users):
    # Issue 18: at 10,000 nodes the controller's backlog held the agents' ``started``
    # reports unread past BatchStartTimeout, and the health cycle requeued thousands of
    # running jobs. The agent's list says it has them: nothing is missing, at the ping or
    # in the cycle.
    now = timezone.now()
    register(now - timedelta(minutes=5))
    job = running_job(users["alice"], started=now - timedelta(minutes=2))
    assert ping(now, jobs=[job.id]) == []
    assert launch_watch_pass(now=now) == "kill_failed=0 drained=0"
    assert Job.objects.get(pk=job.id).state == "RUNNING"
    agents.job_started(job_id=job.id, node=job.batch_host, run=0)  # its report, read at last
    assert Job.objects.get(pk=job.id).launched


def test_a_launch_on_its_way_to_the_agent_is_not_missing_and_a_lost_one_is(demo, users):
    now = timezone.now()
    register(now - timedelta(minutes=5))
    on_its_way = running_job(users["alice"], started=now - timedelta(seconds=30))
    lost = running_job(users["alice"], started=now - timedelta(seconds=30))
    assert ping(now, in_flight=[on_its_way.id]) == [lost.id]
    assert Job.objects.get(pk=on_its_way.id).state == "RUNNING"
    lost.refresh_from_db()
    assert (lost.state, lost.restart_count) == ("PENDING", 1)


def test_an_agent_without_a_job_list_keeps_the_started_report_rule(demo, users):
    now = timezone.now()
    register(now - timedelta(minutes=5))
    late = running_job(users["alice"], started=now - timedelta(seconds=11))
    young = running_job(users["alice"], started=now - timedelta(seconds=9))
    assert ping(now, jobs=None) == [late.id]
    assert Job.objects.get(pk=young.id).state == "RUNNING"


def test_an_agents_ping_speaks_only_for_its_own_nodes(demo, users):
    now = timezone.now()
    register(now - timedelta(minutes=5))
    job = running_job(users["alice"], started=now - timedelta(seconds=30))
    others = [n for n in NODES if n != job.batch_host]
    assert ping(now, nodes=others) == []
    assert ping(now, nodes=others, jobs=None) == []
    assert Job.objects.get(pk=job.id).state == "RUNNING"
    assert ping(now, nodes=[job.batch_host]) == [job.id]


def test_a_launch_still_queued_for_the_connection_is_not_missing(demo, users):
    """The server's own backlog of sends (the channel layer's queue to the consumer) can
    hold a launch long after its launch_sent: one this connection has not written is not
    missing until the channel layer would have dropped it; one it wrote, that the agent
    read and does not hold, is missing as before."""
    from cluster.services.launch_watch import CHANNEL_EXPIRY

    now = timezone.now()
    register(now - timedelta(minutes=5))
    read_and_lost = running_job(users["alice"], started=now - timedelta(seconds=30))
    queued = running_job(users["alice"], started=now - timedelta(seconds=30))
    long_queued = running_job(users["alice"], started=now - timedelta(seconds=CHANNEL_EXPIRY + 30))
    failed = agents.agent_ping(nodes=NODES, now=now, jobs=[], written={read_and_lost.id})
    assert sorted(failed) == sorted([read_and_lost.id, long_queued.id])
    assert Job.objects.get(pk=queued.id).state == "RUNNING"
    # Without a connection's record (the simulator's agents), launch_sent decides as before.
    assert ping(now) == [queued.id]
