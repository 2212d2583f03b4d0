"""Two jobs that shared a node end at the same moment in two transactions (two agents'
completions, handled by two server workers), on PostgreSQL: the node ends IDLE.

Each transaction had read the other's job as still running (its end not yet committed)
and written the node MIXED; refresh_usage now holds the node's lock before it reads the
jobs. A barrier makes both transactions reach that point together, every time.
"""

from __future__ import annotations

import os
import threading

import pytest
from django.db import connection

from cluster.models import Job, Node
from cluster.services import agents, scheduling
from cluster.services import nodes as node_services
from cluster.services.jobs import job_submit

pytestmark = [
    pytest.mark.distributed,
    pytest.mark.skipif(not os.environ.get("FSCHED_DATABASE_URL"), reason="needs FSCHED_DATABASE_URL"),
    pytest.mark.django_db(transaction=True),
]

SHARED = "node20"


def test_two_jobs_ending_together_leave_their_shared_node_idle(users, demo, monkeypatch):
    agents.agent_register(
        agent_id="test:1",
        nodes=[{"name": SHARED, "cpus": 4, "real_memory": 2000, "boot_time": 1.0}],
        running=[],
        completions=[],
    )
    spec = {"wrap": "true", "work_dir": "/tmp", "partition": "batch", "nodelist": SHARED}
    ids = [job_submit(user=users["alice"], spec=spec).job_ids[0] for _ in range(2)]
    scheduling.schedule_pass()
    assert [Job.objects.get(pk=i).state for i in ids] == ["RUNNING", "RUNNING"]
    assert Node.objects.get(name=SHARED).base_state == "MIXED"

    both_ended = threading.Barrier(2, timeout=10)
    real = node_services.refresh_usage

    def refresh_after_both_ended(names):  # the real refresh, once both jobs are written ended
        both_ended.wait()
        real(names)

    monkeypatch.setattr(agents, "refresh_usage", refresh_after_both_ended)
    errors: list[BaseException] = []

    def complete(job_id: int) -> None:
        try:
            agents.jobs_completed(completions=[{"job_id": job_id, "node": SHARED, "run": 0, "exit_code": 0}])
        except BaseException as exc:  # reported below, in the test thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=complete, args=(i,)) for i in ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors
    assert [Job.objects.get(pk=i).state for i in ids] == ["COMPLETED", "COMPLETED"]
    node = Node.objects.get(name=SHARED)
    assert (node.base_state, node.alloc_cpus) == ("IDLE", 0)
