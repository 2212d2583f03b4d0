"""Hierarchical resources: layers, usage and the three planning modes (Slurm's hres.html), pure.

The state is immutable: :class:`HresState` holds, per resource, a :class:`Structure` (the
layers, their node bitsets and everything derived from them, rebuilt only when layers
change) and the usage (one integer per layer, plus the amounts reserved by reservations
and what those reservations' jobs use).  Charging a job, releasing it, a runtime update:
each returns a new state and shares what did not change.  Everything is in integers: a
node is its index in the cluster's node list and a set of nodes is a Python ``int`` used
as a bitset, so the hot path does a few big-integer operations per layer, not per node.

A job's hold on a resource is a :class:`Charge`: the amounts charged on named layers.
The job keeps and later releases exactly that, whatever happens to the layers meanwhile
(hres.html, "Runtime Updates").  :func:`format_licenses_alloc` prints charges as
``LicensesAlloc`` (``power(rack1*1000,row1*1000,datacenter*1000):1000``) and
:func:`parse_licenses_alloc` reads them back, so the ORM can store that one string.

The modes (hres.html, "Planning Modes"); "avail" of a layer is its count minus its BaseUsage,
minus what running jobs use and what reservations hold for others:

* Mode 1: enough on one layer that overlaps the allocation.  A node is eligible when an
  enabled layer holding it has enough; the job is charged on the most specific such layer
  (fewest nodes, then file order) that overlaps its nodes.  A zero layer never satisfies,
  an infinite one always does.
* Mode 2: enough on every layer that overlaps the allocation.  A node is eligible when
  every layer holding it has enough, so a zero (or disabled) layer blocks every node under
  it; an infinite layer is neutral.  The job is charged on every overlapping layer.
* Mode 3: per node, summed up the tree: ``k`` of the job's nodes under a leaf charge the
  leaf and each ancestor ``k * amount``; every layer's sum stays within its avail.

A disabled resource or layer serves no new job; a job that no enabled layer can serve pends
with ``HRESDisabled``, one that lacks the amount with ``Licenses`` and a detail naming the
blocking layer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from ClusterShell.NodeSet import RESOLVER_NOGROUP, NodeSet

from cluster.core.slurmconf import parse_nodeset
from cluster.core.states import Reason
from hres.core.config import NAME_RE, HresConfig, Mode, PluginConf, ResourceConf
from hres.core.shortfall import mode3_shortfall
from slurmwords.hostlists import split_top
from slurmwords.licenses import LicenseItem, parse_args

INF = 1 << 62  # the avail of an infinite layer: every request fits


# Past this many indices, a bitset is built as one string of binary digits: OR-ing each
# bit into a growing int copies it every time (a 5,000-node partition's pool took 0.9 ms
# a submission at 10,000 nodes, 0.15 ms so).
_DIGITS_FROM = 32
_MASKS_KEPT = 16  # masks of name tuples kept per state (HresState.mask)


def mask_of(indices: Iterable[int]) -> int:
    """A bitset of node indices."""
    idx = indices if isinstance(indices, list) else list(indices)
    if len(idx) < _DIGITS_FROM:
        m = 0
        for i in idx:
            m |= 1 << i
        return m
    top = max(idx)
    digits = bytearray(b"0") * (top + 1)
    for i in idx:
        digits[top - i] = 49  # ord("1"), the most significant digit first
    return int(digits, 2)


def indices_of(mask: int) -> list[int]:
    """The node indices of a bitset, ascending."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


# --------------------------------------------------------------------------- values


@dataclass(frozen=True, slots=True)
class Charge:
    """What one job holds of one resource: ``layers`` are (layer name, amount charged)."""

    resource: str
    amount: int  # as requested: per job (Mode 1, 2) or per node (Mode 3)
    layers: tuple[tuple[str, int], ...]
    args: tuple[tuple[str, str], ...] = ()  # plugin arguments, shown in LicensesAlloc
    reservation: str = ""  # the job's reservation, whose reserved amounts it used

    def on(self, layer: str) -> int:
        return sum(a for name, a in self.layers if name == layer)

    def __str__(self) -> str:
        inner = ",".join(f"{name}*{amount}" for name, amount in self.layers)
        text = f"{self.resource}({inner}):{self.amount}"
        if self.args:
            text += "[" + ",".join(f"{k}={v}" for k, v in self.args) + "]"
        return text


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a job cannot have a resource now: a Reason value, the layer to blame, a detail."""

    reason: str
    resource: str
    layer: str = ""
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Selection:
    """Nodes chosen for a job and the charges it takes on them."""

    nodes: tuple[int, ...]  # ascending
    charges: tuple[Charge, ...]


@dataclass(frozen=True, slots=True)
class Layer:
    name: str
    parent: int | None  # index of the parent layer in its resource
    children: tuple[int, ...]
    nodes: frozenset[str]  # effective: Mode 3 parents hold their children's union
    mask: int  # the same nodes as a bitset of indices
    count: int | None  # None = infinite
    base: tuple[tuple[str, int], ...]
    base_usage: int  # base values, plus in Mode 3 the children's BaseUsage
    disabled: bool
    depth: int  # 0 for a root / an unparented layer

    @property
    def cap(self) -> int:
        """What is left for jobs: the count minus BaseUsage (the license's Total)."""
        return INF if self.count is None else self.count - self.base_usage


@dataclass(frozen=True)
class Structure:
    """One resource's layers and what is derived from them (immutable; rebuilt on change)."""

    name: str
    mode: Mode
    layers: tuple[Layer, ...]
    disabled: bool = False  # DisableHRES
    plugin: PluginConf | None = None
    index: dict[str, int] = field(default_factory=dict, compare=False, repr=False)
    # Charge order: Mode 1/2 most specific first, Mode 3 leaves up to the root.
    order: tuple[int, ...] = field(default=(), compare=False, repr=False)
    present: int = field(default=0, compare=False, repr=False)  # nodes in any layer
    servable: int = field(default=0, compare=False, repr=False)  # nodes an enabled layer may serve
    leaf_of: dict[int, int] = field(default_factory=dict, compare=False, repr=False)  # Mode 3
    paths: tuple[tuple[int, ...], ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        layers = self.layers
        set_ = object.__setattr__
        set_(self, "index", {la.name: i for i, la in enumerate(layers)})
        paths = []
        for i, la in enumerate(layers):
            path = [i]
            up = la.parent
            while up is not None and up not in path:
                path.append(up)
                up = layers[up].parent
            paths.append(tuple(path))
        set_(self, "paths", tuple(paths))
        present = 0
        for la in layers:
            present |= la.mask
        set_(self, "present", present)
        if self.mode == Mode.MODE_3:
            order = sorted(range(len(layers)), key=lambda i: (-layers[i].depth, i))
            leaf_of = {}
            servable = 0
            for i, la in enumerate(layers):
                if la.children:
                    continue
                for n in indices_of(la.mask):
                    leaf_of[n] = i
                if not any(layers[j].disabled for j in paths[i]):
                    servable |= la.mask
            set_(self, "leaf_of", leaf_of)
        else:
            order = sorted(range(len(layers)), key=lambda i: (layers[i].mask.bit_count(), i))
            off = 0
            on = 0
            for la in layers:
                if la.disabled:
                    off |= la.mask
                elif not _empty_mode1(self.mode, la):
                    on |= la.mask
            servable = on if self.mode == Mode.MODE_1 else present & ~off
        set_(self, "order", tuple(order))
        set_(self, "servable", 0 if self.disabled else servable)

    def reserved_on(self, i: int) -> tuple[int, ...]:
        """The layers a reservation of layer ``i`` holds its amount on: the layer and the
        layers any job on its nodes is charged too, so the reservation's job finds the
        amount there even when others have filled them.  Mode 3: its ancestors.  Mode 2:
        every layer holding all of its nodes (``flat(low2):4`` also holds 4 on mid1 and
        top).  Mode 1 charges one layer only: that layer."""
        if self.mode == Mode.MODE_3:
            return self.paths[i]
        mask = self.layers[i].mask
        if self.mode == Mode.MODE_1 or not mask:
            return (i,)
        return (i, *(j for j, la in enumerate(self.layers) if j != i and la.mask & mask == mask))

    def layer(self, name: str) -> Layer:
        try:
            return self.layers[self.index[name]]
        except KeyError:
            raise ValueError(f"resource {self.name} has no layer {name}") from None


def _empty_mode1(mode: Mode, la: Layer) -> bool:
    """A Mode 1 layer with nothing for jobs never serves a request: it is "semantically
    equivalent to removing that layer definition" (Slurm's hres.html, "Mode 1")."""
    return mode == Mode.MODE_1 and la.count is not None and la.cap <= 0


def _layers_from(
    mode: Mode,
    specs: Sequence[tuple[str, str | None, frozenset[str], int | None, tuple[tuple[str, int], ...], bool]],
    node_index: Mapping[str, int],
) -> tuple[Layer, ...]:
    """Layers from (name, parent, nodes, count, base, disabled); Mode 3 parents get the
    union of their children's nodes and BaseUsage propagates up."""
    index = {s[0]: i for i, s in enumerate(specs)}
    parent = [index.get(s[1]) if s[1] is not None else None for s in specs]
    children: list[list[int]] = [[] for _ in specs]
    for i, p in enumerate(parent):
        if p is not None:
            children[p].append(i)
    depth = []
    for i in range(len(specs)):
        d, up, seen = 0, parent[i], {i}
        while up is not None and up not in seen:
            seen.add(up)
            d += 1
            up = parent[up]
        depth.append(d)
    nodes = [set(s[2]) for s in specs]
    usage = [sum(v for _, v in s[4]) for s in specs]
    if mode == Mode.MODE_3:
        for i in range(len(specs)):
            if children[i]:
                nodes[i] = set()
        for i in sorted(range(len(specs)), key=lambda j: -depth[j]):
            if parent[i] is not None:
                nodes[parent[i]] |= nodes[i]
        own = list(usage)
        for i in range(len(specs)):
            up, seen = parent[i], {i}
            while up is not None and up not in seen:
                seen.add(up)
                usage[up] += own[i]
                up = parent[up]
    out = []
    for i, (name, _, _, count, base, disabled) in enumerate(specs):
        ns = frozenset(nodes[i])
        mask = mask_of(node_index[n] for n in ns if n in node_index)
        out.append(
            Layer(name, parent[i], tuple(children[i]), ns, mask, count, base, usage[i], disabled, depth[i])
        )
    return tuple(out)


def _rebuild(structure: Structure, node_index: Mapping[str, int], **changes: object) -> Structure:
    """The structure again with ``changes`` to one layer (``layer=name`` + fields) applied."""
    layers = structure.layers
    specs = []
    target = changes.pop("layer", None)
    for la in layers:
        parent = layers[la.parent].name if la.parent is not None else None
        spec = {"nodes": la.nodes, "count": la.count, "base": la.base, "disabled": la.disabled}
        if la.name == target:
            spec.update(changes)
        specs.append((la.name, parent, spec["nodes"], spec["count"], spec["base"], spec["disabled"]))
    return dataclasses.replace(structure, layers=_layers_from(structure.mode, specs, node_index))


def structure_from(conf: ResourceConf, node_index: Mapping[str, int]) -> Structure:
    specs = [(la.name, la.parent, la.nodes, la.count, la.base, la.disabled) for la in conf.layers]
    return Structure(
        conf.name, conf.mode, _layers_from(conf.mode, specs, node_index), conf.disabled, conf.plugin
    )


# --------------------------------------------------------------------------- one resource


@dataclass(frozen=True)
class ResourceState:
    """A resource's structure and usage.  Usage tuples are parallel to the layers."""

    structure: Structure
    used: tuple[int, ...]
    # Reservation name -> amount reserved per layer (also on the layers above the named
    # one, Structure.reserved_on), and what the jobs of that reservation use of it.
    reserved: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    resv_used: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    _cache: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def name(self) -> str:
        return self.structure.name

    @property
    def mode(self) -> Mode:
        return self.structure.mode

    def held_for_others(self, reservation: str = "") -> list[int]:
        """Per layer: what reservations other than ``reservation`` still hold back."""
        key = ("held", reservation)
        held = self._cache.get(key)
        if held is None:
            held = [0] * len(self.used)
            for name, amounts in self.reserved.items():
                if name == reservation:
                    continue
                taken = self.resv_used.get(name)
                for i, a in enumerate(amounts):
                    left = a - (taken[i] if taken else 0)
                    if left > 0:
                        held[i] += left
            self._cache[key] = held
        return held

    def avail(self, reservation: str = "") -> list[int]:
        """Per layer: what a job (of ``reservation``, if any) may still take; INF if infinite."""
        key = ("avail", reservation)
        out = self._cache.get(key)
        if out is None:
            held = self.held_for_others(reservation)
            out = [
                INF if la.count is None else la.cap - u - h
                for la, u, h in zip(self.structure.layers, self.used, held, strict=True)
            ]
            self._cache[key] = out
        return out

    def _ok(self, amount: int, reservation: str) -> list[bool]:
        """Per layer: enabled and has ``amount`` (Mode 3: so has every ancestor)."""
        st = self.structure
        avail = self.avail(reservation)
        ok = [
            not la.disabled and not st.disabled and a >= amount
            for la, a in zip(st.layers, avail, strict=True)
        ]
        if st.mode == Mode.MODE_3:
            # Root first (the reverse of the charge order): a layer is ok if its parent is.
            layers = st.layers
            for i in reversed(st.order):
                p = layers[i].parent
                if p is not None and not ok[p]:
                    ok[i] = False
        return ok

    def eligible(self, amount: int, reservation: str = "") -> int:
        """The nodes that could take one share of a request for ``amount`` now (a bitset).

        Mode 1 and 2: any allocation inside this set can be charged.  Mode 3: each node
        alone could; several nodes under one layer must also fit together (see
        :func:`select`).
        """
        key = ("elig", amount, reservation)
        m = self._cache.get(key)
        if m is not None:
            return m
        st = self.structure
        ok = self._ok(amount, reservation)
        m = 0
        if st.mode == Mode.MODE_1:
            for la, good in zip(st.layers, ok, strict=True):
                if good:
                    m |= la.mask
        elif st.mode == Mode.MODE_2:
            bad = 0
            for la, good in zip(st.layers, ok, strict=True):
                if not good:
                    bad |= la.mask
            m = st.present & ~bad
        else:
            for la, good in zip(st.layers, ok, strict=True):
                if good and not la.children:
                    m |= la.mask
        self._cache[key] = m
        return m

    def plan(
        self, amount: int, alloc: int, *, reservation: str = "", args: tuple[tuple[str, str], ...] = ()
    ) -> Charge | Refusal:
        """The charge for ``amount`` on the allocation ``alloc`` (a bitset), or why not."""
        st = self.structure
        layers = st.layers
        if st.mode == Mode.MODE_3:
            avail = self.avail(reservation)
            if alloc & ~st.servable:
                return self._explain(amount, alloc & ~st.servable, reservation, alloc.bit_count())
            extra = [0] * len(layers)
            for i, la in enumerate(layers):
                if not la.children and la.mask & alloc:
                    k = (la.mask & alloc).bit_count() * amount
                    for j in st.paths[i]:
                        extra[j] += k
            over = [i for i in st.order if extra[i] > avail[i]]
            if over:
                top = min(over, key=lambda i: (layers[i].depth, i))
                free = max(avail[top], 0)
                return Refusal(
                    Reason.LICENSES,
                    st.name,
                    layers[top].name,
                    f"{st.name}: {extra[top]} needed on layer {layers[top].name}, {free} free",
                )
            taken = tuple((layers[i].name, extra[i]) for i in st.order if extra[i])
            return Charge(st.name, amount, taken, args, reservation)
        elig = self.eligible(amount, reservation)
        if not alloc or alloc & ~elig:
            return self._explain(amount, (alloc & ~elig) or alloc, reservation, alloc.bit_count())
        ok = self._ok(amount, reservation)
        if st.mode == Mode.MODE_1:
            for i in st.order:
                if ok[i] and layers[i].mask & alloc:
                    return Charge(st.name, amount, ((layers[i].name, amount),), args, reservation)
            raise AssertionError("an eligible allocation overlaps a layer with enough")  # pragma: no cover
        taken = tuple((layers[i].name, amount) for i in st.order if layers[i].mask & alloc)
        return Charge(st.name, amount, taken, args, reservation)

    def _explain(self, amount: int, within: int, reservation: str, count: int = 1) -> Refusal:
        """Why ``count`` nodes of ``within`` cannot take ``amount``: the layer to blame."""
        st = self.structure
        layers = st.layers
        name = st.name
        if st.disabled:
            return Refusal(Reason.HRES_DISABLED, name, "", f"{name}: DisableHRES=true")
        if (st.servable & within).bit_count() < count:
            off = [la for la in layers if la.disabled and la.mask & within]
            # Mode 1 nodes kept out only by empty layers are short of the resource, not
            # disabled: the empty layer is blamed below, with Licenses.
            if (st.present & within).bit_count() >= count and (off or st.mode != Mode.MODE_1):
                top = min(off, key=lambda la: (la.depth, -la.mask.bit_count())) if off else None
                where = f"layer {top.name} is disabled" if top else "no enabled layer serves these nodes"
                return Refusal(Reason.HRES_DISABLED, name, top.name if top else "", f"{name}: {where}")
            if (st.present & within).bit_count() < count:
                return Refusal(Reason.LICENSES, name, "", f"{name}: no layer of {name} holds the nodes")
        avail = self.avail(reservation)
        over = [
            i
            for i, la in enumerate(layers)
            if la.mask & within & st.servable
            and not la.disabled
            and not _empty_mode1(st.mode, la)
            and avail[i] < amount
        ]
        if not over:
            over = [i for i, la in enumerate(layers) if la.mask & within and avail[i] < amount]
        if not over:
            return Refusal(Reason.LICENSES, name, "", f"{name}: {amount} requested")
        if st.mode == Mode.MODE_1:
            top = max(over, key=lambda i: (avail[i], -i))
        else:
            top = min(over, key=lambda i: (layers[i].depth, -layers[i].mask.bit_count(), avail[i], i))
        la = layers[top]
        return Refusal(
            Reason.LICENSES,
            name,
            la.name,
            f"{name}: {amount} requested, layer {la.name} has {max(avail[top], 0)} free",
        )

    def explain(self, amount: int, within: int, count: int = 1, reservation: str = "") -> Refusal:
        return self._explain(amount, within, reservation, count)

    def _added(self, charges: Iterable[Charge], sign: int) -> ResourceState:
        """Usage with these charges of this resource added (``sign`` 1) or taken (-1) one
        after the other, each layer's use never below 0; in lists written in place, made
        into one state at the end (a pass rebuilds usage from every holding job's charges,
        thousands at 10,000 nodes: a new state and a copy of every layer's use per charge
        was most of that)."""
        idx = self.structure.index
        used = list(self.used)
        mine: dict[str, list[int]] = {}
        for charge in charges:
            hits = [(idx[name], a) for name, a in charge.layers if name in idx]
            for i, a in hits:
                used[i] = max(0, used[i] + sign * a)
            if charge.reservation and charge.reservation in self.reserved:
                theirs = mine.get(charge.reservation)
                if theirs is None:
                    theirs = mine[charge.reservation] = list(
                        self.resv_used.get(charge.reservation, (0,) * len(used))
                    )
                for i, a in hits:
                    theirs[i] = max(0, theirs[i] + sign * a)
        resv_used = self.resv_used
        if mine:
            resv_used = {**resv_used, **{name: tuple(amounts) for name, amounts in mine.items()}}
        return ResourceState(self.structure, tuple(used), self.reserved, resv_used)


# --------------------------------------------------------------------------- the whole state


@dataclass(frozen=True)
class HresState:
    """Every resource's structure and usage, over the cluster's node list (index → name)."""

    resources: tuple[ResourceState, ...]
    nodes: tuple[str, ...]
    node_index: dict[str, int] = field(default_factory=dict, compare=False, repr=False)
    _by_name: dict[str, int] = field(default_factory=dict, compare=False, repr=False)
    # id of a tuple of names -> (that tuple, its mask): a submission's pool of nodes is the
    # same kept tuple for every job of its shape (cluster.services.jobs._capable), and
    # each of its 5,000 names was looked up again at every submission.  Not copied by
    # dataclasses.replace, whose state may index other nodes.
    _masks: dict[int, tuple[tuple[str, ...], int]] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )

    def __post_init__(self) -> None:
        if not self.node_index:
            object.__setattr__(self, "node_index", {n: i for i, n in enumerate(self.nodes) if n})
        object.__setattr__(self, "_by_name", {r.name: i for i, r in enumerate(self.resources)})

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.resources)

    def modes(self) -> dict[str, Mode]:
        return {r.name: r.mode for r in self.resources}

    def get(self, name: str) -> ResourceState | None:
        i = self._by_name.get(name)
        return None if i is None else self.resources[i]

    def resource(self, name: str) -> ResourceState:
        res = self.get(name)
        if res is None:
            raise ValueError(f"no hierarchical resource {name}")
        return res

    def _with(self, changed: Mapping[str, ResourceState]) -> HresState:
        if not changed:
            return self
        res = tuple(changed.get(r.name, r) for r in self.resources)
        return HresState(res, self.nodes, self.node_index)

    def _apply(self, charges: Iterable[Charge], sign: int) -> HresState:
        by_resource: dict[str, list[Charge]] = {}
        for c in charges:
            if self.get(c.resource) is not None:  # a resource removed by a reconfigure: nothing to do
                by_resource.setdefault(c.resource, []).append(c)
        return self._with({name: self.resource(name)._added(cs, sign) for name, cs in by_resource.items()})

    def charge(self, charges: Iterable[Charge]) -> HresState:
        """Usage plus these charges (a job starts)."""
        return self._apply(charges, 1)

    def release(self, charges: Iterable[Charge]) -> HresState:
        """Usage minus exactly these charges (a job ends); layers gone since are skipped."""
        return self._apply(charges, -1)

    def with_usage(self, charges: Iterable[Charge]) -> HresState:
        """The same layers and reservations, with usage rebuilt from these charges alone."""
        zero = {
            r.name: ResourceState(r.structure, (0,) * len(r.used), r.reserved, {}) for r in self.resources
        }
        return self._with(zero).charge(charges)

    def reindex(self, nodes: Sequence[str]) -> HresState:
        """The same state over another node list (nodes added or removed in the cluster)."""
        nodes = tuple(nodes)
        if nodes == self.nodes:
            return self
        index = {n: i for i, n in enumerate(nodes) if n}
        res = tuple(
            ResourceState(_rebuild(r.structure, index), r.used, r.reserved, r.resv_used)
            for r in self.resources
        )
        return HresState(res, nodes, index)

    def mask(self, names: Iterable[str]) -> int:
        kept = type(names) is tuple and len(names) >= _DIGITS_FROM
        if kept:
            found = self._masks.get(id(names))
            if found is not None and found[0] is names:
                return found[1]
        indices = map(self.node_index.get, names)
        mask = mask_of([i for i in indices if i is not None])
        if kept:
            if len(self._masks) >= _MASKS_KEPT:
                self._masks.clear()
            self._masks[id(names)] = (names, mask)  # type: ignore[assignment]
        return mask

    def names_of(self, mask: int) -> list[str]:
        return [self.nodes[i] for i in indices_of(mask)]

    def with_reservations(self, reservations: Mapping[str, Iterable[LicenseItem]]) -> HresState:
        """Replace the reserved amounts: reservation name → its licenses (plain ones are
        ignored, an HRES item names its layer, as :func:`parse_reservation_licenses` gives).
        Only active reservations should be passed.  Raises ValueError on unknown names."""
        per: dict[str, dict[str, list[int]]] = {r.name: {} for r in self.resources}
        for resv, items in reservations.items():
            for it in items:
                res = self.get(it.name)
                if res is None:
                    continue
                st = res.structure
                if it.layer is None:
                    raise ValueError(f"reservation {resv}: name the layer of {it.name}, as {it.name}(LAYER)")
                i = st.index.get(it.layer)
                if i is None:
                    raise ValueError(f"reservation {resv}: resource {it.name} has no layer {it.layer}")
                amounts = per[it.name].setdefault(resv, [0] * len(st.layers))
                for j in st.reserved_on(i):
                    amounts[j] += it.count
        changed = {}
        for r in self.resources:
            reserved = {k: tuple(v) for k, v in per[r.name].items()}
            resv_used = {k: v for k, v in r.resv_used.items() if k in reserved}
            changed[r.name] = ResourceState(r.structure, r.used, reserved, resv_used)
        return self._with(changed)


def build_state(
    config: HresConfig,
    nodes: Sequence[str],
    *,
    charges: Iterable[Charge] = (),
    reservations: Mapping[str, Iterable[LicenseItem]] | None = None,
) -> HresState:
    """The state for ``config`` over the cluster's node list (index → name), with the
    usage of running jobs' ``charges`` and the layer amounts of active ``reservations``."""
    nodes = tuple(nodes)
    index = {n: i for i, n in enumerate(nodes) if n}
    res = tuple(
        ResourceState(structure_from(conf, index), (0,) * len(conf.layers)) for conf in config.resources
    )
    state = HresState(res, nodes, index)
    if reservations:
        state = state.with_reservations(reservations)
    return state.charge(charges)


def check_reservation(state: HresState, name: str, items: Iterable[LicenseItem]) -> None:
    """Refuse (ValueError) a reservation whose HRES amounts are not available now."""
    probe = state.with_reservations({name: items})
    for it in items:
        res = probe.get(it.name)
        if res is None or it.layer is None:
            continue
        st = res.structure
        before = state.resource(it.name).avail(name)
        held = probe.resource(it.name).reserved[name]
        for j in st.reserved_on(st.index[it.layer]):
            if held[j] > before[j]:
                raise ValueError(
                    f"reservation {name}: {it.name}({it.layer}):{it.count} needs {held[j]} on layer "
                    f"{st.layers[j].name}, {max(before[j], 0)} available"
                )


# --------------------------------------------------------------------------- scheduling


def gate(
    state: HresState, items: Sequence[LicenseItem], count: int, within: int, *, reservation: str = ""
) -> Refusal | None:
    """Can ``count`` nodes of ``within`` (a bitset, e.g. the partition) serve the request at
    all, ignoring what else is busy?  The cheap per-job check before any node search."""
    for it in items:
        res = state.get(it.name)
        if res is None:
            return Refusal(Reason.LICENSES, it.name, "", f"{it.name}: not a hierarchical resource")
        elig = res.eligible(it.count, reservation) & within
        if elig.bit_count() < count:
            return res.explain(it.count, within, count, reservation)
    return None


def select(
    state: HresState,
    items: Sequence[LicenseItem],
    candidates: Sequence[int],
    count: int,
    *,
    required: Sequence[int] = (),
    within: int | None = None,
    reservation: str = "",
) -> Selection | Refusal:
    """Choose ``count`` of ``candidates`` (preference order; free nodes) for the request
    and compute its charges.  ``required`` nodes are always taken.

    A ``Refusal`` with reason ``Resources`` means enough nodes of ``within`` (default: the
    candidates) could serve the resources but too few of them are free now.
    """
    resources = []
    for it in items:
        res = state.get(it.name)
        if res is None:
            return Refusal(Reason.LICENSES, it.name, "", f"{it.name}: not a hierarchical resource")
        resources.append((it, res))
    if not resources:
        chosen = list(required) + [i for i in candidates if i not in set(required)][: count - len(required)]
        return Selection(tuple(sorted(chosen)), ())
    m = -1  # every node
    mode3: tuple[LicenseItem, ResourceState] | None = None
    for it, res in resources:
        m &= res.eligible(it.count, reservation)
        if res.mode == Mode.MODE_3:
            mode3 = (it, res)
    req_mask = mask_of(required)
    if req_mask & ~m:
        for it, res in resources:
            bad = req_mask & ~res.eligible(it.count, reservation)
            if bad:
                return res.explain(it.count, bad, bad.bit_count(), reservation)
    chosen: list[int] = list(required)
    if mode3 is None:
        for i in candidates:
            if len(chosen) >= count:
                break
            if m >> i & 1 and not req_mask >> i & 1:
                chosen.append(i)
    else:
        it, res = mode3
        st = res.structure
        room = list(res.avail(reservation))
        amount = it.count
        leaf_of = st.leaf_of
        paths = st.paths
        sum_short = False

        def take(i: int) -> bool:
            path = paths[leaf_of[i]]
            for j in path:
                if room[j] < amount:
                    return False
            for j in path:
                room[j] -= amount
            return True

        for i in required:
            if not take(i):
                verdict = res.plan(amount, req_mask, reservation=reservation)
                if isinstance(verdict, Refusal):
                    return verdict
                return Refusal(Reason.LICENSES, res.name, "", f"{res.name}: the required nodes do not fit")
        for i in candidates:
            if len(chosen) >= count:
                break
            if m >> i & 1 and not req_mask >> i & 1:
                if take(i):
                    chosen.append(i)
                else:
                    sum_short = True
        if len(chosen) < count and sum_short:
            # The nodes are there but the layers cannot hold them together: the layer that
            # falls short, with what this request needs on it (not what all the candidates
            # together would).
            avail = res.avail(reservation)
            pool = mask_of(i for i in candidates if m >> i & 1) | req_mask
            short = mode3_shortfall(st, avail, amount, count, pool, required=req_mask)
            if short is not None:
                top, need = short
                name = st.layers[top].name
                return Refusal(
                    Reason.LICENSES,
                    res.name,
                    name,
                    f"{res.name}: {need} needed on layer {name}, {max(avail[top], 0)} free",
                )
    if len(chosen) < count:
        pool = mask_of(candidates) if within is None else within
        for it, res in resources:
            elig = res.eligible(it.count, reservation) & pool
            if elig.bit_count() < count:
                return res.explain(it.count, pool, count, reservation)
        return Refusal(Reason.RESOURCES, "", "", "")
    alloc = mask_of(chosen)
    charges = []
    for it, res in resources:
        c = res.plan(it.count, alloc, reservation=reservation, args=it.args)
        if isinstance(c, Refusal):
            return c
        charges.append(c)
    return Selection(tuple(sorted(chosen)), tuple(charges))


def plan(
    state: HresState, items: Sequence[LicenseItem], nodes: Iterable[int], *, reservation: str = ""
) -> tuple[Charge, ...] | Refusal:
    """The charges for the request on exactly these nodes, or why not."""
    alloc = mask_of(nodes)
    out = []
    for it in items:
        res = state.get(it.name)
        if res is None:
            return Refusal(Reason.LICENSES, it.name, "", f"{it.name}: not a hierarchical resource")
        c = res.plan(it.count, alloc, reservation=reservation, args=it.args)
        if isinstance(c, Refusal):
            return c
        out.append(c)
    return tuple(out)


# --------------------------------------------------------------------------- Mode 3 preemption


@dataclass(frozen=True, slots=True)
class PreemptCandidate:
    """A running job the caller allows to be preempted (priority, QOS, PreemptMode
    CANCEL/REQUEUE already checked), with what it holds."""

    job_id: int
    charges: tuple[Charge, ...]


def mode3_preemption(
    state: HresState,
    item: LicenseItem,
    nodes: Iterable[int],
    candidates: Sequence[PreemptCandidate],
    *,
    reservation: str = "",
) -> tuple[int, ...] | None:
    """Which running jobs to preempt so that ``item`` (a Mode 3 request) fits on ``nodes``.

    ``candidates`` come in the order the caller prefers to preempt them (lowest priority
    first).  A job counts for every layer it holds, so one under a shared ancestor is a
    candidate even without a node in common (Slurm's hres.html, "Mode 3, Preemption").
    Returns ``()`` when the request already fits, None when even preempting every candidate
    is not enough (or a layer is disabled), else the job ids, as few as the greedy pass and
    a pruning pass find.
    """
    res = state.resource(item.name)
    st = res.structure
    if st.mode != Mode.MODE_3:
        raise ValueError(f"{item.name} is a Mode {int(st.mode)} resource: preemption only reclaims Mode 3")
    alloc = mask_of(nodes)
    if not alloc or alloc & ~st.servable:
        return None
    verdict = res.plan(item.count, alloc, reservation=reservation)
    if isinstance(verdict, Charge):
        return ()
    avail = res.avail(reservation)
    need = [0] * len(st.layers)
    for i, la in enumerate(st.layers):
        if not la.children and la.mask & alloc:
            k = (la.mask & alloc).bit_count() * item.count
            for j in st.paths[i]:
                need[j] += k
    short = {j: need[j] - avail[j] for j in range(len(need)) if need[j] > avail[j]}
    frees: list[tuple[int, dict[int, int]]] = []
    for cand in candidates:
        freed: dict[int, int] = {}
        for c in cand.charges:
            if c.resource != item.name:
                continue
            for name, amount in c.layers:
                j = st.index.get(name)
                if j is not None and j in short:
                    freed[j] = freed.get(j, 0) + amount
        if freed:
            frees.append((cand.job_id, freed))
    left = dict(short)
    taken: list[tuple[int, dict[int, int]]] = []
    for job_id, freed in frees:
        if all(v <= 0 for v in left.values()):
            break
        if any(left[j] > 0 for j in freed):
            taken.append((job_id, freed))
            for j, a in freed.items():
                left[j] -= a
    if any(v > 0 for v in left.values()):
        return None
    # Prune: the greedy pass may have taken a job a later, larger one made unnecessary.
    for entry in list(reversed(taken)):
        _, freed = entry
        if all(left[j] + freed.get(j, 0) <= 0 for j in left):
            taken.remove(entry)
            for j, a in freed.items():
                left[j] += a
    return tuple(job_id for job_id, _ in taken)


# --------------------------------------------------------------------------- runtime updates

UNSET: object = object()


def _parse_count(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"Count must be an integer or -1 (infinite), not {value!r}")
    text = str(value).strip()
    if text.upper() in {"-1", "INFINITE", "UNLIMITED"}:
        return None
    if not text.isdigit():
        raise ValueError(f"Count must be a non-negative integer or -1 (infinite), not {value!r}")
    return int(text)


def parse_base(text: str) -> tuple[tuple[str, int], ...]:
    """``Base=storage:5000,network:100``; empty clears."""
    out: list[tuple[str, int]] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, colon, value = part.partition(":")
        if not colon or not NAME_RE.match(name) or not value.strip().isdigit():
            raise ValueError(f"Base entry {part!r}: expected name:value with a non-negative integer value")
        if any(n == name for n, _ in out):
            raise ValueError(f"Base entry {name} given twice")
        out.append((name, int(value)))
    return tuple(out)


def update_layer(
    state: HresState,
    resource: str,
    layer: str,
    *,
    nodes: str | None = None,
    count: object = UNSET,
    base: str | Sequence[tuple[str, int]] | None = None,
    disable_layer: bool | None = None,
) -> HresState:
    """``scontrol update HRESName=R LayerName=L ...`` as a pure function (Slurm's
    hres.html, "Runtime Updates"): ``nodes`` replaces, ``+list`` adds, ``-list`` removes
    (Mode 3: leaves only); ``count`` is absolute (-1: infinite) and not below the layer's
    BaseUsage; ``base`` replaces the base list, ``""`` or ``()`` clears it.  Node and base
    changes propagate to the ancestors.  Usage is untouched: running jobs keep what they
    were charged, and a count below the usage only makes new jobs wait.  Raises
    ValueError, state unchanged.
    """
    res = state.resource(resource)
    st = res.structure
    current = st.layer(layer)
    changes: dict[str, object] = {"layer": layer}
    if nodes is not None:
        if st.mode == Mode.MODE_3 and current.children:
            raise ValueError(
                f"resource {resource}: Nodes may only be changed on leaf layers in Mode 3, not {layer}"
            )
        text = nodes.strip()
        op = text[:1] if text[:1] in "+-" else ""
        expr = text[1:] if op else text
        try:
            listed = frozenset(parse_nodeset(expr)) if expr.strip() else frozenset()
        except ValueError as exc:
            raise ValueError(f"Nodes={nodes}: {exc}") from None
        unknown = sorted(n for n in listed if n not in state.node_index)
        if unknown:
            raise ValueError(
                f"Nodes={nodes}: {NodeSet.fromlist(unknown, resolver=RESOLVER_NOGROUP)} not in the cluster"
            )
        new = current.nodes | listed if op == "+" else current.nodes - listed if op == "-" else listed
        if st.mode == Mode.MODE_3:
            for la in st.layers:
                if la.name != layer and not la.children and la.nodes & new:
                    clash = NodeSet.fromlist(sorted(la.nodes & new), resolver=RESOLVER_NOGROUP)
                    raise ValueError(f"resource {resource}: {clash} already in leaf layer {la.name}")
        changes["nodes"] = new
    if count is not UNSET:
        changes["count"] = _parse_count(count)
    if base is not None:
        changes["base"] = parse_base(base) if isinstance(base, str) else tuple(base)
        for name, value in changes["base"]:  # type: ignore[attr-defined]
            if not NAME_RE.match(name) or isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(
                    f"Base entry {name}:{value}: expected name:value with a non-negative integer"
                )
    if disable_layer is not None:
        changes["disabled"] = bool(disable_layer)
    new_st = _rebuild(st, state.node_index, **changes)
    for la in new_st.layers:
        if la.count is not None and la.count < la.base_usage:
            raise ValueError(
                f"resource {resource}, layer {la.name}: Count {la.count} would be below its "
                f"BaseUsage {la.base_usage}"
            )
    return state._with({resource: ResourceState(new_st, res.used, res.reserved, res.resv_used)})


def update_resource(state: HresState, resource: str, *, disable_hres: bool) -> HresState:
    """``scontrol update HRESName=R DisableHRES=true|false``."""
    res = state.resource(resource)
    st = dataclasses.replace(res.structure, disabled=bool(disable_hres))
    return state._with({resource: ResourceState(st, res.used, res.reserved, res.resv_used)})


def parse_bool(value: str) -> bool:
    """DisableHRES/DisableLayer accept only ``true`` and ``false``."""
    text = value.strip().lower()
    if text not in {"true", "false"}:
        raise ValueError(f"expected true or false, not {value!r}")
    return text == "true"


# --------------------------------------------------------------------------- views and formats


@dataclass(frozen=True, slots=True)
class LicenseView:
    """One entry of ``scontrol show license`` for a layer (hres.html, "Viewing a Resource")."""

    license_name: str
    total: int | None  # None: infinite
    used: int
    free: int | None
    reserved: int
    remote: bool
    layer_name: str
    parent_name: str | None
    nodes: str
    mode: int
    disable_hres: bool
    disable_layer: bool
    conf_total: int | None
    base_usage: int
    base: tuple[tuple[str, int], ...]

    def __str__(self) -> str:
        return format_license_view(self)


@lru_cache(maxsize=4096)
def _folded(nodes: frozenset[str]) -> str:
    # A layer's nodes as a hostlist: folding is most of a view's cost, and a layer's nodes
    # change only with the configuration (the report rollup and the console ask often).
    return str(NodeSet.fromlist(sorted(nodes), resolver=RESOLVER_NOGROUP)) if nodes else ""


def license_view(state: HresState) -> tuple[LicenseView, ...]:
    out = []
    for r in state.resources:
        st = r.structure
        held = r.held_for_others()
        for i, la in enumerate(st.layers):
            reserved = sum(v[i] for v in r.reserved.values())
            total = None if la.count is None else la.cap
            free = None if total is None else max(0, total - r.used[i] - held[i])
            out.append(
                LicenseView(
                    license_name=st.name,
                    total=total,
                    used=r.used[i],
                    free=free,
                    reserved=reserved,
                    remote=False,
                    layer_name=la.name,
                    parent_name=st.layers[la.parent].name if la.parent is not None else None,
                    nodes=_folded(la.nodes),
                    mode=int(st.mode),
                    disable_hres=st.disabled,
                    disable_layer=la.disabled,
                    conf_total=la.count,
                    base_usage=la.base_usage,
                    base=la.base,
                )
            )
    return tuple(out)


def _num(value: int | None) -> str:
    return "INFINITE" if value is None else str(value)


def format_license_view(v: LicenseView) -> str:
    """The four lines ``scontrol show license`` prints for a layer."""
    parent = f" ParentName={v.parent_name}" if v.parent_name else ""
    base = ",".join(f"{n}:{a}" for n, a in v.base) if v.base else "(null)"
    return (
        f"LicenseName={v.license_name}\n"
        f"Total={_num(v.total)} Used={v.used} Free={_num(v.free)} Reserved={v.reserved} "
        f"Remote={'yes' if v.remote else 'no'}\n"
        f"LayerName={v.layer_name}{parent} Nodes={v.nodes or '(null)'} Mode={v.mode} "
        f"DisableHRES={str(v.disable_hres).lower()} DisableLayer={str(v.disable_layer).lower()} "
        f"ConfTotal={_num(v.conf_total)} BaseUsage={v.base_usage}\n"
        f"Base={base}"
    )


def format_licenses_alloc(charges: Iterable[Charge], plain: Iterable[tuple[str, int]] = ()) -> str:
    """``LicensesAlloc``: ``power(rack1*1000,row1*1000,datacenter*1000):1000``, plain
    licenses as ``name:count``."""
    parts = [str(c) for c in charges] + [f"{n}:{c}" for n, c in plain]
    return ",".join(parts)


def _split_alloc(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for pos, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:pos])
            start = pos + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def parse_licenses_alloc(text: str, *, reservation: str = "") -> tuple[Charge, ...]:
    """The HRES charges back from a ``LicensesAlloc`` string (plain licenses skipped)."""
    out = []
    for part in _split_alloc(text):
        if "(" not in part:
            continue
        name, _, rest = part.partition("(")
        inner, close, tail = rest.partition(")")
        if not close or not tail.startswith(":"):
            raise ValueError(f"bad LicensesAlloc entry {part!r}")
        amount_text, _, args_text = tail[1:].partition("[")
        if not amount_text.isdigit() or (args_text and not args_text.endswith("]")):
            raise ValueError(f"bad LicensesAlloc entry {part!r}")
        layers = []
        for piece in split_top(inner, ","):
            lname, star, value = piece.partition("*")
            if not star or not lname or not value.isdigit():
                raise ValueError(f"bad LicensesAlloc entry {part!r}: layer {piece!r}")
            layers.append((lname, int(value)))
        args = parse_args(args_text[:-1], part) if args_text else ()
        out.append(Charge(name, int(amount_text), tuple(layers), args, reservation))
    return tuple(out)


__all__ = [
    "INF",
    "UNSET",
    "Charge",
    "HresState",
    "Layer",
    "LicenseView",
    "PreemptCandidate",
    "Refusal",
    "ResourceState",
    "Selection",
    "Structure",
    "build_state",
    "check_reservation",
    "format_license_view",
    "format_licenses_alloc",
    "gate",
    "indices_of",
    "license_view",
    "mask_of",
    "mode3_preemption",
    "parse_base",
    "parse_bool",
    "parse_licenses_alloc",
    "plan",
    "select",
    "update_layer",
    "update_resource",
]
