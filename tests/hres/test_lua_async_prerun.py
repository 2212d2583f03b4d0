"""hres/lua's asynchronous pre-run (#17 point 2, its row of the callback table): a thread
of its own on a new state per call; the job stays CONFIGURING and is not launched until it
succeeds (payload replaced), is requeued or cancelled when it fails or runs too long, and a
job cancelled meanwhile has the result dropped and its revoke called."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db.models import F
from django.utils import timezone

from cluster.core.states import JobState, NodeFlag
from cluster.models import Job, Node
from cluster.services.configuration import config_load
from cluster.services.jobs import job_cancel, job_requeue
from cluster.services.scheduling import schedule_pass
from hres import lua_async, lua_async_jobs
from hres.lua_callbacks import job_preps
from power import services as power_services
from tests.hres.test_lua_callbacks import cluster, started, submit  # noqa: F401 - the fixture

# The thread writes from its own connection: the test's rows must be committed.
pytestmark = pytest.mark.django_db(transaction=True)

PRERUN = 'return slurm.SUCCESS, "token=" .. a.job_id'


def with_async(cluster, body: str) -> None:  # noqa: F811 - the fixture
    """The qpu script with an asynchronous pre-run whose body is ``body``."""
    epilog = 'note("async_running " .. tostring(b.async_running))'
    started(cluster, "qpu", hres_controller_job_prerun=PRERUN, hres_controller_job_epilog=epilog)
    path = cluster.conf / "qpu.lua"
    path.write_text(
        path.read_text()
        + "function hres_controller_job_async_prerun(ctx, a, b)\n"
        + '  note("hres_controller_job_async_prerun " .. ctx.name .. " " .. b.payload .. " "'
        + " .. tostring(b.async_running))\n"
        + f"  {body}\nend\n"
    )
    cluster.load()
    cluster.calls()


def joined() -> None:
    assert lua_async.wait(20), "the asynchronous pre-run did not end"


def test_success_replaces_the_payload_and_launches_the_job(cluster, users):  # noqa: F811
    with_async(cluster, 'return slurm.SUCCESS, "async=" .. a.job_id')
    job_id = submit(users["alice"], licenses="qpu:1")
    schedule_pass()
    joined()
    job = Job.objects.get(pk=job_id)
    assert job.state == JobState.RUNNING
    assert f"hres_controller_job_async_prerun qpu token={job_id} true" in cluster.calls()
    (prep,) = job_preps(job_id, 0)
    assert prep["payload"] == f"async={job_id}"
    assert not lua_async_jobs.busy(job_id)


def test_the_job_stays_configuring_unlaunched_while_it_runs(cluster, users):  # noqa: F811
    gate = cluster.conf / "gate"
    # Spins until the test creates the gate file (PrologTimeout bounds it otherwise).
    with_async(
        cluster,
        f'while not io.open("{gate}") do end return slurm.SUCCESS',
    )
    job_id = submit(users["alice"], licenses="qpu:1")
    schedule_pass()
    try:
        job = Job.objects.get(pk=job_id)
        assert job.state == JobState.CONFIGURING
        assert lua_async_jobs.running(job_id, 0)
        assert not job.launched
    finally:
        gate.touch()
        joined()
    assert Job.objects.get(pk=job_id).state == JobState.RUNNING
    # Its payload is the pre-run's: the asynchronous pre-run returned none.
    assert job_preps(job_id, 0)[0]["payload"] == f"token={job_id}"


def test_failure_requeues_the_job(cluster, users):  # noqa: F811
    with_async(cluster, 'slurm.user_msg("no qpu slot") return slurm.ERROR')
    job_id = submit(users["alice"], licenses="qpu:1")
    schedule_pass()
    joined()
    job = Job.objects.get(pk=job_id)
    assert job.final_state == JobState.REQUEUED
    assert not lua_async_jobs.busy(job_id)


def test_failure_cancels_a_job_that_cannot_be_requeued(cluster, users):  # noqa: F811
    with_async(cluster, "return slurm.ERROR")
    job_id = submit(users["alice"], licenses="qpu:1", requeue=False)
    schedule_pass()
    joined()
    assert Job.objects.get(pk=job_id).final_state == JobState.CANCELLED


def test_prolog_timeout_stops_one_that_loops_and_requeues_the_job(cluster, users):  # noqa: F811
    with_async(cluster, "while true do end")
    cluster.load("PrologTimeout=1")
    job_id = submit(users["alice"], licenses="qpu:1")
    schedule_pass()
    joined()
    assert Job.objects.get(pk=job_id).final_state == JobState.REQUEUED


def test_cancelled_meanwhile_drops_the_result_and_calls_the_revoke(cluster, users):  # noqa: F811
    gate = cluster.conf / "gate"
    with_async(cluster, f'while not io.open("{gate}") do end return slurm.SUCCESS, "late"')
    job_id = submit(users["alice"], licenses="qpu:1")
    schedule_pass()
    try:
        assert Job.objects.get(pk=job_id).state == JobState.CONFIGURING
        job_cancel(actor=users["alice"], job_id=job_id)
    finally:
        gate.touch()
        joined()
    job = Job.objects.get(pk=job_id)
    assert job.state != JobState.RUNNING
    assert job_preps(job_id, 0)[0]["payload"] == f"token={job_id}"  # the result dropped
    assert "hres_controller_job_revoke qpu" in cluster.calls()


def test_runs_in_a_thread_of_its_own(cluster, users):  # noqa: F811
    names = []
    original = lua_async._thread

    def spy(pending):
        names.append(threading.current_thread().name)
        original(pending)

    lua_async._thread = spy
    try:
        with_async(cluster, "return slurm.SUCCESS")
        submit(users["alice"], licenses="qpu:1")
        schedule_pass()
        joined()
    finally:
        lua_async._thread = original
    assert names and names[0] != threading.current_thread().name


def test_a_job_waiting_for_its_nodes_to_power_up_is_launched_by_power_saving_after_it(
    cluster,  # noqa: F811
    users,
):
    gate = cluster.conf / "gate"
    with_async(cluster, f'while not io.open("{gate}") do end return slurm.SUCCESS, "async"')
    job_id = submit(users["alice"], licenses="qpu:1")
    schedule_pass()
    nodes = list(Job.objects.get(pk=job_id).alloc)
    try:
        # Its nodes went to power up meanwhile: the end of the pre-run must not launch it.
        Node.objects.filter(name__in=nodes).update(flags=F("flags").bitor(NodeFlag.POWERING_UP))
    finally:
        gate.touch()
        joined()
    job = Job.objects.get(pk=job_id)
    assert job.state == JobState.CONFIGURING
    assert not lua_async_jobs.busy(job_id)
    Node.objects.filter(name__in=nodes).update(flags=F("flags").bitand(~NodeFlag.POWERING_UP))
    assert power_services.launch_jobs([job_id], now=timezone.now()) == [job_id]
    assert Job.objects.get(pk=job_id).state == JobState.RUNNING
    assert job_preps(job_id, 0)[0]["payload"] == "async"


def test_a_job_requeued_meanwhile_is_not_scheduled_again_until_it_ends(cluster, users):  # noqa: F811
    gate = cluster.conf / "gate"
    with_async(cluster, f'while not io.open("{gate}") do end return slurm.SUCCESS, "late"')
    job_id = submit(users["alice"], licenses="qpu:1")
    schedule_pass()
    try:
        job_requeue(actor=users["alice"], job_id=job_id)
        job = Job.objects.get(pk=job_id)
        assert job.state == JobState.PENDING
        # Past the requeued job's begin time (batch_requeue_fini's cred_expire + 1).
        eligible = job.begin_time + timedelta(seconds=1)
        schedule_pass(now=eligible)
        assert Job.objects.get(pk=job_id).state == JobState.PENDING
        # The controller epilog of the run that ended sees it still running.
        calls = cluster.calls()
        assert calls[calls.index("hres_controller_job_epilog qpu") + 1] == "async_running true"
    finally:
        gate.touch()
        joined()
    assert "hres_controller_job_revoke qpu" in cluster.calls()  # its result dropped
    schedule_pass(now=eligible)
    joined()
    assert Job.objects.get(pk=job_id).restart_count == 1
    assert Job.objects.get(pk=job_id).state == JobState.RUNNING


def test_one_lost_by_a_controller_that_stopped_requeues_the_job_at_the_next_start(cluster, users):  # noqa: F811
    gate = cluster.conf / "gate"
    with_async(cluster, f'while not io.open("{gate}") do end return slurm.SUCCESS, "late"')
    job_id = submit(users["alice"], licenses="qpu:1")
    schedule_pass()
    try:
        # A new controller process knows of no asynchronous pre-run running.
        lua_async_jobs.end(job_id, 0)
        cluster.load()  # a reconfigure leaves it alone
        assert Job.objects.get(pk=job_id).state == JobState.CONFIGURING
        config_load(path=cluster.conf / "slurm.conf", actor="slurmctld")  # the start
        assert Job.objects.get(pk=job_id).final_state == JobState.REQUEUED
    finally:
        gate.touch()
        joined()
    assert "async_pending" not in job_preps(job_id, 0)[0]
    assert job_preps(job_id, 0)[0]["payload"] == f"token={job_id}"
