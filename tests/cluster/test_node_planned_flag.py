"""sinfo's ``-``/``plnd`` (#13 point 8): the idle and mixed nodes that backfill plans for a
pending job are PLANNED until the next backfill pass plans afresh."""

from __future__ import annotations

from cluster.core.states import NodeFlag
from cluster.models import Job, Node
from cluster.services import agents
from cluster.services.jobs import job_cancel, job_submit
from cluster.services.scheduling import schedule_pass

DEBUG = [f"node{i:02d}" for i in range(1, 9)]


def shorts() -> dict[str, str]:
    return {n.name: n.state_short for n in Node.objects.filter(name__in=DEBUG)}


def test_backfill_marks_the_nodes_it_plans_and_the_next_pass_clears_them(demo, users):
    agents.agent_register(
        agent_id="test:1",
        nodes=[{"name": n, "cpus": 4, "real_memory": 2000, "boot_time": 1.0} for n in DEBUG],
        running=[],
        completions=[],
    )
    spec = {"wrap": "true", "work_dir": "/tmp", "partition": "debug", "time": "10"}
    # One CPU of each of node01-07 taken: they are mixed, node08 idle.
    small = job_submit(user=users["alice"], spec={**spec, "nodes": "7", "ntasks": "7"}).job_ids[0]
    schedule_pass(backfill=False)
    assert Job.objects.get(pk=small).state == "RUNNING"
    # Every CPU of the eight nodes: it must wait for the first job, on all eight.
    whole = job_submit(user=users["bob"], spec={**spec, "nodes": "8", "ntasks": "32"}).job_ids[0]
    schedule_pass(backfill=False)
    assert not any(n.flags & NodeFlag.PLANNED for n in Node.objects.all())  # main passes plan nothing
    schedule_pass(backfill=True)
    assert Job.objects.get(pk=whole).state == "PENDING"
    assert shorts() == {**{n: "mix-" for n in DEBUG[:7]}, "node08": "plnd"}
    assert Node.objects.get(name="node08").state == "IDLE+PLANNED"
    # Nothing left to plan for: the next backfill pass clears the flag.
    job_cancel(actor=users["admin"], job_id=whole)
    schedule_pass(backfill=True)
    assert shorts() == {**{n: "mix" for n in DEBUG[:7]}, "node08": "idle"}
