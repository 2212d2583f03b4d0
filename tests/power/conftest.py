"""Shared helpers for the power core tests: configurations from slurm.conf text, and a
small simulator that applies the core's decisions the way the adapter will, with a
clock the test moves."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable
from dataclasses import replace

import pytest

from cluster.core.slurmconf import parse_slurm_conf_text
from cluster.core.states import JobState, NodeBase, NodeFlag
from power.core.config import PowerConfig, power_config
from power.core.policy import (
    CancelJobs,
    CycleResult,
    Decision,
    LaunchJobs,
    NodeChange,
    NodeFailJobs,
    PowerJob,
    PowerNode,
    RateState,
    RequeueJobs,
    on_registration,
    power_cycle,
)

HEAD = "ClusterName=test\nSlurmctldHost=ctl\n"  # lines 1 and 2 of every text

# A complete power configuration (lines 3-...), used by most cycle tests.
BASE = """\
PowerAction=cloud_resume Location=slurmctld Program="/usr/sbin/slurm_resume --cloud"
PowerAction=node_suspend Location=slurmd Program="/usr/sbin/shutdown -h now"
SuspendProgram=/usr/sbin/slurm_suspend
ResumeProgram=/usr/sbin/slurm_resume
ResumeFailProgram=/usr/sbin/slurm_resume_fail
SuspendTime=600
NodeName=n[1-8] CPUs=4
PartitionName=batch Nodes=n[1-8] Default=YES
"""


def conf(body: str) -> PowerConfig:
    return power_config(parse_slurm_conf_text(HEAD + textwrap.dedent(body)))


@pytest.fixture
def make_conf() -> Callable[[str], PowerConfig]:
    return conf


class Sim:
    """Nodes and jobs in memory; decisions applied as the ORM adapter applies them."""

    def __init__(
        self, config: PowerConfig, nodes: Iterable[PowerNode], jobs: Iterable[PowerJob] = ()
    ) -> None:
        self.cfg = config
        self.nodes = {n.name: n for n in nodes}
        self.jobs = {j.job_id: j for j in jobs}
        self.now = 0.0
        self.rates = RateState()
        self.log: list[tuple[float, Decision]] = []
        self.requeued: list[int] = []
        self.cancelled: list[int] = []
        self.node_failed: list[int] = []
        self.launched: list[int] = []

    def cycle(self, **kwargs: object) -> CycleResult:
        result = power_cycle(
            self.cfg,
            list(self.nodes.values()),
            list(self.jobs.values()),
            now=self.now,
            rates=self.rates,
            **kwargs,
        )  # type: ignore[arg-type]
        self.rates = result.rates
        self.apply(result.decisions)
        return result

    def apply(self, decisions: Iterable[Decision]) -> None:
        for d in decisions:
            self.log.append((self.now, d))
            if isinstance(d, NodeChange):
                self.nodes[d.node] = d.apply(self.nodes[d.node])
            elif isinstance(d, NodeFailJobs):
                for i in d.job_ids:
                    self.jobs.pop(i, None)
                self.node_failed.extend(d.job_ids)
            elif isinstance(d, RequeueJobs | CancelJobs):
                for i in d.job_ids:
                    self.jobs.pop(i, None)
                (self.requeued if isinstance(d, RequeueJobs) else self.cancelled).extend(d.job_ids)
            elif isinstance(d, LaunchJobs):
                for i in d.job_ids:
                    self.jobs[i] = replace(self.jobs[i], state=JobState.RUNNING)
                self.launched.extend(d.job_ids)

    def advance(self, seconds: float) -> CycleResult:
        self.now += seconds
        return self.cycle()

    def register(self, name: str, boot_time: float | None = None) -> tuple[Decision, ...]:
        out = on_registration(
            self.cfg,
            self.nodes[name],
            list(self.jobs.values()),
            boot_time=self.now if boot_time is None else boot_time,
            now=self.now,
            all_nodes=self.nodes,
        )
        self.apply(out)
        if not any(isinstance(d, NodeChange) and d.base == NodeBase.DOWN for d in out):
            self.nodes[name] = replace(
                self.nodes[name], boot_time=self.now if boot_time is None else boot_time
            )
        return out

    def flags(self, name: str) -> set[str]:
        shown = [f for f in NodeFlag if f.name and f.value and f is not NodeFlag.POWER_DRAIN]  # internal flag
        return {f.name for f in shown if self.nodes[name].flags & f}  # type: ignore[misc]

    def with_flags(self, flag: NodeFlag) -> list[str]:
        return sorted(n for n, node in self.nodes.items() if node.flags & flag)


@pytest.fixture
def sim() -> type[Sim]:
    return Sim


def idle_nodes(
    names: Iterable[str], *, partitions: tuple[str, ...] = ("batch",), **kw: object
) -> list[PowerNode]:
    return [PowerNode(n, NodeBase.IDLE, 0, partitions=partitions, **kw) for n in names]  # type: ignore[arg-type]


@pytest.fixture
def nodes() -> Callable[..., list[PowerNode]]:
    return idle_nodes
