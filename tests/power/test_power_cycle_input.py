"""The power-save cycle reads only the nodes that can take part in a decision
(power.cycle_input): on random clusters, the core decides on those exactly what it decides
on every node and every holding job, as the cycle read them before."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest
from django.db import transaction

from cluster.core.slurmconf import parse_slurm_conf_text
from cluster.core.states import HOLDING_JOB_STATES, JobState, NodeBase, NodeFlag
from cluster.models import Job, Node, Partition
from power import services
from power.core.config import power_config
from power.core.policy import RateState, power_cycle

pytestmark = pytest.mark.django_db

NOW = 1_767_225_600.0 + 86_400
LOADED = NOW - 5_000

CONF = """\
ClusterName=test
SlurmctldHost=ctl
SuspendProgram=/bin/true
ResumeProgram=/bin/true
ResumeFailProgram=/bin/true
SuspendTime={suspend}
SuspendRate={rate}
ResumeRate={rate}
ResumeTimeout=300
SuspendTimeout=60
{exc}
NodeName=n[01-40] CPUs=4
PartitionName=short Nodes=n[01-20] Default=YES {short}
PartitionName=long Nodes=n[15-40] {long}
"""

_FLAGS = [
    NodeFlag.POWERED_DOWN,
    NodeFlag.POWERING_UP,
    NodeFlag.POWERING_DOWN,
    NodeFlag.POWER_DOWN,
    NodeFlag.POWER_UP,
    NodeFlag.COMPLETING,
    NodeFlag.DRAIN,
    NodeFlag.NOT_RESPONDING,
    NodeFlag.REBOOT_REQUESTED,
    NodeFlag.POWER_DRAIN,
]
_JOB_STATES = [*sorted(HOLDING_JOB_STATES), JobState.PENDING, JobState.COMPLETED]


def _config(rng: random.Random):
    text = CONF.format(
        suspend=rng.choice([100, 600, "INFINITE"]),
        rate=rng.choice([0, 2, 5]),
        exc=rng.choice(
            [
                "",
                "SuspendExcNodes=n[01-06]:3",
                "SuspendExcNodes=n[01-20]:4",
                "SuspendExcNodes=n[25-40]:5,n05",
                "SuspendExcParts=long",
            ]
        ),
        short=rng.choice(["", "SuspendTime=50", "SuspendTime=INFINITE"]),
        long=rng.choice(["", "SuspendTime=900", "SuspendTime=300"]),
    )
    return power_config(parse_slurm_conf_text(text))


def _cluster(rng: random.Random) -> None:
    Partition.objects.create(name="short", nodes="n[01-20]")
    Partition.objects.create(name="long", nodes="n[15-40]")
    nodes = []
    for i in range(1, 41):
        flags = 0
        for flag in _FLAGS:
            if rng.random() < 0.15:
                flags |= flag
        roll = rng.random()
        if roll < 0.25:
            flags = NodeFlag.POWERED_DOWN  # the usual quiet powered-down node
        elif roll < 0.55:
            flags = 0  # up, idle or busy
        last_busy = rng.choice([None, NOW - rng.uniform(0, 1_500), NOW - rng.uniform(0, 60)])
        nodes.append(
            Node(
                name=f"n{i:02d}",
                base_state=rng.choice(
                    [NodeBase.IDLE, NodeBase.IDLE, NodeBase.DOWN, NodeBase.ALLOCATED, NodeBase.MIXED]
                ),
                flags=flags,
                last_busy=None if last_busy is None else datetime.fromtimestamp(last_busy, UTC),
                suspend_time=rng.choice([None, None, None, -1, 30, 2_000]),
                power_entered=datetime.fromtimestamp(NOW - rng.uniform(0, 600), UTC)
                if rng.random() < 0.8
                else None,
            )
        )
    Node.objects.bulk_create(nodes)
    for job_id in range(1, rng.randint(0, 12) + 1):
        alloc = sorted(rng.sample([n.name for n in nodes], rng.randint(1, 3)))
        Job.objects.create(
            id=job_id,
            user="alice",
            partition=rng.choice(["short", "long"]),
            submit_time=datetime.fromtimestamp(NOW - 3_000, UTC),
            state=rng.choice(_JOB_STATES),
            alloc=alloc,
            requeue=rng.random() < 0.5,
        )


def _every_node_and_job(power, auto, exclusions, rates):
    """The cycle's input as it was read before: every node, every holding job."""
    parts = services.partition_membership()
    unrunnable = services.unrunnable_actions()
    nodes = [
        services.power_node(n, parts, now=NOW, loaded=LOADED, unrunnable=unrunnable)
        for n in Node.objects.order_by("name")
    ]
    jobs = [
        services.power_job(j) for j in Job.objects.filter(state__in=[s.value for s in HOLDING_JOB_STATES])
    ]
    return power_cycle(power, nodes, jobs, now=NOW, rates=rates, exclusions=exclusions, auto_enabled=auto)


def _chosen(power, auto, exclusions, rates):
    with transaction.atomic():
        rows, held = services._cycle_input(power, now=NOW, loaded=LOADED, auto=auto, exclusions=exclusions)
    parts = services.partition_membership()
    unrunnable = services.unrunnable_actions(list(rows))
    nodes = [
        services.power_node_of(n, parts, now=NOW, loaded=LOADED, unrunnable=unrunnable) for n in rows.values()
    ]
    jobs = [services.power_job(j) for j in held]
    result = power_cycle(power, nodes, jobs, now=NOW, rates=rates, exclusions=exclusions, auto_enabled=auto)
    return result, len(nodes)


@pytest.mark.parametrize("seed", range(40))
def test_the_chosen_nodes_decide_what_every_node_decides(seed) -> None:
    rng = random.Random(seed)
    power = _config(rng)
    _cluster(rng)
    auto = rng.random() < 0.8
    rates = RateState(tuple(NOW - rng.uniform(0, 90) for _ in range(rng.randint(0, 4))), ())
    expected = _every_node_and_job(power, auto, power.exclusions, rates)
    got, read = _chosen(power, auto, power.exclusions, rates)
    assert got == expected
    assert read <= Node.objects.count()


def test_a_quiet_cluster_reads_no_node() -> None:
    """Busy nodes, powered-down ones nobody asked for, idle ones short of SuspendTime:
    nothing to decide, nothing read."""
    power = power_config(parse_slurm_conf_text(CONF.format(suspend=600, rate=0, exc="", short="", long="")))
    Partition.objects.create(name="short", nodes="n[01-20]")
    Partition.objects.create(name="long", nodes="n[15-40]")
    recent = datetime.fromtimestamp(NOW - 60, UTC)
    Node.objects.bulk_create(
        [Node(name=f"n{i:02d}", base_state=NodeBase.ALLOCATED, last_busy=recent) for i in range(1, 11)]
        + [
            Node(name=f"n{i:02d}", base_state=NodeBase.IDLE, flags=NodeFlag.POWERED_DOWN)
            for i in range(11, 31)
        ]
        + [Node(name=f"n{i:02d}", base_state=NodeBase.IDLE, last_busy=recent) for i in range(31, 41)]
    )
    Job.objects.create(
        id=1, user="alice", partition="short", submit_time=recent, state=JobState.RUNNING, alloc=["n01"]
    )
    got, read = _chosen(power, True, power.exclusions, RateState())
    assert (got.decisions, read) == ((), 0)
