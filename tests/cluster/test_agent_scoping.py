"""A connection speaks only for its nodes (cluster/consumers.py, cluster/services/agents.py).

Every connection here has the cluster key: what is tested is what a key holder that is
not (or no longer) a node's agent can do to that node's jobs. Nothing.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.utils import timezone

from cluster.core.states import NodeFlag
from cluster.models import Event, Job, Node
from cluster.services import agents
from cluster.services.jobs import job_submit
from cluster.services.scheduling import schedule_pass
from power.extension import power_action_done
from power.models import PowerRun
from tests.cluster.agent_socket import AgentSocket

pytestmark = pytest.mark.django_db(transaction=True)


async def running_job(agent: AgentSocket, user, node: str = "node01") -> int:  # type: ignore[no-untyped-def]
    """A job RUNNING on ``node``, launched on ``agent`` and reported started."""
    submitted = await sync_to_async(job_submit)(
        user=user, spec={"wrap": "sleep 100", "work_dir": "/tmp", "nodelist": node}
    )
    job_id = submitted.job_ids[0]
    await sync_to_async(schedule_pass)()
    launch = await agent.receive()
    assert launch["type"] == "launch" and launch["job"]["job_id"] == job_id
    await agent.send({"type": "started", "job_id": job_id, "node": node, "pid": 1, "run": 0})
    return job_id


def forgeries(job_id: int, node: str) -> list[dict]:
    end = {"job_id": job_id, "node": node, "exit_code": 0, "signal": 0, "end_time": 2.0, "run": 0}
    return [
        {"type": "started", "job_id": job_id, "node": node, "pid": 2, "run": 0},
        {"type": "completed", **end},
        {"type": "completed_batch", "completions": [end]},
        {"type": "launch_failed", "job_id": job_id, "node": node, "error": "forged", "run": 0},
    ]


async def untouched(job_id: int, events: int) -> None:
    job = await sync_to_async(Job.objects.get)(pk=job_id)
    assert job.state == "RUNNING" and job.launched
    assert await sync_to_async(Event.objects.filter(job_id=job_id).count)() == events


def test_forged_messages_from_other_connections_are_refused(demo, users):
    async def scenario():
        real = AgentSocket("real:1")
        await real.authenticate()
        await real.register("node01")
        job_id = await running_job(real, users["alice"])
        events = await sync_to_async(Event.objects.filter(job_id=job_id).count)()
        # A connection that never registered.
        stranger = AgentSocket("stranger:1")
        await stranger.authenticate()
        for msg in forgeries(job_id, "node01"):
            await stranger.send(msg)
        await stranger.nothing()  # no ack either
        # A connection registered for another node, speaking for node01's job, or
        # claiming it under its own node.
        other = AgentSocket("other:1")
        await other.authenticate()
        assert (await other.register("node02"))["nodes"] == ["node02"]
        for msg in forgeries(job_id, "node01"):
            await other.send(msg)
        await other.nothing()
        for msg in forgeries(job_id, "node02"):
            await other.send(msg)
        await real.nothing()
        await untouched(job_id, events)
        # The real agent is still heard.
        end = {"job_id": job_id, "node": "node01", "exit_code": 0, "signal": 0, "end_time": 3.0, "run": 0}
        await real.send({"type": "completed", **end})
        assert await real.receive() == {"type": "ack", "job_ids": [job_id]}
        for comm in (real, stranger, other):
            await comm.close()
        return job_id

    job_id = async_to_sync(scenario)()
    assert Job.objects.get(pk=job_id).state == "COMPLETED"


def test_a_second_registration_of_a_held_node_is_refused_and_takes_nothing(demo, users):
    async def scenario():
        real = AgentSocket("real:1")
        await real.authenticate()
        await real.register("node01")
        job_id = await running_job(real, users["alice"])
        rogue = AgentSocket("rogue:1")
        await rogue.authenticate()
        reply = await rogue.register("node01", "node02")
        assert reply["nodes"] == ["node02"]
        assert reply["rejected"] == {"node01": "node is served by another agent"}
        await rogue.nothing()  # no launch payload: the script and environment stay private
        await untouched(job_id, await sync_to_async(Event.objects.filter(job_id=job_id).count)())
        node = await sync_to_async(Node.objects.get)(name="node01")
        assert node.agent_id == "real:1" and not node.flags & NodeFlag.NOT_RESPONDING
        # The rogue's heartbeats keep only its own node alive.
        await rogue.send({"type": "ping", "time": 1.0, "nodes": ["node01", "node02"]})
        # Once the real agent is gone, another may have the node (and finds the job lost).
        await real.close()
        again = await rogue.register("node01", "node02")
        assert again["nodes"] == ["node01", "node02"] and again["rejected"] == {}
        await rogue.close()
        return job_id

    job_id = async_to_sync(scenario)()
    assert Job.objects.get(pk=job_id).state != "RUNNING"  # lost with its agent, as before


def test_nothing_but_hello_before_authentication(demo):
    async def scenario():
        for first in (
            {"type": "register", "agent_id": "x", "nodes": [], "running": [], "completions": []},
            {"type": "completed", "job_id": 1, "node": "node01"},
            {"type": "hello", "agent_id": "x", "nonce": "short"},
        ):
            comm = AgentSocket()
            await comm.open()
            await comm.comm.send_json_to(first)
            assert await comm.closed_with() == 4003
        # After hello, only auth: a register in its place is refused too.
        comm = AgentSocket()
        await comm.open()
        await comm.hello()
        await comm.comm.send_json_to({"type": "register", "agent_id": "test:1", "nodes": []})
        assert await comm.closed_with() == 4003

    async_to_sync(scenario)()
    assert Node.objects.get(name="node01").base_state == "UNKNOWN"


def test_drain_applies_to_this_connections_nodes_only(demo):
    async def scenario():
        comm = AgentSocket()
        await comm.authenticate()
        await comm.register("node02")
        await comm.send({"type": "drain", "nodes": ["node01", "node02"], "reason": "spool gone: /var/x"})
        await comm.send({"type": "ping", "time": 1.0, "nodes": ["node02"]})
        await comm.nothing()
        await comm.close()

    async_to_sync(scenario)()
    two, one = Node.objects.get(name="node02"), Node.objects.get(name="node01")
    assert two.flags & NodeFlag.DRAIN and two.reason == "spool gone: /var/x" and two.reason_user == "slurm"
    assert not one.flags & NodeFlag.DRAIN


def test_power_action_done_only_for_runs_on_this_connections_nodes(demo):
    run = PowerRun.objects.create(
        kind="suspend", program="off", argv=["/x", "node01"], nodes="node01", host="node01",
        started=timezone.now(),
    )  # fmt: skip
    assert not power_action_done(nodes=["node02"], msg={"run_id": run.pk, "node": "node01", "exit_code": 0})
    assert not power_action_done(nodes=["node02"], msg={"run_id": run.pk, "node": "node02", "exit_code": 0})
    run.refresh_from_db()
    assert run.ended is None
    assert power_action_done(nodes=["node01"], msg={"run_id": run.pk, "node": "node01", "exit_code": 0})
    run.refresh_from_db()
    assert run.ended is not None and run.exit_code == 0


def test_who_holds_a_node_across_server_processes(demo):
    """Distributed mode: the database's agent_id and NOT_RESPONDING decide."""
    now = timezone.now()

    def reg(agent_id: str, *, one_process: bool = False) -> agents.Registration:
        return agents.agent_register(
            agent_id=agent_id,
            nodes=[{"name": "node01", "cpus": 4, "real_memory": 2000, "boot_time": 1.0}],
            running=[],
            completions=[],
            one_process=one_process,
        )

    first = reg("a:1")
    assert first.accepted == ["node01"]
    assert reg("b:1").rejected == {"node01": agents.HELD_ELSEWHERE}
    assert reg("a:1").accepted == ["node01"]  # the same agent, after a server restart
    # In one process, a holder not connected to it is gone (the server restarted).
    assert reg("b:1", one_process=True).accepted == ["node01"]
    assert reg("a:1").rejected == {"node01": agents.HELD_ELSEWHERE}
    # A stale connection of a:1 closing does not free what b:1 registered since.
    agents.agent_disconnected(nodes=["node01"], agent_id="a:1", registered_at=first.at)
    assert Node.objects.get(name="node01").agent_id == "b:1"
    # Silent for three pings: NOT_RESPONDING, and another agent may take over.
    Node.objects.filter(name="node01").update(flags=NodeFlag.NOT_RESPONDING, last_contact=now - timedelta(60))
    assert reg("c:1").accepted == ["node01"]
    latest = Node.objects.get(name="node01")
    agents.agent_disconnected(nodes=["node01"], agent_id="c:1", registered_at=latest.slurmd_start_time)
    assert Node.objects.get(name="node01").agent_id == ""
    assert reg("d:1").accepted == ["node01"]


def test_a_hung_holder_loses_its_node_once_not_responding(demo):
    async def scenario():
        hung = AgentSocket("hung:1")
        await hung.authenticate()
        await hung.register("node01")
        # Three heartbeats of silence: the health pass marks the node NOT_RESPONDING.
        await sync_to_async(Node.objects.filter(name="node01").update)(flags=NodeFlag.NOT_RESPONDING)
        new = AgentSocket("new:1")
        await new.authenticate()
        assert (await new.register("node01"))["nodes"] == ["node01"]
        await hung.close()  # its end is not the new holder's
        node = await sync_to_async(Node.objects.get)(name="node01")
        assert node.agent_id == "new:1" and not node.flags & NodeFlag.NOT_RESPONDING
        await new.close()

    async_to_sync(scenario)()
