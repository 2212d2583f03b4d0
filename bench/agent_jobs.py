"""The agent's CPU per job, without a controller: a JobManager (agent/jobs.py) on a fresh
spool launches ``--jobs`` trivial batch jobs (``true``) in bursts of ``--burst``, as a
pass's launches arrive, and each completion is acknowledged as soon as it is sent, as the
controller does. Prints the agent's own CPU per job (every thread of this process) and
the jobs' processes' (the wrappers and scripts, reaped), in ms, and the wall time.

Steadier than bench.cluster_throughput for the agent's share: no server, no scheduler
passes, no websocket; the same spool, containment and process launch. Usage:
``python -m bench.agent_jobs [--jobs N] [--burst N] [--runs N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from agent.containment import Containment
from agent.jobs import JobManager
from agent.spool import Spool
from bench import reference
from slurmwords import agent_messages as am


def launch(job_id: int, work: str) -> dict[str, object]:
    # The shape of the demo's launches: the submitter's environment (about 60 variables).
    environment = {**os.environ, **{f"BENCH_VAR_{i}": "x" * 40 for i in range(30)}}
    return {
        "job_id": job_id, "run": 0, "name": "wrap", "user": os.environ.get("USER", "root"),
        "script": "#!/bin/sh\ntrue\n", "argv": [], "work_dir": work, "std_out": "/dev/null",
        "std_err": None, "std_in": None, "environment": environment, "batch_host": "node01",
        "node_list": "node01", "num_nodes": 1, "cpus_on_node": 1, "partition": "batch",
        "account": "", "qos": "normal", "array_job_id": None, "array_task_id": None, "time_limit": 60,
    }  # fmt: skip


async def run(jobs: int, burst: int, root: Path) -> tuple[float, float, float]:
    """(agent CPU s, jobs' CPU s, wall s) for ``jobs`` launched and acknowledged."""
    done: set[int] = set()
    manager: JobManager

    def emit(message: am.Message) -> None:
        ended = []
        if isinstance(message, am.Completed):
            ended = [message.job_id]
        elif isinstance(message, am.CompletedBatch):
            ended = [c.job_id for c in message.completions]
        if ended:
            done.update(ended)
            asyncio.get_running_loop().call_soon(manager.ack, ended)

    spool = Spool(root / "spool")
    manager = JobManager(
        spool, ["node01"], emit, containment=Containment(record_dir=root / "spool" / "contain")
    )
    manager.recover()
    work = str(root)
    cpu0, children0, wall0 = time.process_time(), os.times(), time.perf_counter()
    next_id = 1
    while next_id <= jobs:
        for job_id in range(next_id, min(next_id + burst, jobs + 1)):
            manager.launch(launch(job_id, work))
        next_id += burst
        while len(done) < next_id - 1 - burst // 2 and len(done) < min(next_id - 1, jobs):
            await asyncio.sleep(0.002)
    while len(done) < jobs:
        await asyncio.sleep(0.002)
    await asyncio.sleep(0.05)  # the last acknowledgements
    cpu, children, wall = time.process_time(), os.times(), time.perf_counter()
    manager.close()
    spool.close()
    jobs_cpu = (children.children_user + children.children_system) - (
        children0.children_user + children0.children_system
    )
    return cpu - cpu0, jobs_cpu, wall - wall0


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.agent_jobs")
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--burst", type=int, default=64)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(f"agent CPU per job, {args.jobs} jobs in bursts of {args.burst}")
    print(f"  before: {reference.describe()}")
    agent_ms, jobs_ms = [], []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="fsched-agent-bench-") as tmp:
            cpu, jobs_cpu, wall = asyncio.run(run(args.jobs, args.burst, Path(tmp)))
        agent_ms.append(cpu / args.jobs * 1000)
        jobs_ms.append(jobs_cpu / args.jobs * 1000)
        rate = args.jobs / wall
        print(f"  agent {agent_ms[-1]:.2f} ms/job, jobs' processes {jobs_ms[-1]:.2f} ms/job, {rate:.0f}/s")
    agent, jobs = statistics.median(agent_ms), statistics.median(jobs_ms)
    print(f"  median: agent {agent:.2f} ms/job, jobs' processes {jobs:.2f} ms/job")
    print(f"  after: {reference.describe()}")


if __name__ == "__main__":
    main()
