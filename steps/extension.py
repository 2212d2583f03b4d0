"""The steps app in the cluster core: the agents' ``step_done``, steps ending with their
job, and the steps accounting lists."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from cluster.core import job_steps
from cluster.extensions import AgentHandler, ClusterExtension
from slurmwords import agent_messages as am
from steps import services


class StepsExtension(ClusterExtension):
    name = "steps"

    def agent_messages(self) -> Mapping[str, AgentHandler]:
        return {am.StepDone.TYPE: services.step_done}

    def nodes_freed(self, freed: Mapping[str, Iterable[str]], *, now: datetime) -> None:
        # Called in the transaction that ended the jobs: their steps end with them.
        services.end_steps_of_ended_jobs(now)

    def job_signalled(self, job: Any, signal: str) -> None:
        # Slurm suspends and signals a job's steps on every node, not only its batch script.
        services.signal_job_steps(job.id, signal)

    def job_steps(self, job_ids: Sequence[int], now: datetime) -> Mapping[int, Sequence[Any]]:
        return {
            job_id: [
                job_steps.srun_step(
                    step_id=s.step_id,
                    name=s.name,
                    state=services.shown_state(s),
                    exit_code=s.exit_code,
                    exit_signal=s.exit_signal,
                    start=s.start_time,
                    end=s.end_time or (s.job.end_time if services.shown_state(s) != s.state else None),
                    nnodes=s.num_nodes,
                    ntasks=s.num_tasks,
                    cpus=s.num_tasks * s.cpus_per_task,
                    node_list=s.node_list,
                    now=now,
                )
                for s in rows
            ]
            for job_id, rows in services.steps_of(job_ids).items()
        }
