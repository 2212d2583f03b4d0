"""HresPlugin inside cluster.core.scheduler.schedule: starts, charges, reasons, usage from
running jobs' charges.  Node ``nodeNN`` is index NN-1."""

from __future__ import annotations

from cluster.core.licenses import LicensePlugin
from cluster.core.scheduler import JobView, NodeView, PartitionView, SchedulerConfig, Snapshot, schedule
from cluster.core.states import NodeBase, Reason
from hres.core.layers import HresState, parse_licenses_alloc, update_layer, update_resource
from hres.core.plugin import HresPlugin

NOW = 1_000_000.0


def cluster(names) -> tuple[NodeView, ...]:
    return tuple(NodeView(i, name, 4, 8000, 1, NodeBase.IDLE, 0) for i, name in enumerate(names))


def job(job_id: int, licenses: str, nodes: int = 1, **kw) -> JobView:
    return JobView(job_id, "batch", "alice", NOW - 10, min_nodes=nodes, licenses=licenses, **kw)


def holding(job_id: int, nodes: tuple[int, ...], licenses: str = "") -> JobView:
    return job(
        job_id, licenses, len(nodes), state="RUNNING", start_time=NOW - 5, node_indices=nodes,
        alloc_cpus=(4,) * len(nodes), time_limit=60,
    )  # fmt: skip


def snap(names, pending, running=(), partition=None) -> Snapshot:
    nodes = cluster(names)
    part = partition or PartitionView("batch", tuple(range(len(nodes))))
    return Snapshot(
        NOW, nodes, {"batch": part}, tuple(pending), tuple(running), SchedulerConfig(backfill=True)
    )


def test_jobs_start_on_nodes_the_layers_serve_and_are_charged(spec_state: HresState, nodes):
    plugin = HresPlugin(spec_state)
    # 16 whole-node jobs of power:8000 on 4-CPU nodes: rack1 (35000) holds 4 of them,
    # rack2 2 more before row1 (52000) is full, rack3 (40000) 5, and rack4 1 before the
    # datacenter (102000) is full: 12 in all.
    pending = [job(i, "power:8000", num_tasks=4) for i in range(1, 17)]
    result = schedule(snap(nodes, pending), [plugin])
    starts = {s.job_id: s.node_indices for s in result.starts}
    assert len(starts) == 12
    assert sorted(n for ns in starts.values() for n in ns) == [0, 1, 2, 3, 8, 9, 16, 17, 18, 19, 20, 24]
    assert plugin.licenses_alloc(1) == "power(rack1*8000,row1*8000,datacenter*8000):8000"
    held = plugin.state.resource("power")
    assert held.used[held.structure.index["datacenter"]] == 96000
    reasons = {p.job_id: (p.reason, p.detail) for p in result.pending}
    assert reasons[13] == (Reason.LICENSES, "power: 8000 requested, layer datacenter has 6000 free")


def test_running_jobs_charges_count_and_finished_ones_do_not(spec_state, nodes):
    charges = {
        7: parse_licenses_alloc("flat(low1*12,mid1*12,top*12):12"),
        8: parse_licenses_alloc("flat(low3*12,mid2*12,top*12):12"),  # ended: not in the snapshot
    }
    plugin = HresPlugin(spec_state, charges)
    result = schedule(
        snap(nodes, [job(1, "flat:12"), job(2, "flat:1")], [holding(7, (0,), "flat:12")]), [plugin]
    )
    assert [s.job_id for s in result.starts] == [1]
    assert result.starts[0].node_indices[0] >= 16  # low1 is full, mid1 has 4 left
    (pending,) = result.pending
    assert (pending.job_id, pending.reason) == (2, Reason.LICENSES)
    assert "layer top has 0 free" in pending.detail


def test_required_nodes_the_layers_cannot_serve(spec_state, nodes):
    state = update_layer(spec_state, "natural", "low1", count=0)
    state = update_layer(state, "natural", "top", count=0)
    plugin = HresPlugin(state)
    result = schedule(snap(nodes, [job(1, "natural:1", req_nodes=frozenset({"node02"}))]), [plugin])
    (pending,) = result.pending
    assert pending.reason == Reason.LICENSES and "natural" in pending.detail
    assert result.starts == ()


def test_disabled_resource_pends_with_hresdisabled(spec_state, nodes):
    plugin = HresPlugin(update_resource(spec_state, "flat", disable_hres=True))
    result = schedule(snap(nodes, [job(1, "flat:1"), job(2, "natural:1")]), [plugin])
    assert [(p.job_id, p.reason) for p in result.pending] == [(1, Reason.HRES_DISABLED)]
    assert [s.job_id for s in result.starts] == [2]


def test_partition_outside_the_layers(spec_state, nodes):
    names = (*nodes, "extra01", "extra02")
    part = PartitionView("batch", (32, 33))
    result = schedule(snap(names, [job(1, "natural:1")], partition=part), [HresPlugin(spec_state)])
    (pending,) = result.pending
    assert (pending.reason, pending.detail) == (
        Reason.LICENSES,
        "natural: no layer of natural holds the nodes",
    )


def test_bad_request_and_plain_licenses_are_left_alone(spec_state, nodes):
    plugin = HresPlugin(spec_state)
    pending = [job(1, "power:1,power:2"), job(2, "fluent:1")]
    result = schedule(snap(nodes, pending), [LicensePlugin({"fluent": 1, "ansys": 1}), plugin])
    assert {p.job_id: p.reason for p in result.pending} == {1: Reason.LICENSES}
    assert [s.job_id for s in result.starts] == [2]
    assert plugin.licenses_alloc(2) == ""


def test_node_list_change_reindexes_the_layers(spec_state, nodes):
    # The adapter's node list gained a node in front: indices shift, layers follow names.
    names = ("aaa01", *nodes)
    plugin = HresPlugin(spec_state)
    result = schedule(snap(names, [job(1, "natural:1", req_nodes=frozenset({"node01"}))]), [plugin])
    assert result.starts[0].node_indices == (1,)
    assert plugin.licenses_alloc(1) == "natural(low1*1):1"


def test_mode3_multi_node_job_spreads_over_layers(spec_state, nodes):
    plugin = HresPlugin(spec_state)
    # 5 nodes of 9000 cannot all sit under rack1 (35000): the fifth goes to rack2.
    result = schedule(snap(nodes, [job(1, "power:9000", nodes=5, num_tasks=20)]), [plugin])
    (start,) = result.starts
    assert start.node_indices == (0, 1, 2, 8, 9)
    assert plugin.licenses_alloc(1) == "power(rack1*27000,rack2*18000,row1*45000,datacenter*45000):9000"
