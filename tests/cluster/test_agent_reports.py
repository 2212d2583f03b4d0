"""An agent's starts in one ``started_batch``, and the starts and ends that arrive together
applied in one transaction (#11 point 4: a ``started`` each was a message and a
transaction of its own, the controller's most frequent write per job)."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.db import connection
from django.test.utils import CaptureQueriesContext

from cluster.models import Job
from cluster.services import agents
from cluster.services.jobs import job_submit
from cluster.services.scheduling import schedule_pass
from slurmwords import agent_messages as am
from tests.cluster.agent_socket import AgentSocket

pytestmark = pytest.mark.django_db(transaction=True)


def running_on_node01(user, count: int) -> list[int]:  # type: ignore[no-untyped-def]
    ids = [
        job_submit(user=user, spec={"wrap": "sleep 100", "work_dir": "/tmp", "nodelist": "node01"}).job_ids[0]
        for _ in range(count)
    ]
    schedule_pass()
    assert all(j.state == "RUNNING" and not j.launched for j in Job.objects.filter(pk__in=ids))
    return ids


def test_a_started_batch_marks_its_own_nodes_jobs_launched(demo, users):
    async def scenario() -> list[int]:
        agent = AgentSocket()
        await agent.authenticate()
        await agent.register("node01")
        ids = await sync_to_async(running_on_node01)(users["alice"], 3)
        for _ in ids:
            assert (await agent.receive())["type"] == "launch"
        batch = am.StartedBatch(
            started=[
                am.JobStart(job_id=ids[0], node="node01", pid=11, time=1.0, run=0),
                am.JobStart(job_id=ids[1], node="node01", pid=12),  # no run: an earlier agent's
                # Another node's job: not this connection's to report, ignored.
                am.JobStart(job_id=ids[2], node="node02", pid=13, run=0),
            ]
        )
        await agent.send(batch.to_wire())
        await agent.nothing()
        await agent.close()
        return ids

    ids = async_to_sync(scenario)()
    launched = dict(Job.objects.filter(pk__in=ids).values_list("id", "launched"))
    assert launched == {ids[0]: True, ids[1]: True, ids[2]: False}


def test_starts_and_ends_of_one_batch_are_one_transaction(demo, users):
    ids = running_on_node01(users["alice"], 4)
    started = [
        {"job_id": ids[0], "node": "node01", "pid": 1, "run": 0},
        {"job_id": ids[1], "node": "node01", "pid": 2, "run": 0},
        {"job_id": ids[2], "node": "node01", "pid": 3, "run": 5},  # a later run than the job's: not this one
        {"job_id": ids[3], "node": "node02", "pid": 4, "run": 0},  # not where it runs
    ]
    ended = [{"job_id": ids[1], "node": "node01", "exit_code": 0, "signal": 0, "end_time": 2.0, "run": 0}]
    with CaptureQueriesContext(connection) as queries:
        assert agents.jobs_reported(started=started, completions=ended) == 1
    sql = [q["sql"].upper() for q in queries.captured_queries]
    # One statement run for every start (Django logs "N times: UPDATE ..."): one round trip
    # in psycopg's pipeline, where an UPDATE per node and run was one each.
    marks = [s for s in sql if "UPDATE" in s and '"LAUNCHED" = ' in s.split("WHERE")[0]]
    assert len(marks) == 1 and marks[0].startswith("4 TIMES")
    assert not [s for s in sql if "SAVEPOINT" in s]  # one transaction, not one inside another
    jobs = {j.id: j for j in Job.objects.filter(pk__in=ids)}
    assert [jobs[i].launched for i in ids] == [True, True, False, False]
    assert [jobs[i].state for i in ids] == ["RUNNING", "COMPLETED", "RUNNING", "RUNNING"]
    # The same report again changes nothing (an agent re-sends what was not acknowledged).
    assert agents.jobs_reported(started=started, completions=ended) == 0
    assert Job.objects.get(pk=ids[1]).state == "COMPLETED"
