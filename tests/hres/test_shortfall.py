"""The Mode 3 pending detail names the layer that falls short with what the request itself
needs on it (issue #13 point 4), after Slurm's test_154_1 on hres.html's resources.yaml:
the datacenter holds 130000 - 28000 base, rack1 40000 - 5000, row1 60000 - 8000."""

from __future__ import annotations

from cluster.core.states import Reason
from hres.core.layers import Refusal, Selection, select
from hres.core.shortfall import mode3_shortfall
from slurmwords.licenses import LicenseItem

ALL = list(range(32))
POWER = [LicenseItem("power", 10000)]


def test_eleven_nodes_need_110000_on_the_datacenter_not_what_every_candidate_would(spec_state):
    refusal = select(spec_state, POWER, ALL, 11)
    assert isinstance(refusal, Refusal)
    assert (refusal.reason, refusal.layer) == (Reason.LICENSES, "datacenter")
    assert refusal.detail == "power: 110000 needed on layer datacenter, 102000 free"


def test_ten_nodes_spread_over_the_racks(spec_state):
    sel = select(spec_state, POWER, ALL, 10)
    assert isinstance(sel, Selection) and len(sel.nodes) == 10


def test_what_running_jobs_hold_is_in_the_free_figure_not_in_the_need(spec_state):
    one = select(spec_state, POWER, [16], 1)
    assert isinstance(one, Selection)
    busy = spec_state.charge(one.charges)
    refusal = select(busy, POWER, [i for i in ALL if i != 16], 10)
    assert isinstance(refusal, Refusal)
    assert refusal.detail == "power: 100000 needed on layer datacenter, 92000 free"


def test_a_lower_layer_is_named_when_the_candidates_are_all_under_it(spec_state):
    refusal = select(spec_state, POWER, list(range(16)), 8)
    assert isinstance(refusal, Refusal)
    assert refusal.detail == "power: 80000 needed on layer row1, 52000 free"


def test_required_nodes_that_overfill_their_rack(spec_state):
    refusal = select(spec_state, POWER, ALL, 4, required=[0, 1, 2, 3])
    assert isinstance(refusal, Refusal)
    assert refusal.detail == "power: 40000 needed on layer rack1, 35000 free"


def test_shortfall_none_when_only_nodes_are_lacking(spec_state):
    res = spec_state.resource("power")
    st = res.structure
    # Two nodes of rack2, asked for three: no layer is short, the nodes are.
    pool = (1 << 8) | (1 << 9)
    assert mode3_shortfall(st, res.avail(), 10000, 3, pool) is None
    # Nodes that may yet join a leaf make up for them.
    assert mode3_shortfall(st, res.avail(), 10000, 3, pool, spare=1) is None
    assert mode3_shortfall(st, res.avail(), 10000, 11, -1 & ((1 << 32) - 1)) == (
        st.index["datacenter"],
        110000,
    )
