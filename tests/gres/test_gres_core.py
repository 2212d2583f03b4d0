"""The scheduler's GRES counting (cluster/core/gres.py): pure, snapshots built by hand."""

from __future__ import annotations

import pytest

from cluster.core import gres
from cluster.core.gres import GresItem, GresPlugin, GresRequest, node_needs, parse_gpus, parse_gres_option
from cluster.core.scheduler import JobView, NodeView, PartitionView, Snapshot, schedule
from cluster.core.states import NodeBase, NodeFlag, Reason

NOW = 1_000_000.0


def nodes(n: int = 2, cpus: int = 8) -> tuple[NodeView, ...]:
    return tuple(
        NodeView(
            index=i,
            name=f"g{i}",
            cpus=cpus,
            real_memory=8000,
            weight=1,
            base=NodeBase.IDLE,
            flags=NodeFlag.NONE,
        )
        for i in range(n)
    )


def job(job_id: int, **kw) -> JobView:
    return JobView(job_id=job_id, partition="gpu", user="u", submit_time=NOW - 100 + job_id, **kw)


def run_pass(pending, requests, *, inventory=None, held=(), count=2, running=()):
    inventory = inventory or {f"g{i}": (GresItem("gpu", "", 4),) for i in range(count)}
    view = nodes(count)
    part = {"gpu": PartitionView(name="gpu", node_indices=tuple(range(count)))}
    plugin = GresPlugin(inventory, held, requests)
    snap = Snapshot(now=NOW, nodes=view, partitions=part, pending=tuple(pending), running=tuple(running))
    return schedule(snap, [plugin]), plugin


def test_requests_parse_as_slurm_writes_them():
    assert parse_gres_option("gpu:2,gres/gpu:a100:1,mps") == (
        GresItem("gpu", "", 2),
        GresItem("gpu", "a100", 1),
        GresItem("mps", "", 1),
    )
    assert parse_gpus("a100:2", "--gpus") == GresItem("gpu", "a100", 2)
    assert parse_gpus("3", "--gpus") == GresItem("gpu", "", 3)
    for bad in ("gpu:a:b:2", "gpu:-1", "gpu:x y"):
        with pytest.raises(ValueError, match=r"^Invalid generic resource \(gres\) specification"):
            parse_gres_option(bad)
    with pytest.raises(ValueError, match="Invalid generic resource"):
        parse_gpus("0", "--gpus")


def test_needs_spread_gpus_over_nodes_and_count_gpus_per_task():
    per_job = GresRequest(per_job=GresItem("gpu", "", 3))
    assert node_needs(per_job, 2, 2) == [{("gpu", ""): 2}, {("gpu", ""): 1}]
    per_task = GresRequest(per_task=GresItem("gpu", "", 2))
    assert node_needs(per_task, 2, 3) == [{("gpu", ""): 4}, {("gpu", ""): 2}]
    per_node = GresRequest(per_node=(GresItem("gpu", "a100", 1),))
    assert node_needs(per_node, 2, 2) == [{("gpu", "a100"): 1}] * 2


def test_two_jobs_get_disjoint_devices_and_a_third_waits_for_resources():
    requests = {i: GresRequest(per_job=GresItem("gpu", "", 2)) for i in (1, 2, 3)}
    result, plugin = run_pass([job(1), job(2), job(3)], requests, count=1)
    assert [s.job_id for s in result.starts] == [1, 2]
    assert plugin.taken[1] == {"g0": [["gpu", "", 2, [0, 1]]]}
    assert plugin.taken[2] == {"g0": [["gpu", "", 2, [2, 3]]]}
    assert [(p.job_id, p.reason) for p in result.pending] == [(3, Reason.RESOURCES)]


def test_devices_held_by_running_jobs_are_not_given_again():
    held = [{"g0": [["gpu", "", 3, [0, 2, 3]]]}]
    result, plugin = run_pass([job(5)], {5: GresRequest(per_node=(GresItem("gpu", "", 2),))}, held=held)
    # g0 has one GPU left (index 1): the job goes to g1.
    assert result.starts[0].node_indices == (1,)
    assert plugin.taken[5] == {"g1": [["gpu", "", 2, [0, 1]]]}
    result, plugin = run_pass(
        [job(6)], {6: GresRequest(per_node=(GresItem("gpu", "", 1),))}, held=held, count=1
    )
    assert plugin.taken[6] == {"g0": [["gpu", "", 1, [1]]]}


def test_typed_requests_take_devices_of_their_type():
    inventory = {"g0": (GresItem("gpu", "v100", 2), GresItem("gpu", "a100", 2))}
    requests = {
        1: GresRequest(per_node=(GresItem("gpu", "a100", 1),)),
        2: GresRequest(per_node=(GresItem("gpu", "a100", 2),)),
        3: GresRequest(per_node=(GresItem("gpu", "", 2),)),
    }
    result, plugin = run_pass([job(1), job(2), job(3)], requests, inventory=inventory, count=1)
    assert plugin.taken[1] == {"g0": [["gpu", "a100", 1, [2]]]}
    assert plugin.taken[3] == {"g0": [["gpu", "v100", 2, [0, 1]]]}
    assert [(p.job_id, p.reason) for p in result.pending] == [(2, Reason.RESOURCES)]


def test_a_job_without_gres_is_not_held_back_by_busy_gpus():
    held = [{"g0": [["gpu", "", 4, [0, 1, 2, 3]]]}]
    result, _ = run_pass(
        [job(1), job(2)], {1: GresRequest(per_job=GresItem("gpu", "", 1))}, held=held, count=1
    )
    # Job 1 waits for a GPU; job 2 asks none, and backfill runs it on the free CPUs.
    assert [(p.job_id, p.reason) for p in result.pending] == [(1, Reason.RESOURCES)]
    assert [(s.job_id, s.backfill) for s in result.starts] == [(2, True)]


def test_gpus_over_two_nodes_take_both():
    result, plugin = run_pass([job(1, min_nodes=2)], {1: GresRequest(per_job=GresItem("gpu", "", 6))})
    assert result.starts[0].node_indices == (0, 1)
    assert sorted(len(e[0][3]) for e in plugin.taken[1].values()) == [3, 3]  # spread evenly


def test_never_fits_and_used_text():
    members = [(GresItem("gpu", "a100", 2),), ()]
    assert gres.never_fits(GresRequest(per_node=(GresItem("gpu", "", 3),)), 1, 1, members)
    assert gres.never_fits(GresRequest(per_node=(GresItem("gpu", "v100", 1),)), 1, 1, members)
    assert not gres.never_fits(GresRequest(per_job=GresItem("gpu", "a100", 2)), 1, 1, members)
    assert gres.never_fits(GresRequest(per_job=GresItem("gpu", "", 2)), 2, 2, members)
    items = (GresItem("gpu", "a100", 2), GresItem("gpu", "v100", 2), GresItem("mps", "", 100))
    used = [["gpu", "a100", 2, [0, 1]], ["mps", "", 25, []]]
    assert gres.gres_used(items, [used]) == "gpu:a100:2(IDX:0-1),gpu:v100:0(IDX:N/A),mps:25"
    assert gres.tres_counts(used) == {"gpu": 2, "gpu:a100": 2, "mps": 25}
