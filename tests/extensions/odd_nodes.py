"""A cluster extension outside the project's apps, as a site would write one: a scheduler
plugin that keeps jobs off the odd-numbered nodes, and a periodic cycle counting its runs.

Enabled by one line in settings: its dotted path in FSCHED_EXTENSIONS.
"""

from __future__ import annotations

from collections.abc import Sequence

from cluster.core.scheduler import JobView, SchedulerPlugin, Snapshot
from cluster.extensions import ClusterExtension, Cycle, PassContext

RUNS: list[str] = []


class EvenNodesOnly(SchedulerPlugin):
    def begin_pass(self, snapshot: Snapshot) -> None:
        self.odd = frozenset(n.index for n in snapshot.nodes if int(n.name[-1]) % 2)

    def excluded_nodes(self, job: JobView) -> frozenset[int]:
        return self.odd


def _count() -> str:
    RUNS.append("ran")
    return f"runs={len(RUNS)}"


class OddNodesExtension(ClusterExtension):
    name = "odd-nodes"

    def pass_plugins(self, ctx: PassContext) -> Sequence[SchedulerPlugin]:
        return (EvenNodesOnly(),)

    def cycles(self) -> Sequence[Cycle]:
        return (Cycle("odd-nodes-count", _count, 60.0),)
