"""The recovery of asynchronous pre-runs lost with their process (#17, distributed mode):
one process of the cluster recovers at a time (a lease), and a job whose pre-run is alive
in another process is left alone (that process holds the lock its marker names)."""

from __future__ import annotations

import os
import time
import uuid

import pytest
from django.db import DEFAULT_DB_ALIAS, connections

from cluster import cycles
from cluster.core.states import JobState
from cluster.cycles import cycle_lock
from cluster.models import Job
from cluster.services.configuration import config_load
from cluster.services.scheduling import schedule_pass
from hres import lua_async, lua_async_jobs, lua_async_owner
from hres.lua_callbacks import job_preps
from hres.models import JobPluginRun
from tests.hres.test_lua_async_prerun import joined, with_async
from tests.hres.test_lua_callbacks import cluster, submit  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db(transaction=True)


def waiting(cluster, users) -> tuple[int, object]:  # noqa: F811 - the fixture
    """A job whose asynchronous pre-run waits for the gate file, this process's record
    of it dropped (as in a process that did not start it)."""
    gate = cluster.conf / "gate"
    with_async(cluster, f'while not io.open("{gate}") do end return slurm.SUCCESS, "late"')
    job_id = submit(users["alice"], licenses="qpu:1")
    schedule_pass()
    lua_async_jobs.end(job_id, 0)
    return job_id, gate


def test_the_marker_names_the_process_and_is_never_sent_to_the_nodes(cluster, users):  # noqa: F811
    job_id, gate = waiting(cluster, users)
    try:
        (prep,) = JobPluginRun.objects.filter(job_id=job_id).values_list("prep", flat=True)
        assert prep["async_owner"] == lua_async_owner.token()
        assert not {"async_pending", "async_owner"} & set(job_preps(job_id, 0)[0])
    finally:
        gate.touch()
        joined()


def test_a_process_that_finds_the_lease_held_leaves_the_recovery_to_its_holder(cluster, users):  # noqa: F811
    job_id, gate = waiting(cluster, users)
    try:
        with cycle_lock(lua_async.RECOVER_LOCK) as got:
            assert got  # another process recovering now
            config_load(path=cluster.conf / "slurm.conf", actor="slurmctld")
            assert Job.objects.get(pk=job_id).state == JobState.CONFIGURING
        config_load(path=cluster.conf / "slurm.conf", actor="slurmctld")
        assert Job.objects.get(pk=job_id).final_state == JobState.REQUEUED
    finally:
        gate.touch()
        joined()


def test_a_cycle_recovers_between_two_starts(cluster, users):  # noqa: F811
    job_id, gate = waiting(cluster, users)
    try:
        assert "hres_async_recover" in {c.name for c in cycles.cycle_specs()}
        assert cycles.run_named("hres_async_recover") == "recovered=1"
        assert Job.objects.get(pk=job_id).final_state == JobState.REQUEUED
    finally:
        gate.touch()
        joined()


@pytest.mark.distributed
@pytest.mark.skipif(not os.environ.get("FSCHED_DATABASE_URL"), reason="needs FSCHED_DATABASE_URL")
def test_a_job_whose_prerun_is_alive_in_another_process_is_not_recovered(cluster, users):  # noqa: F811
    job_id, gate = waiting(cluster, users)
    other = uuid.uuid4().hex
    # The other process: a connection of its own holding its token's lock, as it does
    # for its life; its marker on the job's run.
    held = connections.create_connection(DEFAULT_DB_ALIAS)
    try:
        with held.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s)", [lua_async_owner.lock_key(other)])
        for row in JobPluginRun.objects.filter(job_id=job_id):
            row.prep = {**row.prep, "async_owner": other}
            row.save(update_fields=["prep"])
        assert lua_async_owner.alive_elsewhere(other)
        assert lua_async.recover_lost(now=None) == []
        assert Job.objects.get(pk=job_id).state == JobState.CONFIGURING
        held.close()  # that process ends: its lock goes with its connection
        deadline = time.monotonic() + 10  # once its server process has gone
        while lua_async_owner.alive_elsewhere(other) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not lua_async_owner.alive_elsewhere(other)
        config_load(path=cluster.conf / "slurm.conf", actor="slurmctld")
        assert Job.objects.get(pk=job_id).final_state == JobState.REQUEUED
    finally:
        held.close()
        gate.touch()
        joined()
