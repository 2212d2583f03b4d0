"""cluster.services.state.refresh_usage(names) reads only the jobs that can hold those
nodes, not every running job: the nodes' usage, base state and COMPLETING flag equal what
the old computation from every holding job gives (random clusters, fixed seeds), and a
refresh of a few nodes reads the allocations of the jobs on them only."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime

import pytest
from django.db.models import F, Q

from cluster.core.hostlists import fold
from cluster.core.states import HOLDING_JOB_STATES, JobState, NodeBase, NodeFlag
from cluster.models import Job, Node
from cluster.services.state import _holding_allocs, refresh_usage

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 1, 1, tzinfo=UTC)
STATES = (
    JobState.RUNNING, JobState.COMPLETING, JobState.CONFIGURING, JobState.SUSPENDED,
    JobState.PENDING, JobState.COMPLETED, JobState.CANCELLED,
)  # fmt: skip


def make_cluster(rng: random.Random, nodes: int, jobs: int) -> list[str]:
    names = [f"c{i:03d}" for i in range(nodes)]
    Node.objects.bulk_create(
        Node(
            name=n,
            cpus=8,
            base_state=rng.choice((NodeBase.IDLE, NodeBase.MIXED, NodeBase.ALLOCATED, NodeBase.DOWN)),
            flags=int(rng.choice((NodeFlag.NONE, NodeFlag.COMPLETING, NodeFlag.DRAIN))),
            alloc_cpus=rng.randrange(9),
            alloc_mem=rng.randrange(3),
        )
        for n in names
    )
    rows = []
    for job_id in range(1, jobs + 1):
        state = rng.choice(STATES)
        hosts = sorted(rng.sample(names, rng.choice((1, 1, 1, 2, 3, 5))))
        alloc = {h: [rng.randrange(1, 5), rng.randrange(100, 900)] for h in hosts}
        node_list, batch_host = fold(hosts), hosts[0]
        if state == JobState.COMPLETING and len(hosts) > 1 and rng.random() < 0.5:
            # Some nodes' epilogs done: released from the job, the batch host maybe first.
            for h in rng.sample(hosts, rng.randrange(1, len(hosts))):
                del alloc[h]
        if state not in HOLDING_JOB_STATES:
            alloc, node_list, batch_host = {}, "", ""
        elif rng.random() < 0.05:
            node_list = batch_host = ""  # a row written without them: read whatever it holds
        rows.append(
            Job(id=job_id, user="u", partition="p", state=state, submit_time=NOW, alloc=alloc,
                node_list=node_list, batch_host=batch_host)
        )  # fmt: skip
    Job.objects.bulk_create(rows)
    return names


def from_every_job(names: set[str]) -> dict[str, tuple[int, int, str, int]]:
    """The old computation: every holding job read, the nodes' usage derived from it."""
    usage: dict[str, list[int]] = {}
    running: dict[str, int] = {}
    completing: set[str] = set()
    for alloc, state in Job.objects.filter(state__in=[s.value for s in HOLDING_JOB_STATES]).values_list(
        "alloc", "state"
    ):
        for node, (cpus, mem) in alloc.items():
            entry = usage.setdefault(node, [0, 0])
            entry[0] += cpus
            entry[1] += mem
            if state == JobState.COMPLETING:
                completing.add(node)
            else:
                running[node] = running.get(node, 0) + cpus
    out = {}
    for node in Node.objects.filter(name__in=names):
        cpus, mem = usage.get(node.name, (0, 0))
        busy = running.get(node.name, 0)
        base = NodeBase(node.base_state)
        if base in (NodeBase.IDLE, NodeBase.MIXED, NodeBase.ALLOCATED):
            full = NodeBase.ALLOCATED if busy >= node.cpus else NodeBase.MIXED
            base = NodeBase.IDLE if busy == 0 else full
        ending = NodeFlag.COMPLETING if node.name in completing else NodeFlag.NONE
        flags = int(node.flags & ~NodeFlag.COMPLETING | ending)
        out[node.name] = (cpus, mem, base.value, flags)
    return out


def stored(names: set[str]) -> dict[str, tuple[int, int, str, int]]:
    return {
        name: (cpus, mem, base, flags)
        for name, cpus, mem, base, flags in Node.objects.filter(name__in=names).values_list(
            "name", "alloc_cpus", "alloc_mem", "base_state", "flags"
        )
    }


@pytest.mark.parametrize("seed", range(8))
def test_the_nodes_usage_equals_the_one_from_every_holding_job(seed):
    rng = random.Random(seed)
    names = make_cluster(rng, nodes=40, jobs=150)
    for _ in range(4):
        subset = set(rng.sample(names, rng.choice((1, 3, 10, 40))))
        expected = from_every_job(subset)
        refresh_usage(subset)
        assert stored(subset) == expected
        # Every job's row stays; the next draw refreshes other nodes of the same jobs.
        Node.objects.filter(name__in=subset).update(alloc_cpus=rng.randrange(9), flags=0)


def test_a_few_nodes_read_the_allocations_of_their_jobs_only():
    names = make_cluster(random.Random(1), nodes=40, jobs=0)
    one_node = [
        Job(id=i, user="u", partition="p", state=JobState.RUNNING, submit_time=NOW, alloc={n: [1, 10]},
            node_list=n, batch_host=n)
        for i, n in enumerate(names * 5, start=1)
    ]  # fmt: skip
    Job.objects.bulk_create(one_node)
    assert len(_holding_allocs({"c007"})) == 5  # the jobs on c007, of 200 running
    refresh_usage({"c007"})
    assert stored({"c007"})["c007"][:2] == (5, 50)


def orm_holding_allocs(names: set[str] | None) -> list[tuple[dict, str]]:
    """The ORM query ``_holding_allocs`` ran before it was a plain statement."""
    holding = Q(state__in=[s.value for s in HOLDING_JOB_STATES])
    if names is not None:
        holding &= Q(batch_host__in=sorted(names)) | Q(batch_host="") | ~Q(node_list=F("batch_host"))
    return list(Job.objects.filter(holding).values_list("alloc", "state"))


def as_multiset(found: list[tuple[dict, str]]) -> list[str]:
    return sorted(json.dumps([alloc, state], sort_keys=True) for alloc, state in found)


@pytest.mark.parametrize("seed", range(6))
def test_the_holding_jobs_read_are_the_ones_the_orm_query_reads(seed):
    rng = random.Random(seed)
    names = make_cluster(rng, nodes=30, jobs=200)
    for subset in [None, set(), *(set(rng.sample(names, rng.choice((1, 2, 5, 30)))) for _ in range(6))]:
        found = _holding_allocs(subset)
        assert as_multiset(found) == as_multiset(orm_holding_allocs(subset))
        assert all(type(alloc) is dict and type(state) is str for alloc, state in found)
