"""sstat prints what a node's agent connection reported (``step_usage`` through the real
consumer), and nothing another connection claims about that node's jobs."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import async_to_sync

from cluster.models import StepUsage
from tests.cluster.agent_socket import AgentSocket
from tests.cluster.test_agent_scoping import running_job

pytestmark = pytest.mark.django_db(transaction=True)


def report(job_id: int, node: str, rss_kb: int) -> dict:
    task = {"task": 0, "pids": [77], "rss_kb": rss_kb, "max_rss_kb": rss_kb, "vmem_kb": rss_kb,
            "max_vmem_kb": rss_kb, "pages": 0, "max_pages": 0, "cpu_secs": 2.0, "read_bytes": 512,
            "max_read_bytes": 512, "write_bytes": None, "max_write_bytes": None}  # fmt: skip
    return {"type": "step_usage", "time": 1.0, "nodes": [node],
            "steps": [{"job_id": job_id, "step": "batch", "node": node, "tasks": [task]}]}  # fmt: skip


async def until_stored(job_id: int) -> None:
    for _ in range(100):
        if await StepUsage.objects.filter(job_id=job_id).aexists():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("no StepUsage row")


def test_sstat_prints_the_nodes_own_agents_report_only(demo, users, live_cli):
    async def scenario() -> int:
        real = AgentSocket("real:1")
        await real.authenticate()
        await real.register("node01")
        job_id = await running_job(real, users["alice"])
        other = AgentSocket("other:1")
        await other.authenticate()
        await other.register("node02")
        await other.send(report(job_id, "node01", 999999))  # not its node: ignored
        await other.nothing()
        await real.send(report(job_id, "node01", 3072))
        await until_stored(job_id)
        for comm in (real, other):
            await comm.close()
        return job_id

    job_id = async_to_sync(scenario)()
    fields = "jobid,maxrss,maxrssnode,avecpu,maxdiskread,maxdiskwrite,ntasks"
    status, out, err = live_cli("alice", "sstat", "-P", "-n", "-j", f"{job_id}.batch", "-o", fields)
    assert (status, err) == (0, ""), err
    # The disk written could not be read: empty, as Slurm leaves a TRES no task reported.
    assert out == f"{job_id}.batch|3M|node01|00:00:02|512||1\n"
