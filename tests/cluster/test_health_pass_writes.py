"""The health pass writes the nodes it judges together (cluster/services/scheduling.py):
when every agent of a 10,000-node cluster dropped its connection at once, the pass saved
each node with an audit entry and, for each node it took DOWN, read every holding job of
the cluster; the controller did nothing else for minutes.  Each node still ends as the
node-by-node pass left it, with its event, and each job on a lost node is failed once."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from cluster.core.states import NodeFlag
from cluster.models import Event, Job, Node
from cluster.services import agents
from cluster.services.jobs import job_submit
from cluster.services.scheduling import health_pass, schedule_pass

pytestmark = pytest.mark.django_db

NODES = [f"node{i:02d}" for i in range(1, 33)]
TIMEOUT = 20  # the demo's SlurmdTimeout
SPEC = {"wrap": "true", "work_dir": "/tmp", "exclusive": True}


def register(now):
    agents.agent_register(
        agent_id="test:1",
        nodes=[{"name": n, "cpus": 4, "real_memory": 4000, "boot_time": 1.0} for n in NODES],
        running=[],
        completions=[],
        now=now,
    )


def silent_since(names, when):
    Node.objects.filter(name__in=names).update(last_contact=when)


def test_each_node_and_job_ends_as_judged_one_by_one(demo, users):
    now = timezone.now()
    register(now)
    jobs = [
        job_submit(user=users["alice"], spec={**SPEC, "nodes": str(n), "requeue": rq}).job_ids[0]
        for n, rq in ((2, False), (2, True), (1, False), (3, False))
    ]
    schedule_pass(now=now)
    alloc = {j.id: sorted(j.alloc) for j in Job.objects.filter(pk__in=jobs)}
    assert all(alloc.values())
    judged = now + timedelta(seconds=100)
    fresh, quiet, lost, already = [], [], [], []
    # The jobs fill node01-08 in order: one holds two lost nodes, one a lost and others.
    for i, name in enumerate(NODES):
        [fresh, quiet, lost, lost, already, fresh, quiet, lost][i % 8].append(name)
    silent_since(fresh, judged)
    silent_since(quiet + already, judged - timedelta(seconds=16))  # past three heartbeats
    silent_since(lost, judged - timedelta(seconds=TIMEOUT + 5))
    Node.objects.filter(name__in=already).update(flags=int(NodeFlag.NOT_RESPONDING))
    Event.objects.all().delete()

    downed = health_pass(now=judged)

    assert downed == sorted(lost)
    states = {n.name: (n.state, n.reason, n.reason_user) for n in Node.objects.all() if n.name in NODES}
    busy = {name for names in alloc.values() for name in names}
    for name in fresh:
        assert states[name][0] in ("IDLE", "ALLOCATED"), name
    for name in quiet + already:
        assert states[name][0].endswith("+NOT_RESPONDING"), name
    for name in lost:
        assert states[name] == ("DOWN+NOT_RESPONDING", "Not responding", "slurm"), name
    node_events = {
        e.node: (e.old_state, e.new_state, e.time) for e in Event.objects.filter(kind=Event.Kind.NODE)
    }
    assert set(node_events) == set(quiet) | set(lost)
    for name in quiet:
        old = "ALLOCATED" if name in busy else "IDLE"
        assert node_events[name] == (old, f"{old}+NOT_RESPONDING", judged)
    # Each job on a lost node failed once, for the first lost node (by name) it held.
    for job in Job.objects.filter(pk__in=jobs):
        hit = [name for name in alloc[job.id] if name in lost]
        if not hit:
            assert job.state == "RUNNING", job.id
            continue
        assert job.state == ("PENDING" if job.requeue else "NODE_FAIL"), job.id
        ends = Event.objects.filter(kind=Event.Kind.JOB, job_id=job.id, time=judged)
        assert ends.count() == 1, job.id
        assert ends.get().node == hit[0]


def test_as_many_statements_for_many_silent_nodes_as_for_few(demo):
    def judged(count: int) -> int:
        now = timezone.now()
        register(now)
        Event.objects.all().delete()
        silent_since(NODES[:count], now - timedelta(seconds=TIMEOUT + 5))
        silent_since(NODES[count : 2 * count], now - timedelta(seconds=16))
        with CaptureQueriesContext(connection) as q:
            downed = health_pass(now=now)
        assert len(downed) == count
        return sum('"cluster_clusterconfig" WHERE' not in s["sql"] for s in q.captured_queries)

    assert judged(2) == judged(12)
