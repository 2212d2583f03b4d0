"""Hierarchical resources as a :class:`cluster.core.scheduler.SchedulerPlugin` (pure, no Django).

The adapter builds one plugin per pass from the current :class:`hres.core.layers.HresState`
(layers, runtime changes, active reservations) and the charges of the jobs holding
resources, keyed by job id (what their ``LicensesAlloc`` says)::

    plugin = HresPlugin(state, charges={job_id: parse_licenses_alloc(alloc), ...})
    result = schedule(snapshot, [LicensePlugin(...), plugin])
    for start in result.starts:
        save LicensesAlloc = plugin.licenses_alloc(start.job_id)

Hooks: ``begin_pass`` rebuilds usage from the charges of the snapshot's running jobs;
``job_gate`` refuses a job that no ``N`` nodes of its partition could serve now
(``Licenses`` naming the blocking layer, or ``HRESDisabled``); ``select_nodes`` picks
nodes the layers can serve (Mode 3 sums checked as nodes are added) and computes the
charges; ``on_start`` charges them, so later jobs of the pass see the usage.
Plain licenses in the same request are left to :class:`cluster.core.licenses.LicensePlugin`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import compress
from operator import is_not

from cluster.core.scheduler import (
    Blocked,
    JobView,
    NodeView,
    PartitionView,
    SchedulerPlugin,
    Snapshot,
    Start,
    node_count,
)
from cluster.core.states import Reason
from hres.core.layers import (
    Charge,
    HresState,
    Refusal,
    Selection,
    format_licenses_alloc,
    gate,
    mask_of,
    plan,
    select,
)
from slurmwords.licenses import LicenseItem, parse_license_request


def node_names(nodes: Sequence[NodeView]) -> tuple[tuple[str, ...], dict[str, int]]:
    """(name by node index, "" where none; name -> index) of a pass's node views."""
    size = max((n.index for n in nodes), default=-1) + 1
    names = [""] * size
    for n in nodes:
        names[n.index] = n.name
    return tuple(names), {n.name: n.index for n in nodes}


def _blocked(refusal: Refusal) -> Blocked:
    return Blocked(refusal.reason, refusal.detail)


class UsageMemo:
    """The layers with usage of the last pass, kept by the adapter (one per process).

    Every pass rebuilds the usage from the holding jobs' charges, which between two
    passes rarely change: kept while the state (compared by identity: the adapter's is a
    kept, immutable value) and the holding jobs' charges are the same."""

    def __init__(self) -> None:
        # (state, charges), state with usage, whether no charge was negative: replaced
        # whole, so a thread holding the old tuple never sees a mixture.
        self._kept: tuple[HresState, tuple[tuple[int, tuple[Charge, ...]], ...], HresState, bool] | None = (
            None
        )
        # The node views the names were last made from, the names by index, name -> index.
        self._names: tuple[tuple[NodeView, ...], tuple[str, ...], dict[str, int]] | None = None

    def node_names(self, nodes: tuple[NodeView, ...]) -> tuple[tuple[str, ...], dict[str, int]]:
        """(name by node index, "" where none; name -> index) of ``nodes``: the last ones
        while no node was added, removed, moved or renamed (a pass's views change at every
        start and end, their names almost never: two walks of 10,000 nodes a pass)."""
        kept = self._names
        if kept is not None:
            old = kept[0]
            if old is nodes:
                return kept[1], kept[2]
            changed = compress(range(len(nodes)), map(is_not, old, nodes))
            if len(old) == len(nodes) and all(
                old[k].name == nodes[k].name and old[k].index == nodes[k].index for k in changed
            ):
                self._names = (nodes, kept[1], kept[2])
                return kept[1], kept[2]
        names, index = node_names(nodes)
        self._names = (nodes, names, index)
        return names, index

    def with_usage(self, state: HresState, charges: tuple[tuple[int, tuple[Charge, ...]], ...]) -> HresState:
        kept = self._kept
        if kept is not None and kept[0] is state:
            if kept[1] == charges:
                return kept[2]
            used = _changed_usage(kept[2], kept[1], charges) if kept[3] else None
            if used is not None:
                self._kept = (state, charges, used, True)
                return used
        used = state.with_usage(c for _job_id, cs in charges for c in cs)
        # Usage found from the changes later only over whole sums (see _changed_usage).
        exact = not any(a < 0 for _job_id, cs in charges for c in cs for _name, a in c.layers)
        self._kept = (state, charges, used, exact)
        return used


def _changed_usage(
    used: HresState,
    was: tuple[tuple[int, tuple[Charge, ...]], ...],
    now: tuple[tuple[int, tuple[Charge, ...]], ...],
) -> HresState | None:
    """``used`` (the usage of the charges ``was``) less the charges of the jobs gone or
    changed, plus those of the jobs come or changed: what ``with_usage`` builds from
    ``now`` alone, found from the few jobs that started or ended instead of every holding
    job's charges (thousands at 10,000 nodes, after every event in the simulator's log).
    None when it may not be: a charge of a reservation (its use is kept per reservation,
    an entry that a rebuild leaves out once its last job is gone) or a negative amount
    (each layer's use stays at 0 or more after every charge: adding and taking back the
    same amounts gives the rebuilt sums only when no charge, kept or changed, is)."""
    before, after = dict(was), dict(now)
    if len(before) != len(was) or len(after) != len(now):
        return None  # a job listed twice
    gone = [c for job_id, cs in before.items() if after.get(job_id) is not cs for c in cs]
    came = [c for job_id, cs in after.items() if before.get(job_id) is not cs for c in cs]
    if len(gone) + len(came) > len(now) // 2 + 16:
        return None  # as many as rebuilding
    for c in (*gone, *came):
        if c.reservation or any(a < 0 for _name, a in c.layers):
            return None
    return used.release(gone).charge(came)


class HresPlugin(SchedulerPlugin):
    def __init__(
        self,
        state: HresState,
        charges: Mapping[int, Sequence[Charge]] | None = None,
        *,
        memo: UsageMemo | None = None,
    ) -> None:
        self.base = state
        self.memo = memo
        self.charges = {k: tuple(v) for k, v in (charges or {}).items()}
        self.state = state
        self.modes = state.modes()
        self.started: dict[int, tuple[Charge, ...]] = {}
        # A job whose nodes another plugin changed after ours chose them, and that the
        # layers could not hold on its final nodes (not expected with this plugin last).
        self.conflicts: dict[int, Refusal] = {}
        self._planned: dict[int, Selection] = {}
        self._requests: dict[str, tuple[LicenseItem, ...] | Blocked] = {}
        self._parts: dict[str, int] = {}
        self._partitions: Mapping[str, PartitionView] = {}
        self._index: dict[str, int] = {}
        self._gates: dict[tuple, tuple[int, Blocked | None]] = {}
        self._version = 0

    # -- helpers

    def request(self, licenses: str) -> tuple[LicenseItem, ...] | Blocked:
        """The HRES items of a ``--license`` value (cached: queues repeat requests)."""
        found = self._requests.get(licenses)
        if found is None:
            try:
                found = parse_license_request(licenses, hres=self.modes).hres(self.modes)
            except ValueError as exc:
                found = Blocked(Reason.LICENSES, str(exc))
            self._requests[licenses] = found
        return found

    def _within(self, partition: str) -> int:
        m = self._parts.get(partition)
        if m is None:
            view = self._partitions.get(partition)
            m = self._parts[partition] = mask_of(view.node_indices) if view else 0
        return m

    def licenses_alloc(self, job_id: int) -> str:
        """``LicensesAlloc`` of a job started in this pass ("" if it holds no HRES)."""
        return format_licenses_alloc(self.started.get(job_id, ()))

    # -- hooks

    def begin_pass(self, snapshot: Snapshot) -> None:
        if self.memo is not None:
            names, self._index = self.memo.node_names(snapshot.nodes)
        else:
            names, self._index = node_names(snapshot.nodes)
        holding = {j.job_id for j in snapshot.running}
        state = self.base.reindex(names)
        used = tuple((job_id, cs) for job_id, cs in self.charges.items() if job_id in holding)
        if self.memo is not None:
            self.state = self.memo.with_usage(state, used)
        else:
            self.state = state.with_usage(c for _job_id, cs in used for c in cs)
        self._partitions = snapshot.partitions
        self._parts = {}
        self._gates = {}
        self._planned = {}
        self.started = {}
        self.conflicts = {}
        self._version = 0

    def job_gate(self, job: JobView, partition: PartitionView) -> Blocked | None:
        if not job.licenses:
            return None
        items = self.request(job.licenses)
        if isinstance(items, Blocked):
            return items
        if not items:
            return None
        n = node_count(job)
        key = (job.licenses, partition.name, n, job.reservation)
        cached = self._gates.get(key)
        if cached is not None and cached[0] == self._version:
            return cached[1]
        refusal = gate(self.state, items, n, self._within(partition.name), reservation=job.reservation)
        verdict = _blocked(refusal) if refusal else None
        self._gates[key] = (self._version, verdict)
        return verdict

    def selects(self, job: JobView) -> bool:
        """Only jobs requesting a hierarchical resource need the layers to pick nodes."""
        if not job.licenses:
            return False
        items = self.request(job.licenses)
        return not isinstance(items, Blocked) and bool(items)

    def select_nodes(
        self, job: JobView, candidates: Sequence[int], count: int, proposal: tuple[int, ...]
    ) -> tuple[int, ...] | Blocked:
        items = self.request(job.licenses) if job.licenses else ()
        if isinstance(items, Blocked):
            return items
        if not items:
            return proposal
        required = sorted(self._index[n] for n in job.req_nodes if n in self._index)
        sel = select(
            self.state,
            items,
            candidates,
            count,
            required=required,
            within=self._within(job.partition),
            reservation=job.reservation,
        )
        if isinstance(sel, Refusal):
            return _blocked(sel)
        self._planned[job.job_id] = sel
        return sel.nodes

    def on_start(self, job: JobView, start: Start) -> None:
        items = self.request(job.licenses) if job.licenses else ()
        if isinstance(items, Blocked) or not items:
            return
        sel = self._planned.pop(job.job_id, None)
        if sel is not None and sel.nodes == start.node_indices:
            charges = sel.charges
        else:
            verdict = plan(self.state, items, start.node_indices, reservation=job.reservation)
            if isinstance(verdict, Refusal):
                self.conflicts[job.job_id] = verdict
                return
            charges = verdict
        self.state = self.state.charge(charges)
        self.started[job.job_id] = charges
        self._version += 1


__all__ = ["HresPlugin", "UsageMemo"]
