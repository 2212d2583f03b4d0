"""The HRES core: the three modes, eligibility, charges, updates, views, reservations,
Mode 3 preemption, and properties checked by hypothesis.  Node ``nodeNN`` is index NN-1."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cluster.core.states import Reason
from hres.core.config import parse_resources
from hres.core.layers import (
    INF,
    Charge,
    HresState,
    PreemptCandidate,
    Refusal,
    Selection,
    build_state,
    check_reservation,
    format_licenses_alloc,
    gate,
    indices_of,
    license_view,
    mask_of,
    mode3_preemption,
    parse_licenses_alloc,
    plan,
    select,
    update_layer,
    update_resource,
)
from slurmwords.licenses import LicenseItem

ALL = list(range(32))


def nodes_of(expr: str) -> list[int]:
    """``01-04`` → [0, 1, 2, 3]."""
    lo, _, hi = expr.partition("-")
    return list(range(int(lo) - 1, int(hi or lo)))


def fill(
    state: HresState, name: str, amount: int, candidates, count: int = 1
) -> tuple[HresState, int, Refusal]:
    """Start jobs of ``name:amount`` on ``count`` nodes until one is refused."""
    started = 0
    while True:
        sel = select(state, [LicenseItem(name, amount)], candidates, count)
        if isinstance(sel, Refusal):
            return state, started, sel
        state = state.charge(sel.charges)
        started += 1


def used(state: HresState, name: str) -> dict[str, int]:
    res = state.resource(name)
    return {la.name: u for la, u in zip(res.structure.layers, res.used, strict=True)}


# --------------------------------------------------------------------------- hres.html's examples


def test_natural_mode1_gives_250_in_all(spec_state):
    # A job on node[01-04] pulls from the 100 of node[01-16] first.
    (charge,) = plan(spec_state, [LicenseItem("natural", 1)], nodes_of("01-04"))
    assert charge.layers == (("low1", 1),)
    state, first_half, refusal = fill(spec_state, "natural", 1, nodes_of("01-16"))
    assert first_half == 150  # 100 of low1 and the 50 of top
    assert used(state, "natural") == {"top": 50, "low1": 100, "low2": 0}
    assert refusal.reason == Reason.LICENSES and refusal.layer in {"top", "low1"}
    state, second_half, _ = fill(state, "natural", 1, ALL)
    assert first_half + second_half == 250
    assert used(state, "natural") == {"top": 50, "low1": 100, "low2": 100}


def test_flat_mode2_gives_at_most_24(spec_state):
    (charge,) = plan(spec_state, [LicenseItem("flat", 1)], nodes_of("01-04"))
    assert charge.layers == (("low1", 1), ("mid1", 1), ("top", 1))
    state, n, refusal = fill(spec_state, "flat", 1, ALL)
    assert n == 24
    assert used(state, "flat")["top"] == 24  # the lower layers hold 16+16 and 4x12 more
    assert (refusal.reason, refusal.layer) == (Reason.LICENSES, "top")
    assert refusal.detail == "flat: 1 requested, layer top has 0 free"
    # 12 fit under low1 before low1 runs out: the lower layer is the limit there.
    _, n, refusal = fill(spec_state, "flat", 1, nodes_of("01-08"))
    assert n == 12 and refusal.layer == "low1"


def test_power_mode3_sums_per_node_up_the_tree(spec_state):
    (charge,) = plan(spec_state, [LicenseItem("power", 1000)], nodes_of("01-16"))
    assert charge.layers == (("rack1", 8000), ("rack2", 8000), ("row1", 16000), ("datacenter", 16000))
    assert format_licenses_alloc([charge]) == "power(rack1*8000,rack2*8000,row1*16000,datacenter*16000):1000"
    (one,) = plan(spec_state, [LicenseItem("power", 1000)], [0])
    assert format_licenses_alloc([one]) == "power(rack1*1000,row1*1000,datacenter*1000):1000"
    (two,) = plan(spec_state, [LicenseItem("power", 1000)], [0, 1])
    assert two.on("rack1") == 2000
    state = spec_state.charge([charge])
    assert used(state, "power") == {
        "rack1": 8000, "rack3": 0, "rack2": 8000, "rack4": 0, "row1": 16000, "row2": 0, "datacenter": 16000,
    }  # fmt: skip


def test_spec_license_view(spec_state):
    views = {(v.license_name, v.layer_name): v for v in license_view(spec_state)}
    assert str(views["power", "rack1"]) == (
        "LicenseName=power\n"
        "Total=35000 Used=0 Free=35000 Reserved=0 Remote=no\n"
        "LayerName=rack1 ParentName=row1 Nodes=node[01-08] Mode=3 DisableHRES=false DisableLayer=false "
        "ConfTotal=40000 BaseUsage=5000\n"
        "Base=storage:5000"
    )
    dc = views["power", "datacenter"]
    assert (dc.total, dc.base_usage, dc.parent_name, dc.nodes) == (102000, 28000, None, "node[01-32]")
    assert views["power", "row1"].total == 52000
    assert "Base=(null)" in str(views["flat", "top"])
    assert (views["flat", "top"].mode, views["natural", "low2"].nodes) == (2, "node[17-32]")


# --------------------------------------------------------------------------- zero and infinite


def cfg(text: str, nodes: int = 8) -> HresState:
    names = [f"node{i:02d}" for i in range(1, nodes + 1)]
    return build_state(parse_resources(text, cluster_nodes=names), names)


MODE1 = """
- resource: r
  mode: MODE_1
  layers:
    - {layer_name: top, nodes: ["node[01-08]"], count: %s}
    - {layer_name: a, nodes: ["node[01-04]"], count: %s}
    - {layer_name: b, nodes: ["node[05-08]"], count: %s}
"""


def test_mode1_zero_layer_never_satisfies_and_changes_nothing():
    with_zero = cfg(MODE1 % (0, 2, 0))
    res = with_zero.resource("r")
    assert indices_of(res.eligible(1)) == [0, 1, 2, 3]
    _, n, refusal = fill(with_zero, "r", 1, list(range(8)))
    assert n == 2 and refusal.reason == Reason.LICENSES
    # A job that needs node05 cannot get the resource there.
    assert isinstance(select(with_zero, [LicenseItem("r", 1)], [4], 1, required=[4]), Refusal)


def test_mode1_infinite_layer_always_satisfies():
    state = cfg(MODE1 % (-1, 0, 0))
    res = state.resource("r")
    assert res.eligible(10**9) == mask_of(range(8))
    for _ in range(100):
        sel = select(state, [LicenseItem("r", 1000)], list(range(8)), 2)
        assert isinstance(sel, Selection)
        state = state.charge(sel.charges)
    assert used(state, "r")["top"] == 100_000


MODE2 = """
- resource: r
  mode: MODE_2
  layers:
    - {layer_name: top, nodes: ["node[01-08]"], count: %s}
    - {layer_name: a, nodes: ["node[01-04]"], count: %s}
    - {layer_name: b, nodes: ["node[05-08]"], count: %s}
"""


def test_mode2_zero_layer_blocks_every_node_under_it():
    state = cfg(MODE2 % (10, 0, 5))
    assert indices_of(state.resource("r").eligible(1)) == [4, 5, 6, 7]
    refusal = select(state, [LicenseItem("r", 1)], [0, 1], 1, required=[0])
    assert (refusal.reason, refusal.layer) == (Reason.LICENSES, "a")
    assert refusal.detail == "r: 1 requested, layer a has 0 free"
    state = cfg(MODE2 % (0, 5, 5))
    assert state.resource("r").eligible(1) == 0


def test_mode2_infinite_layer_is_neutral():
    state = cfg(MODE2 % (-1, 3, 5))
    _, n, refusal = fill(state, "r", 1, list(range(8)))
    assert n == 8 and refusal.reason == Reason.LICENSES
    # A two-node job across a and b needs room on both.
    (charge,) = plan(state, [LicenseItem("r", 2)], [3, 4])
    assert charge.layers == (("a", 2), ("b", 2), ("top", 2))


MODE3 = """
- resource: p
  mode: MODE_3
  layers:
    - {layer_name: root, count: %s}
    - {layer_name: r1, parent_name: root, count: -1}
    - {layer_name: r2, parent_name: root, count: -1}
    - {layer_name: l1, parent_name: r1, nodes: ["node[01-02]"], count: %s}
    - {layer_name: l2, parent_name: r1, nodes: ["node[03-04]"], count: 100}
    - {layer_name: l3, parent_name: r2, nodes: ["node[05-08]"], count: 100}
"""


def test_mode3_leaf_and_root_limits_and_select_skips_full_leaves():
    state = cfg(MODE3 % (250, 60))
    res = state.resource("p")
    # One node of l1 takes 50; two do not fit in l1's 60.
    assert plan(state, [LicenseItem("p", 50)], [0, 1]).layer == "l1"
    sel = select(state, [LicenseItem("p", 50)], list(range(8)), 3)
    assert sel.nodes == (0, 2, 3)  # node02 skipped: l1 holds one 50 only
    assert sel.charges[0].layers == (("l1", 50), ("l2", 100), ("r1", 150), ("root", 150))
    state = state.charge(sel.charges)
    # The root has 100 left: two more nodes anywhere under it, then nothing.
    assert indices_of(state.resource("p").eligible(50)) == [4, 5, 6, 7]  # l1 has 10 left, l2 none
    refusal = select(state, [LicenseItem("p", 50)], [4, 5, 6], 3)
    assert (refusal.reason, refusal.layer) == (Reason.LICENSES, "root")
    assert refusal.detail == "p: 150 needed on layer root, 100 free"
    assert res.eligible(50) != state.resource("p").eligible(50)


def test_mode3_nodes_outside_every_leaf():
    state = cfg(MODE3 % (250, 60), nodes=10)
    refusal = plan(state, [LicenseItem("p", 1)], [9])
    assert refusal.reason == Reason.LICENSES and "no layer of p holds the nodes" in refusal.detail


# --------------------------------------------------------------------------- charges


def test_charge_and_release_are_exact_and_survive_layer_changes(spec_state):
    items = [LicenseItem("flat", 2), LicenseItem("natural", 3), LicenseItem("power", 700)]
    sel = select(spec_state, items, ALL, 4)
    assert isinstance(sel, Selection) and sel.nodes == (0, 1, 2, 3)
    state = spec_state.charge(sel.charges)
    assert format_licenses_alloc(sel.charges) == (
        "flat(low1*2,mid1*2,top*2):2,natural(low1*3):3,power(rack1*2800,row1*2800,datacenter*2800):700"
    )
    # The layer under the job loses the job's nodes: the job keeps and returns what it took.
    moved = update_layer(state, "power", "rack1", nodes="-node[01-04]")
    moved = update_layer(moved, "power", "rack2", nodes="+node[01-04]")
    assert used(moved, "power")["rack1"] == 2800
    back = moved.release(sel.charges)
    assert all(u == 0 for r in back.resources for u in r.used)


def test_licenses_alloc_round_trip_with_args():
    charge = Charge("qpu", 1, (("q1", 1),), (("mode", "fast"), ("shots", "1000")))
    text = format_licenses_alloc([charge], plain=[("fluent", 2)])
    assert text == "qpu(q1*1):1[mode=fast,shots=1000],fluent:2"
    assert parse_licenses_alloc(text, reservation="r1") == (
        Charge("qpu", 1, (("q1", 1),), (("mode", "fast"), ("shots", "1000")), "r1"),
    )
    for bad in ("p(a*1)", "p(a):1", "p(a*x):1", "p(a*1):1[m=1"):
        with pytest.raises(ValueError, match="bad LicensesAlloc"):
            parse_licenses_alloc(bad)


def test_release_of_a_removed_resource_or_layer_is_ignored(spec_state):
    state = spec_state.charge(
        [Charge("gone", 1, (("x", 1),)), Charge("flat", 1, (("nolayer", 1), ("top", 1)))]
    )
    assert used(state, "flat")["top"] == 1
    assert state.release([Charge("flat", 1, (("top", 1),))]) == spec_state


# --------------------------------------------------------------------------- runtime updates


def test_update_nodes_replace_add_remove_and_propagate(spec_state):
    s = update_layer(spec_state, "power", "rack2", nodes="-node[09-10]")
    assert s.resource("power").structure.layer("row1").nodes == frozenset(
        spec_state.nodes[:8] + spec_state.nodes[10:16]
    )
    assert s.resource("power").structure.layer("datacenter").mask == mask_of([*range(8), *range(10, 32)])
    s = update_layer(s, "power", "rack4", nodes="+node[09-10]")
    assert s.resource("power").structure.layer("row2").mask == mask_of([8, 9, *range(16, 32)])
    s = update_layer(s, "natural", "low1", nodes="node[01-02]")
    assert s.resource("natural").structure.layer("low1").mask == 0b11
    s = update_layer(s, "natural", "low1", nodes="")
    assert s.resource("natural").structure.layer("low1").mask == 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"layer": "row1", "nodes": "+node01"}, "only be changed on leaf layers in Mode 3, not row1"),
        ({"layer": "rack2", "nodes": "+node01"}, "node01 already in leaf layer rack1"),
        ({"layer": "rack2", "nodes": "+node99"}, "node99 not in the cluster"),
        ({"layer": "rack2", "nodes": "node[01"}, "bad hostlist"),
        ({"layer": "rack1", "count": 4999}, "Count 4999 would be below its BaseUsage 5000"),
        ({"layer": "rack1", "count": "many"}, "Count must be"),
        ({"layer": "rack1", "count": True}, "Count must be"),
        ({"layer": "rack1", "base": "storage:50000"}, "Count 40000 would be below its BaseUsage 50000"),
        ({"layer": "rack2", "base": "a:1,a:2"}, "given twice"),
        ({"layer": "rack2", "base": "a=1"}, "expected name:value"),
        ({"layer": "rack2", "base": (("a", -1),)}, "non-negative"),
        ({"layer": "nope", "count": 1}, "resource power has no layer nope"),
    ],
)
def test_bad_updates_leave_the_state_alone(spec_state, kwargs, message):
    with pytest.raises(ValueError, match=__import__("re").escape(message)):
        update_layer(spec_state, "power", **kwargs)


def test_bad_update_of_an_ancestor_base_usage(spec_state):
    # rack2 may hold 53000 of base once its count is 60000, but row1 (60000) may not.
    with pytest.raises(ValueError, match=r"layer row1: Count 60000 would be below its BaseUsage 61000"):
        update_layer(spec_state, "power", "rack2", count=60000, base="ups:53000")


def test_unknown_resource(spec_state):
    with pytest.raises(ValueError, match="no hierarchical resource nope"):
        update_layer(spec_state, "nope", "a", count=1)


def test_count_and_base_updates(spec_state):
    s = update_layer(spec_state, "power", "rack1", base="")
    view = {v.layer_name: v for v in license_view(s) if v.license_name == "power"}
    assert (
        view["rack1"].base,
        view["rack1"].total,
        view["row1"].base_usage,
        view["datacenter"].base_usage,
    ) == (
        (),
        40000,
        3000,
        23000,
    )
    s = update_layer(s, "power", "rack2", count=45000, base=[("pdu", 100)])
    view = {v.layer_name: v for v in license_view(s) if v.license_name == "power"}
    assert (view["rack2"].conf_total, view["rack2"].total, view["row1"].base_usage) == (45000, 44900, 3100)
    s = update_layer(s, "power", "rack2", count=-1)
    assert s.resource("power").avail()[s.resource("power").structure.index["rack2"]] == INF
    assert {v.layer_name: v for v in license_view(s)}["rack2"].total is None
    assert "Total=INFINITE" in str({v.layer_name: v for v in license_view(s)}["rack2"])


def test_lowering_a_count_below_usage_keeps_running_jobs_and_makes_new_ones_wait(spec_state):
    state, n, _ = fill(spec_state, "natural", 10, nodes_of("01-16"))
    assert n == 15
    lowered = update_layer(state, "natural", "low1", count=20)
    lowered = update_layer(lowered, "natural", "top", count=0)
    assert used(lowered, "natural")["low1"] == 100  # nothing taken from running jobs
    refusal = gate(lowered, [LicenseItem("natural", 1)], 1, mask_of(range(16)))
    assert refusal.reason == Reason.LICENSES
    view = {v.layer_name: v for v in license_view(lowered) if v.license_name == "natural"}
    assert (view["low1"].used, view["low1"].free) == (100, 0)


# --------------------------------------------------------------------------- disabling


def test_disable_hres_makes_jobs_pend_with_hresdisabled(spec_state):
    s = update_resource(spec_state, "natural", disable_hres=True)
    refusal = gate(s, [LicenseItem("natural", 1)], 1, mask_of(ALL))
    assert (refusal.reason, refusal.detail) == (Reason.HRES_DISABLED, "natural: DisableHRES=true")
    assert (
        gate(update_resource(s, "natural", disable_hres=False), [LicenseItem("natural", 1)], 1, mask_of(ALL))
        is None
    )
    assert all(v.disable_hres for v in license_view(s) if v.license_name == "natural")


def test_disable_layer_mode1_other_layers_still_serve(spec_state):
    s = update_layer(spec_state, "natural", "low1", disable_layer=True)
    (charge,) = plan(s, [LicenseItem("natural", 1)], [0])
    assert charge.layers == (("top", 1),)
    s = update_layer(s, "natural", "top", disable_layer=True)
    refusal = gate(s, [LicenseItem("natural", 1)], 1, mask_of(nodes_of("01-16")))
    assert (refusal.reason, refusal.layer) == (Reason.HRES_DISABLED, "top")
    assert gate(s, [LicenseItem("natural", 1)], 1, mask_of(ALL)) is None  # low2 serves node[17-32]


def test_mode1_zero_count_layer_neither_hides_hresdisabled_nor_takes_the_blame(spec_state):
    """A zero-count Mode 1 layer is as if it were not there (Slurm's hres.html, "Mode 1")."""
    node01_16 = mask_of(nodes_of("01-16"))
    s = update_layer(spec_state, "natural", "top", count=0)
    s = update_layer(s, "natural", "low1", disable_layer=True)
    refusal = gate(s, [LicenseItem("natural", 1)], 1, node01_16)
    assert (refusal.reason, refusal.layer, refusal.detail) == (
        Reason.HRES_DISABLED,
        "low1",
        "natural: layer low1 is disabled",
    )
    # Enabled but full: low1 is what is short, not the empty top.
    empty_top = update_layer(spec_state, "natural", "top", count=0)
    _, n, refusal = fill(empty_top, "natural", 1, nodes_of("01-16"))
    assert n == 100
    assert (refusal.reason, refusal.layer) == (Reason.LICENSES, "low1")
    # Only the empty layer over the nodes: short of the resource, not disabled.
    s = update_layer(spec_state, "natural", "low1", count=0)
    s = update_layer(s, "natural", "top", nodes="node[17-32]")
    refusal = gate(s, [LicenseItem("natural", 1)], 1, node01_16)
    assert (refusal.reason, refusal.layer) == (Reason.LICENSES, "low1")


def test_disable_layer_mode2_and_mode3_blocks_the_nodes_under_it(spec_state):
    s = update_layer(spec_state, "flat", "mid1", disable_layer=True)
    assert indices_of(s.resource("flat").eligible(1)) == list(range(16, 32))
    refusal = gate(s, [LicenseItem("flat", 1)], 1, mask_of(range(16)))
    assert (refusal.reason, refusal.layer) == (Reason.HRES_DISABLED, "mid1")
    s = update_layer(spec_state, "power", "row2", disable_layer=True)
    refusal = gate(s, [LicenseItem("power", 10)], 2, mask_of(range(16, 32)))
    assert (refusal.reason, refusal.layer) == (Reason.HRES_DISABLED, "row2")
    assert isinstance(plan(s, [LicenseItem("power", 10)], [0]), tuple)


# --------------------------------------------------------------------------- reservations


def test_reserved_layer_amounts_only_for_the_reservation(spec_state, spec_config):
    from slurmwords.licenses import parse_reservation_licenses

    items = parse_reservation_licenses("natural(low1):30,flat(low2):4,flat(low4):2", hres=spec_config.modes())
    check_reservation(spec_state, "maint", items)
    s = spec_state.with_reservations({"maint": items})
    view = {(v.license_name, v.layer_name): v for v in license_view(s)}
    assert (view["natural", "low1"].reserved, view["natural", "low1"].free) == (30, 70)
    # Others fill node[01-16] with 70 from low1 and 50 from top; the reservation's 30 stay.
    s2, n, _ = fill(s, "natural", 1, nodes_of("01-16"))
    assert n == 120
    sel = select(s2, [LicenseItem("natural", 30)], nodes_of("01-16"), 1, reservation="maint")
    assert isinstance(sel, Selection) and sel.charges[0].reservation == "maint"
    s3 = s2.charge(sel.charges)
    assert isinstance(
        select(s3, [LicenseItem("natural", 1)], nodes_of("01-16"), 1, reservation="maint"), Refusal
    )
    # Released, the reserved amount is held back again for the reservation only.
    s4 = s3.release(sel.charges)
    assert isinstance(select(s4, [LicenseItem("natural", 1)], nodes_of("01-16"), 1), Refusal)
    with pytest.raises(ValueError, match="needs 101 on layer low1, 100 available"):
        check_reservation(
            spec_state, "big", parse_reservation_licenses("natural(low1):101", hres=spec_config.modes())
        )
    with pytest.raises(ValueError, match="resource natural has no layer mid"):
        spec_state.with_reservations({"x": [LicenseItem("natural", 1, (), "mid")]})
    with pytest.raises(ValueError, match="name the layer"):
        spec_state.with_reservations({"x": [LicenseItem("natural", 1)]})


def test_mode3_reservation_propagates_up(spec_state):
    s = spec_state.with_reservations({"r": [LicenseItem("power", 30000, (), "rack1")]})
    held = s.resource("power").held_for_others()
    assert [
        held[s.resource("power").structure.index[n]] for n in ("rack1", "row1", "datacenter", "rack2")
    ] == [
        30000,
        30000,
        30000,
        0,
    ]
    # rack1 has 35000 - 30000 left for others.
    assert plan(s, [LicenseItem("power", 5001)], [0]).layer == "rack1"
    assert isinstance(plan(s, [LicenseItem("power", 5001)], [0], reservation="r"), tuple)


def test_mode2_reservation_holds_its_amount_on_the_layers_above(spec_state, spec_config):
    from slurmwords.licenses import parse_reservation_licenses

    # flat(low2):4 (#13 point 5): a job on low2's nodes is charged on low2, mid1 and top,
    # so the 4 are held on all three.
    items = parse_reservation_licenses("flat(low2):4", hres=spec_config.modes())
    check_reservation(spec_state, "r", items)
    s = spec_state.with_reservations({"r": items})
    view = {v.layer_name: v for v in license_view(s) if v.license_name == "flat"}
    assert {n: view[n].reserved for n in ("low2", "mid1", "top", "low1", "mid2")} == {
        "low2": 4,
        "mid1": 4,
        "top": 4,
        "low1": 0,
        "mid2": 0,
    }
    # Others fill top from low1, low3 and low4: 20 of its 24, the reservation's 4 stay.
    s, started, refusal = fill(s, "flat", 1, nodes_of("01-08") + nodes_of("17-32"))
    assert (started, refusal.layer) == (20, "top")
    assert isinstance(select(s, [LicenseItem("flat", 1)], nodes_of("09-16"), 1), Refusal)
    sel = select(s, [LicenseItem("flat", 4)], nodes_of("09-16"), 1, reservation="r")
    assert isinstance(sel, Selection)
    assert dict(sel.charges[0].layers) == {"low2": 4, "mid1": 4, "top": 4}
    # What the reservation's job uses is no longer held back for it.
    assert s.charge(sel.charges).resource("flat").held_for_others() == [0] * 7
    # A second reservation may not hold on top what the first already holds.
    with pytest.raises(ValueError, match="needs 21 on layer top, 20 available"):
        check_reservation(
            spec_state.with_reservations({"r": items}),
            "s",
            parse_reservation_licenses("flat(low1):12,flat(low3):9", hres=spec_config.modes()),
        )


# --------------------------------------------------------------------------- preemption


def test_mode3_preemption_takes_jobs_under_a_shared_layer(spec_state):
    p = LicenseItem("power", 4000)
    state = spec_state
    jobs = []
    # Fill row1 (52000 free) from rack2 only: 13 jobs of 4000 on node[09-16] and more.
    for job_id, node in enumerate([8, 9, 10, 11, 12, 13, 14, 15], start=1):
        (c,) = plan(state, [p], [node])
        state = state.charge([c])
        jobs.append(PreemptCandidate(job_id, (c,)))
    # rack2 now holds 32000 of its 40000; row1 52000 - 32000 = 20000 left.
    (c,) = plan(state, [LicenseItem("power", 20000)], [0])
    state = state.charge([c])
    jobs.append(PreemptCandidate(99, (c,)))
    # A job on node02 (rack1) needs 4000: row1 is full, only jobs on rack2 can give it back.
    assert isinstance(plan(state, [p], [1]), Refusal)
    victims = mode3_preemption(state, p, [1], jobs)
    assert victims == (1,)  # a rack2 job: it shares no node with node02, only row1
    freed = state.release(jobs[0].charges)
    assert isinstance(plan(freed, [p], [1]), tuple)
    # A larger need takes several, fewest the greedy and pruning passes find.
    assert mode3_preemption(state, LicenseItem("power", 9000), [1], jobs) == (1, 2, 3)
    # Already fits: nothing to preempt; impossible: None.
    assert mode3_preemption(spec_state, p, [1], jobs) == ()
    assert mode3_preemption(state, LicenseItem("power", 36000), [1], jobs[:2]) is None
    with pytest.raises(ValueError, match="only reclaims Mode 3"):
        mode3_preemption(state, LicenseItem("flat", 1), [1], jobs)


def test_mode3_preemption_prunes_unneeded_victims(spec_state):
    state = spec_state
    small = plan(state, [LicenseItem("power", 2000)], [8])[0]
    big = plan(state, [LicenseItem("power", 20000)], [9])[0]
    state = state.charge([small, big])
    filler = plan(state, [LicenseItem("power", 30000)], [0])[0]
    state = state.charge([filler])  # row1: 52000 - 52000 = 0 left
    cands = [PreemptCandidate(1, (small,)), PreemptCandidate(2, (big,))]
    assert mode3_preemption(state, LicenseItem("power", 3000), [1], cands) == (2,)


# --------------------------------------------------------------------------- properties


RANDOM = """
- resource: m1
  mode: MODE_1
  layers:
    - {layer_name: top, nodes: ["node[01-08]"], count: %d}
    - {layer_name: a, nodes: ["node[01-04]"], count: %d}
    - {layer_name: b, nodes: ["node[05-08]"], count: %d}
- resource: m2
  mode: MODE_2
  layers:
    - {layer_name: top, nodes: ["node[01-08]"], count: %d, base: [{name: x, value: 1}]}
    - {layer_name: a, nodes: ["node[01-04]"], count: %d}
    - {layer_name: b, nodes: ["node[03-08]"], count: %d}
- resource: m3
  mode: MODE_3
  layers:
    - {layer_name: root, count: %d, base: [{name: x, value: 2}]}
    - {layer_name: r1, parent_name: root, count: %d}
    - {layer_name: r2, parent_name: root, count: %d}
    - {layer_name: a, parent_name: r1, nodes: ["node[01-03]"], count: %d, base: [{name: y, value: 1}]}
    - {layer_name: b, parent_name: r1, nodes: ["node[04-05]"], count: %d}
    - {layer_name: c, parent_name: r2, nodes: ["node[06-08]"], count: %d}
"""

counts = st.integers(0, 30)
ops = st.lists(
    st.tuples(
        st.sampled_from(["m1", "m2", "m3"]),
        st.integers(1, 6),  # amount
        st.integers(1, 3),  # nodes
        st.permutations(range(8)),
        st.integers(0, 40),  # which running job to end, if any
    ),
    max_size=30,
)


def _cap_ok(state: HresState) -> bool:
    for res in state.resources:
        for la, u in zip(res.structure.layers, res.used, strict=True):
            if la.count is not None and u > la.count - la.base_usage:
                return False
    return True


@settings(max_examples=120, deadline=None)
@given(st.lists(counts, min_size=12, max_size=12), st.integers(3, 40), ops)
def test_usage_never_exceeds_count_minus_base_and_release_restores_exactly(c, root, steps):
    text = RANDOM % (c[0], c[1], c[2], c[3] + 1, c[4], c[5], root, c[6] + 1, c[7], c[8] + 1, c[9], c[10])
    names = [f"node{i:02d}" for i in range(1, 9)]
    state = build_state(parse_resources(text, cluster_nodes=names), names)
    empty = state
    running: list[Selection] = []
    for name, amount, n, order, end in steps:
        if running and end < len(running):
            state = state.release(running.pop(end).charges)
            continue
        sel = select(state, [LicenseItem(name, amount)], list(order), n)
        if isinstance(sel, Refusal):
            assert sel.reason in {Reason.LICENSES, Reason.RESOURCES}
            continue
        assert len(sel.nodes) == n
        before = state
        state = state.charge(sel.charges)
        assert state.release(sel.charges) == before  # releasing returns exactly what was taken
        running.append(sel)
        assert _cap_ok(state)
        # Mode 3: every layer's charge is the sum over the job's nodes under it.
        (charge,) = sel.charges
        if name == "m3":
            st3 = state.resource("m3").structure
            for layer_name, amt in charge.layers:
                la = st3.layer(layer_name)
                assert amt == amount * (la.mask & mask_of(sel.nodes)).bit_count()
    # Ending the rest, in any order, leaves every layer as before the first start.
    for sel in running:
        state = state.release(sel.charges)
        assert _cap_ok(state)
    assert state == empty
