"""What the controller sends an agent is what slurmwords/agent_messages.py describes, and
what an agent sends it is read through the same classes (the real ASGI application)."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.utils import timezone

from agent import handshake
from cluster.core.states import NodeFlag
from cluster.models import Job, Node
from cluster.services.jobs import job_cancel, job_resume, job_submit, job_suspend
from cluster.services.scheduling import schedule_pass
from power.models import PowerRun
from slurmwords import agent_messages as am
from tests.cluster.agent_socket import AgentSocket

pytestmark = pytest.mark.django_db(transaction=True)


async def received(agent: AgentSocket) -> am.Message:
    return am.decode(await agent.receive(), am.CONTROLLER_MESSAGES)


def test_every_command_of_a_jobs_life_decodes_as_its_type(demo, users):
    async def scenario():
        agent = AgentSocket()
        await agent.open()
        challenge = await agent.hello()
        assert challenge["proved"] and am.Challenge.from_wire(challenge).nonce == agent.theirs
        proof = handshake.agent_proof(agent.key, agent.nonce, agent.theirs, agent.agent_id)
        await agent.comm.send_json_to(am.Auth(proof=proof).to_wire())
        session = handshake.session_key(agent.key, agent.nonce, agent.theirs, agent.agent_id)
        agent.channel = handshake.Channel.for_agent(session)
        await agent.send(
            am.Register(
                agent_id=agent.agent_id,
                nodes=[am.NodeInfo(name="node01", cpus=4, real_memory=2000, boot_time=1.0)],
                running=[],
                completions=[],
            ).to_wire()
        )
        registered = await received(agent)
        assert registered == am.Registered(nodes=["node01"], rejected={}, kill=[], ping_interval=5)

        submitted = await sync_to_async(job_submit)(
            user=users["alice"], spec={"wrap": "sleep 100", "work_dir": "/tmp", "nodelist": "node01"}
        )
        job_id = submitted.job_ids[0]
        await sync_to_async(schedule_pass)()
        launch = await received(agent)
        assert isinstance(launch, am.Launch)
        job = am.LaunchJob.from_wire(launch.job)  # every key of the launch object, of its type
        assert (job.job_id, job.run, job.batch_host, job.user) == (job_id, 0, "node01", "alice")
        assert job.to_wire() == launch.job
        await agent.send(am.Started(job_id=job_id, node="node01", pid=1, time=1.5, run=0).to_wire())

        await sync_to_async(job_cancel)(actor=users["alice"], job_id=job_id, signal="USR1", scope="batch")
        assert await received(agent) == am.Signal(job_id=job_id, signal="USR1")
        await sync_to_async(job_suspend)(actor=users["admin"], job_id=job_id)
        assert await received(agent) == am.Signal(job_id=job_id, signal="STOP")
        await sync_to_async(job_resume)(actor=users["admin"], job_id=job_id)
        assert await received(agent) == am.Signal(job_id=job_id, signal="CONT")
        await sync_to_async(job_cancel)(actor=users["alice"], job_id=job_id)
        cancel = await received(agent)
        assert isinstance(cancel, am.Cancel) and cancel.job_id == job_id and cancel.kill_wait is not None

        end = am.Completed(job_id=job_id, node="node01", exit_code=0, signal=15, end_time=2.0, seq=1, run=0)
        await agent.send(end.to_wire())
        assert await received(agent) == am.Ack(job_ids=[job_id])
        await agent.close()
        return job_id

    job_id = async_to_sync(scenario)()
    assert Job.objects.get(pk=job_id).state == "CANCELLED"


def test_power_action_done_reaches_power_saving_only_when_well_formed(demo):
    run = PowerRun.objects.create(
        kind="suspend", program="off", argv=["/x", "node01"], nodes="node01", host="node01",
        started=timezone.now(),
    )  # fmt: skip
    done = am.PowerActionDone(run_id=run.pk, node="node01", exit_code=0, end_time=3.0, error="").to_wire()

    async def scenario(msg: dict) -> None:
        agent = AgentSocket()
        await agent.authenticate()
        await agent.register("node01")
        await agent.send(msg)
        await agent.send({"type": "ping", "time": 1.0, "nodes": ["node01"]})
        await agent.nothing()
        await agent.close()

    # Without its error field it is malformed: dropped before power saving sees it.
    async_to_sync(scenario)({k: v for k, v in done.items() if k != "error"})
    run.refresh_from_db()
    assert run.ended is None
    async_to_sync(scenario)(done)
    run.refresh_from_db()
    assert run.ended is not None and run.exit_code == 0


def test_malformed_messages_are_dropped_one_by_one_and_the_connection_goes_on(demo, users):
    async def scenario():
        agent = AgentSocket()
        await agent.authenticate()
        await agent.register("node01")
        submitted = await sync_to_async(job_submit)(
            user=users["alice"], spec={"wrap": "sleep 100", "work_dir": "/tmp", "nodelist": "node01"}
        )
        job_id = submitted.job_ids[0]
        await sync_to_async(schedule_pass)()
        assert isinstance(await received(agent), am.Launch)
        end = {"job_id": job_id, "node": "node01", "exit_code": 0, "signal": 0, "end_time": 2.0, "run": 0}
        for bad in (
            {"type": ["completed"]},
            {"type": "started", "job_id": str(job_id), "node": "node01", "pid": 1},
            {"type": "completed", **end, "exit_code": None},
            {"type": "completed_batch", "completions": [end, {**end, "node": 1}]},
            {"type": "drain", "nodes": ["node01"]},
            {"type": "launch", "job": {}},  # the controller's own message, from an agent
        ):
            await agent.send(bad)
        await agent.nothing()  # no ack: not even the good half of the batch was taken
        job = await sync_to_async(Job.objects.get)(pk=job_id)
        assert job.state == "RUNNING" and not job.launched
        await agent.send(am.Completed(**end).to_wire())
        assert await received(agent) == am.Ack(job_ids=[job_id])
        await agent.close()
        return job_id

    job_id = async_to_sync(scenario)()
    assert Job.objects.get(pk=job_id).state == "COMPLETED"
    assert not Node.objects.get(name="node01").flags & NodeFlag.DRAIN  # the drain without a reason
