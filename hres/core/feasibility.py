"""Whether a request for hierarchical resources could ever be served, as the layers are
configured: Slurm tests a job at submission against the layers' totals (count minus
BaseUsage, not what running jobs hold) and refuses one that no set of layers could ever
serve (Slurm's test_154_1: ``-N4 -w node[01-04] -L power:10000`` needs 40000 in a rack
that holds 40000 - 5000 base).

A disabled resource or layer counts as enabled (it may be enabled again, and the job pends
with HRESDisabled meanwhile), and so does a count lowered at runtime: the caller passes
both the layers in force and the configured ones, and the job is refused only when neither
could ever serve it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from ClusterShell.NodeSet import RESOLVER_NOGROUP, NodeSet

from hres.core.config import Mode
from hres.core.layers import INF, HresState, Layer, ResourceState
from hres.core.shortfall import mode3_shortfall
from slurmwords.licenses import LicenseItem


def _total(la: Layer) -> int:
    """What the layer could ever give jobs (its license Total); INF if infinite."""
    return INF if la.count is None else la.count - la.base_usage


def _holds(la: Layer) -> str:
    if la.count is None:
        return "which is infinite"
    if la.base_usage:
        return f"which holds {_total(la)} ({la.count} - {la.base_usage} base)"
    return f"which holds {la.count}"


def never_serves(
    states: Sequence[HresState],
    items: Sequence[LicenseItem],
    count: int,
    nodes: Collection[str],
    *,
    required: Collection[str] = (),
    spare: int = 0,
) -> str | None:
    """Why no state of ``states`` could ever serve ``items`` on ``count`` of ``nodes``
    (which include the ``required`` ones; ``spare`` more nodes may be created and join any
    layer), from the first state; None when one of them could."""
    first = None
    for state in states:
        why = _never(state, items, count, nodes, required=required, spare=spare)
        if why is None:
            return None
        first = first or why
    return first


def _never(
    state: HresState,
    items: Sequence[LicenseItem],
    count: int,
    nodes: Collection[str],
    *,
    required: Collection[str],
    spare: int,
) -> str | None:
    req = state.mask(required)
    pool = state.mask(nodes) | req
    mode3: tuple[LicenseItem, ResourceState] | None = None
    for it in items:
        res = state.get(it.name)
        if res is None or it.count <= 0:
            continue
        if res.mode == Mode.MODE_3:
            mode3 = (it, res)
            continue
        elig = _eligible(res, it.count)
        if req & ~elig:
            return _why_not(res, it.count, req & ~elig, state)
        if (pool & elig).bit_count() + spare < count:
            if pool & ~elig:
                return _why_not(res, it.count, pool & ~elig, state)
            return f"{res.name}: {(pool & elig).bit_count()} of the nodes can have {it.count}, {count} needed"
        pool &= elig
    if mode3 is None:
        return None
    it, res = mode3
    st = res.structure
    if req & ~st.present:
        return _why_not(res, it.count, req & ~st.present, state)
    totals = [_total(la) for la in st.layers]
    short = mode3_shortfall(st, totals, it.count, count, pool & st.present, required=req, spare=spare)
    if short is not None:
        i, need = short
        la = st.layers[i]
        return f"{res.name}: {need} needed on layer {la.name}, {_holds(la)}"
    if (pool & st.present).bit_count() + spare < count:
        held = (pool & st.present).bit_count()
        return f"{res.name}: {held} of the nodes are in a layer of {res.name}, {count} needed"
    return None


def _eligible(res: ResourceState, amount: int) -> int:
    """Modes 1 and 2: the nodes that a layer set could ever serve ``amount`` on."""
    st = res.structure
    if st.mode == Mode.MODE_1:
        m = 0
        for la in st.layers:
            if _total(la) >= amount:
                m |= la.mask
        return m
    bad = 0
    for la in st.layers:
        if _total(la) < amount:
            bad |= la.mask
    return st.present & ~bad


def _why_not(res: ResourceState, amount: int, nodes: int, state: HresState) -> str:
    st = res.structure
    over = [la for la in st.layers if la.mask & nodes]
    shown = str(NodeSet.fromlist(state.names_of(nodes), resolver=RESOLVER_NOGROUP))
    if not over:
        return f"{res.name}: no layer of {res.name} holds {shown}"
    if st.mode == Mode.MODE_1:
        best = max(over, key=_total)
        return (
            f"{res.name}: {amount} needed on a layer holding {shown}; "
            f"the most is layer {best.name}, {_holds(best)}"
        )
    short = [la for la in over if _total(la) < amount]
    if not short:
        return f"{res.name}: no layer of {res.name} holds {shown}"
    top = min(short, key=lambda la: (la.depth, -la.mask.bit_count()))
    return f"{res.name}: {amount} needed on layer {top.name}, {_holds(top)}"
