"""Cluster licenses (``Licenses=`` in slurm.conf) as a scheduler plugin (pure, no Django).

A job asking ``-L fluent:2`` starts only while 2 of fluent's count are free; otherwise it
pends with reason ``Licenses``.  Hierarchical resources (spec/hres.md) extend this.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from cluster.jobspec import parse_licenses
from cluster.scheduler import Blocked, JobView, PartitionView, SchedulerPlugin, Snapshot, Start
from cluster.states import Reason


class LicensePlugin(SchedulerPlugin):
    def __init__(self, totals: Mapping[str, int]) -> None:
        self.totals = dict(totals)
        self.used: Counter[str] = Counter()

    @staticmethod
    def _wants(job: JobView) -> list[tuple[str, int]]:
        return parse_licenses(job.licenses) if job.licenses else []

    def begin_pass(self, snapshot: Snapshot) -> None:
        self.used = Counter()
        for job in snapshot.running:
            for name, count in self._wants(job):
                self.used[name] += count

    def job_gate(self, job: JobView, partition: PartitionView) -> Blocked | None:
        for name, count in self._wants(job):
            free = self.totals.get(name, 0) - self.used[name]
            if count > free:
                return Blocked(Reason.LICENSES, f"{name}: {count} requested, {max(free, 0)} free")
        return None

    def on_start(self, job: JobView, start: Start) -> None:
        for name, count in self._wants(job):
            self.used[name] += count
