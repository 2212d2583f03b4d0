"""Job array throttle (``sbatch -a 0-99%4``) as a scheduler plugin (pure, no Django).

At most N tasks of an array run at once; the others pend with ``JobArrayTaskLimit``.
"""

from __future__ import annotations

from collections import Counter

from cluster.core.scheduler import Blocked, JobView, PartitionView, SchedulerPlugin, Snapshot, Start

JOB_ARRAY_TASK_LIMIT = "JobArrayTaskLimit"


class ArrayThrottlePlugin(SchedulerPlugin):
    def __init__(self) -> None:
        self.running: Counter[int] = Counter()

    def begin_pass(self, snapshot: Snapshot) -> None:
        self.running = Counter(j.array_job_id for j in snapshot.running if j.array_job_id is not None)

    def job_gate(self, job: JobView, partition: PartitionView) -> Blocked | None:
        if job.array_job_id is None or not job.array_max_tasks:
            return None
        if self.running[job.array_job_id] >= job.array_max_tasks:
            return Blocked(JOB_ARRAY_TASK_LIMIT)
        return None

    def on_start(self, job: JobView, start: Start) -> None:
        if job.array_job_id is not None:
            self.running[job.array_job_id] += 1
