"""Job shapes kept from pass to pass (limits.core.plugin.ShapeMemo, #18 simulator speed)
against shapes computed in each pass: an oracle on random passes.

Between passes the policy (TRESBillingWeights), the partitions' DefaultTime and MaxTime,
DefMemPerNode and the nodes' memory change at random.  A plugin with the memo and one
without must see the same shapes for every job and make the same pass.  A memo that kept
shapes across one of those changes (a field left out of what it compares, ``--mem=0``
kept past a change of the nodes' memory) fails.
"""

from __future__ import annotations

import random

import pytest

from cluster.core.scheduler import JobView, NodeView, PartitionView, SchedulerConfig, Snapshot, schedule
from cluster.core.states import JobState, NodeBase
from limits.core.plugin import JobLimitsInfo, LimitsPlugin, ShapeMemo
from limits.core.policy import QOS, Association, AssocLimits, Enforce, PartitionLimits, Policy, QOSLimits
from slurmwords.tres import parse_billing_weights

NOW = 1_000_000.0
NODES = 8


def policy(weights: str) -> Policy:
    return Policy(
        associations=[
            Association("phys", parent="root", limits=AssocLimits(grp_tres={"cpu": 40})),
            Association("phys", "alice", limits=AssocLimits(max_tres_per_job={"mem": 20_000})),
            Association("phys", "bob", limits=AssocLimits(max_tres_per_node={"billing": 12})),
        ],
        qos=[QOS("normal", limits=QOSLimits(max_wall_duration_per_job=45))],
        partitions=[
            PartitionLimits(name=p, billing_weights=parse_billing_weights(weights) if weights else None)
            for p in ("batch", "long")
        ],
        enforce=Enforce.parse("limits"),
    )


POLICIES = [policy(""), policy("CPU=1.0,Mem=0.5G"), policy("CPU=2.0")]


def _snapshot(rng: random.Random, jobs: list[JobView], was: Snapshot | None) -> Snapshot:
    """The next pass's snapshot: now and then other node memory, partition time limits or
    DefMemPerNode (each alone, so that the others are seen kept across it)."""
    memory = was.nodes[0].real_memory if was else 16000
    times = {name: (p.default_time, p.max_time) for name, p in was.partitions.items()} if was else {}
    default_mem = was.config.default_mem_per_node if was else 0
    change = rng.choice(["memory", "times", "default_mem", None, None, None])
    if change == "memory" or not was:
        memory = rng.choice([8000, 16000, 32000])  # the largest node's is what --mem=0 asks
    if change == "times" or not was:
        choices = [None, 30, 60, 120]
        times = {name: (rng.choice(choices), rng.choice(choices)) for name in ("batch", "long")}
    if change == "default_mem":
        default_mem = rng.choice([0, 1000, 4000])
    nodes = tuple(NodeView(i, f"n{i}", 8, memory - 1000 * (i % 2), 1, NodeBase.IDLE, 0) for i in range(NODES))
    parts = {
        name: PartitionView(name, span, default_time=times[name][0], max_time=times[name][1])
        for name, span in (("batch", tuple(range(4))), ("long", tuple(range(4, NODES))))
    }
    running = tuple(j for j in jobs if j.node_indices)
    pending = tuple(j for j in jobs if not j.node_indices)
    config = SchedulerConfig(default_mem_per_node=default_mem)
    return Snapshot(NOW, nodes, parts, pending, running, config=config)


def _jobs(rng: random.Random) -> list[JobView]:
    jobs = []
    for job_id in range(1, rng.randint(5, 25)):
        common = {
            "job_id": job_id,
            "partition": rng.choice(["batch", "long"]),
            "user": rng.choice(["alice", "bob"]),
            "submit_time": NOW - 100 * job_id,
            "time_limit": rng.choice([None, 0, 20, 90]),
            "licenses": rng.choice(["", "lic:2"]),
        }
        if rng.random() < 0.5:
            n = rng.choice([1, 2])
            nodes = tuple(rng.sample(range(NODES), n))
            jobs.append(
                JobView(
                    **common,
                    state=JobState.RUNNING,
                    start_time=NOW - 60,
                    node_indices=nodes,
                    alloc_cpus=tuple(rng.choice([2, 4, 8]) for _ in nodes),
                    alloc_mem=tuple(rng.choice([1000, 8000]) for _ in nodes),
                )
            )
        else:
            jobs.append(
                JobView(
                    **common,
                    min_nodes=rng.choice([1, 2]),
                    num_tasks=rng.choice([1, 4, 8]),
                    cpus_per_task=rng.choice([1, 2]),
                    mem_per_node=rng.choice([None, 0, 2000]),
                )
            )
    return jobs


def _shape(plugin: LimitsPlugin, job: JobView) -> tuple:
    s = plugin.shape(job)
    return dict(s.tres), dict(s.per_node), s.nodes, s.time_limit


@pytest.mark.parametrize("seed", range(6))
def test_kept_shapes_equal_shapes_of_the_pass(seed):
    rng = random.Random(seed)
    memo = ShapeMemo()
    jobs = _jobs(rng)
    snap = None
    chosen = POLICIES[0]
    for _ in range(60):
        if rng.random() < 0.3:
            jobs = _jobs(rng)
        snap = _snapshot(rng, jobs, snap)
        if rng.random() < 0.15:
            chosen = rng.choice(POLICIES)
        infos = {j.job_id: JobLimitsInfo(account="phys", qos="normal") for j in jobs}
        kept = LimitsPlugin(chosen, jobs=infos, memo=memo)
        fresh = LimitsPlugin(chosen, jobs=infos)
        kept.begin_pass(snap)
        fresh.begin_pass(snap)
        assert [_shape(kept, j) for j in jobs] == [_shape(fresh, j) for j in jobs]
        assert schedule(snap, [LimitsPlugin(chosen, jobs=infos, memo=memo)]) == schedule(
            snap, [LimitsPlugin(chosen, jobs=infos)]
        )


def test_running_jobs_of_equal_sums_spread_differently_keep_their_own_per_node_figures():
    """A running job's shape counts its largest node's CPUs and memory (MaxTRESPerNode):
    two jobs with the same totals on as many nodes, spread differently, are two shapes,
    within a pass and from one pass to the next."""
    common = {"partition": "batch", "user": "bob", "submit_time": NOW, "state": JobState.RUNNING,
              "start_time": NOW - 60, "node_indices": (0, 1)}  # fmt: skip
    uneven = JobView(job_id=1, alloc_cpus=(2, 6), alloc_mem=(1000, 7000), **common)
    even = JobView(job_id=2, alloc_cpus=(4, 4), alloc_mem=(4000, 4000), **common)
    memo = ShapeMemo()
    infos = {1: JobLimitsInfo(account="phys", qos="normal"), 2: JobLimitsInfo(account="phys", qos="normal")}
    for jobs in ([uneven, even], [even, uneven]):
        snap = _snapshot(random.Random(1), jobs, None)
        plugin = LimitsPlugin(POLICIES[0], jobs=infos, memo=memo)
        plugin.begin_pass(snap)
        assert dict(plugin.shape(uneven).per_node)["cpu"] == 6
        assert dict(plugin.shape(uneven).per_node)["mem"] == 7000
        assert dict(plugin.shape(even).per_node)["cpu"] == 4
        assert dict(plugin.shape(even).per_node)["mem"] == 4000
