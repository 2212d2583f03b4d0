"""Which Mode 3 layer cannot hold a request, and how much the request needs on it.

In Mode 3 (Slurm's hres.html, "Planning Modes") each of a job's nodes takes the amount on
its leaf and on every ancestor, so how many nodes a layer can take is its room divided by
the amount.  That bound and the nodes available give, from the leaves up, the most nodes
each subtree can hold at once (the layers nest, so taking nodes greedily reaches it).
When that is fewer than the request's count, the first layer from the root down whose
own bound is what falls short is the one to name, with what the request must put on it:
the nodes that cannot go anywhere else, times the amount.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hres.core.layers import Structure


def mode3_shortfall(
    st: Structure,
    room: Sequence[int],
    amount: int,
    count: int,
    pool: int,
    *,
    required: int = 0,
    spare: int = 0,
) -> tuple[int, int] | None:
    """(layer index, amount needed on it) for ``count`` nodes of ``pool`` (a bitset), which
    must include ``required``, each taking ``amount`` within ``room`` per layer; ``spare``
    nodes that may yet join any leaf.  None when they fit, or when only nodes are lacking."""
    if amount <= 0 or count <= 0:
        return None
    layers = st.layers
    # The required nodes alone: the topmost layer they overfill.
    if required:
        over = [
            (la.depth, i, (la.mask & required).bit_count() * amount)
            for i, la in enumerate(layers)
            if (la.mask & required).bit_count() * amount > room[i]
        ]
        if over:
            _, i, need = min(over)
            return i, need
    bound = [max(r, 0) // amount for r in room]
    fit = [0] * len(layers)
    for i in st.order:  # leaves first, up to the root
        la = layers[i]
        below = sum(fit[c] for c in la.children) if la.children else (la.mask & pool).bit_count() + spare
        fit[i] = min(bound[i], below)
    roots = [i for i, la in enumerate(layers) if la.parent is None]
    return _descend(st, fit, bound, roots, count, amount=amount)


def _descend(
    st: Structure, fit: list[int], bound: list[int], group: list[int], must: int, *, amount: int
) -> tuple[int, int] | None:
    """``must`` nodes to place under the layers of ``group`` (siblings), which hold at most
    ``sum(fit)``: each of them must take what the others cannot."""
    total = sum(fit[i] for i in group)
    if total >= must:
        return None
    ordered = sorted(group, key=lambda i: (st.layers[i].depth, i))
    for i in ordered:
        if fit[i] == bound[i]:
            return i, (must - (total - fit[i])) * amount
    for i in ordered:
        children = list(st.layers[i].children)
        if children:
            found = _descend(st, fit, bound, children, must - (total - fit[i]), amount=amount)
            if found is not None:
                return found
    return None
