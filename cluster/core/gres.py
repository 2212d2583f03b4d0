"""Generic resources (GRES): what a node has, what a job asks, which devices it gets.

Pure: no Django, no clock.  The grammar is Slurm's:

* a node's ``Gres=`` (slurm.conf): ``name[:type][:count]`` items separated by commas
  (``gpu:4``, ``gpu:a100:2,gpu:v100:2``, ``mps:100``); a count may end in K, M or G;
* a job's ``--gres``: the same items, per node (``gpu``, ``gpu:2``, ``gpu:a100:1``), with
  Slurm's optional ``gres/`` prefix (``gres/gpu:2``);
* ``--gpus``, ``--gpus-per-node`` and ``--gpus-per-task``: ``[type:]count``.

Devices are numbered per node and per name from 0, in the order the node's GRES are
listed (gres.conf's lines when it describes the node), so ``Gres=gpu:a100:2,gpu:v100:2``
has the a100 as 0-1 and the v100 as 2-3, as Slurm's ``GresUsed=...(IDX:0-1)`` shows them.
Only ``gpu`` is a device GRES here (each unit is a device with an index); other names are
counted (``mps:100``), as Slurm counts GRES without device files.

:class:`GresPlugin` is the scheduler's side: a job with a GRES request fits a node only
while that node has the devices free; the devices a job is given are recorded per node
(:attr:`GresPlugin.taken`) and kept with the job, so what running jobs hold is read back
from them each pass (a controller restart loses nothing).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from cluster.core.scheduler import Blocked, JobView, SchedulerPlugin, Snapshot, Start, cpu_layout_of
from cluster.core.states import Reason
from slurmwords.int_lists import fold_ints

DEVICE_NAMES = frozenset({"gpu"})  # GRES whose units are devices with indices
INVALID_GRES = "Invalid generic resource (gres) specification"
MAX_COUNT = 2**31 - 1

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.\-]*$")
_COUNT = re.compile(r"^([0-9]+)([KMGkmg]?)$")
_SUFFIX = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}

# One allocated unit group on a node, as kept with the job: [name, type, count, [indices]].
AllocEntry = list


@dataclass(frozen=True, slots=True)
class GresItem:
    name: str
    type: str = ""  # "" untyped
    count: int = 1

    @property
    def key(self) -> tuple[str, str]:
        return (self.name, self.type)

    def text(self) -> str:
        return ":".join(p for p in (self.name, self.type, str(self.count)) if p)


def _count(text: str) -> int | None:
    m = _COUNT.match(text)
    if m is None:
        return None
    value = int(m.group(1)) * _SUFFIX[m.group(2).lower()]
    return value if value <= MAX_COUNT else None


def _item(text: str, *, suffixes: bool) -> GresItem:
    parts = text.strip().split(":")
    count = 1
    if len(parts) > 1 and parts[-1][:1].isdigit():
        value = _count(parts[-1]) if suffixes else (int(parts[-1]) if parts[-1].isdigit() else None)
        if value is None or value > MAX_COUNT:
            raise ValueError(f"bad count in {text.strip()!r}")
        count = value
        parts = parts[:-1]
    if not 1 <= len(parts) <= 2 or not all(_NAME.match(p) for p in parts):
        raise ValueError(f"bad GRES {text.strip()!r} (expected name[:type][:count])")
    return GresItem(parts[0], parts[1] if len(parts) == 2 else "", count)


def parse_node_gres(text: str) -> tuple[GresItem, ...]:
    """A node's ``Gres=``; ``ValueError`` naming the bad item.  ``(null)`` and empty: none."""
    text = text.strip()
    if not text or text.lower() == "(null)":
        return ()
    items = [_item(part, suffixes=True) for part in text.split(",")]
    seen: set[tuple[str, str]] = set()
    for item in items:
        if item.key in seen:
            raise ValueError(f"{item.name}{':' + item.type if item.type else ''} given twice")
        seen.add(item.key)
    return tuple(items)


def format_gres(items: Iterable[GresItem]) -> str:
    return ",".join(i.text() for i in items)


def parse_gres_option(text: str) -> tuple[GresItem, ...]:
    """``--gres``: per-node items; ``ValueError`` with Slurm's message."""
    out: list[GresItem] = []
    for raw in text.split(","):
        part = raw.strip().removeprefix("gres/")
        try:
            item = _item(part, suffixes=False)
        except ValueError:
            raise ValueError(f"{INVALID_GRES}: {part!r}") from None
        if item.count:  # gpu:0 asks for none, as in Slurm
            out.append(item)
    return tuple(out)


def parse_gpus(text: str, option: str) -> GresItem:
    """``--gpus``/``--gpus-per-node``/``--gpus-per-task``: ``[type:]count`` of ``gpu``."""
    raw = str(text).strip()
    if raw.startswith("gpu:") and raw.count(":") >= 1:
        raw = raw[len("gpu:") :]
    parts = raw.split(":")
    count = parts[-1]
    kind = parts[0] if len(parts) == 2 else ""
    if (
        len(parts) > 2
        or not count.isdigit()
        or not 0 < int(count) <= MAX_COUNT
        or (kind and not _NAME.match(kind))
    ):
        raise ValueError(f"{INVALID_GRES}: {option}={text}")
    return GresItem("gpu", kind, int(count))


# --------------------------------------------------------------------------- requests


@dataclass(frozen=True, slots=True)
class GresRequest:
    """A job's GRES: ``--gres``/``--gpus-per-node`` per node, ``--gpus`` for the whole job
    (spread over its nodes), ``--gpus-per-task`` per task."""

    per_node: tuple[GresItem, ...] = ()
    per_job: GresItem | None = None
    per_task: GresItem | None = None

    def __bool__(self) -> bool:
        return bool(self.per_node or self.per_job or self.per_task)

    def names(self) -> set[str]:
        items = [*self.per_node, self.per_job, self.per_task]
        return {i.name for i in items if i is not None}


def request_of(per_node: str = "", per_job: str = "", per_task: str = "") -> GresRequest:
    """A request from the job's stored texts (``gpu:2``, ``gpu:a100:1``); an unparsable
    text (a row from before validation) asks nothing rather than failing a pass."""

    def one(text: str) -> GresItem | None:
        try:
            items = parse_gres_option(text) if text else ()
        except ValueError:
            return None
        return items[0] if items else None

    try:
        node_items = parse_gres_option(per_node) if per_node else ()
    except ValueError:
        node_items = ()
    return GresRequest(node_items, one(per_job), one(per_task))


Need = dict[tuple[str, str], int]


def node_needs(request: GresRequest, nodes: int, tasks: int) -> list[Need]:
    """What each of the job's ``nodes`` must have free, largest first: ``--gres`` on every
    node, ``--gpus`` spread as evenly as the count allows (the first nodes one more), and
    ``--gpus-per-task`` times the tasks each node runs (laid out as the CPUs are)."""
    nodes = max(nodes, 1)
    needs: list[Need] = [{} for _ in range(nodes)]
    for need in needs:
        for item in request.per_node:
            need[item.key] = need.get(item.key, 0) + item.count
    if request.per_job is not None:
        base, extra = divmod(request.per_job.count, nodes)
        for pos, need in enumerate(needs):
            share = base + (1 if pos < extra else 0)
            if share:
                need[request.per_job.key] = need.get(request.per_job.key, 0) + share
    if request.per_task is not None:
        _, per_node_tasks = cpu_layout_of(nodes, tasks, 1)
        for need, count in zip(needs, per_node_tasks, strict=True):
            need[request.per_task.key] = need.get(request.per_task.key, 0) + count * request.per_task.count
    needs.sort(key=lambda n: -sum(n.values()))
    return needs


# --------------------------------------------------------------------------- a node's devices


@dataclass
class NodeGres:
    """What one node has free: device indices per name (with their type), counts for the rest."""

    devices: dict[str, list[tuple[str, int]]] = field(default_factory=dict)  # name -> [(type, idx)]
    counts: dict[tuple[str, str], int] = field(default_factory=dict)

    @classmethod
    def of(cls, items: Iterable[GresItem]) -> NodeGres:
        node = cls()
        for item in items:
            if item.name in DEVICE_NAMES:
                bucket = node.devices.setdefault(item.name, [])
                start = len(bucket)
                bucket.extend((item.type, start + k) for k in range(item.count))
            else:
                node.counts[item.key] = node.counts.get(item.key, 0) + item.count
        return node

    def copy(self) -> NodeGres:
        return NodeGres({k: list(v) for k, v in self.devices.items()}, dict(self.counts))

    def available(self, name: str, kind: str) -> int:
        if name in DEVICE_NAMES:
            return sum(1 for t, _ in self.devices.get(name, ()) if not kind or t == kind)
        return sum(c for (n, t), c in self.counts.items() if n == name and (not kind or t == kind))

    def fits(self, need: Need) -> bool:
        totals: dict[str, int] = {}
        for (name, kind), count in need.items():
            if self.available(name, kind) < count:
                return False
            totals[name] = totals.get(name, 0) + count
        return all(self.available(name, "") >= count for name, count in totals.items())

    def take(self, need: Need) -> list[AllocEntry]:
        """Remove ``need`` (typed requests first, then the untyped from what is left), lowest
        indices first; the entries taken, as kept with the job."""
        out: list[AllocEntry] = []
        for (name, kind), count in sorted(need.items(), key=lambda kv: kv[0][1] == ""):
            if name in DEVICE_NAMES:
                free = self.devices.get(name, [])
                picked = [d for d in free if not kind or d[0] == kind][:count]
                for d in picked:
                    free.remove(d)
                by_type: dict[str, list[int]] = {}
                for t, idx in picked:
                    by_type.setdefault(t, []).append(idx)
                out += [[name, t, len(ix), sorted(ix)] for t, ix in by_type.items()]
            else:
                left = count
                for key in [k for k in self.counts if k[0] == name and (not kind or k[1] == kind)]:
                    got = min(left, self.counts[key])
                    if got:
                        self.counts[key] -= got
                        out.append([name, key[1], got, []])
                        left -= got
        return out

    def release(self, entries: Iterable[Sequence]) -> None:
        """Mark what a holding job has as used (the same entries :meth:`take` gives)."""
        for name, kind, count, indices in entries:
            if name in DEVICE_NAMES:
                held = set(indices)
                bucket = self.devices.get(name, [])
                self.devices[name] = [d for d in bucket if d[1] not in held]
            else:
                key = (name, kind)
                self.counts[key] = max(0, self.counts.get(key, 0) - int(count))


def assign(
    needs: Sequence[Need],
    candidates: Sequence[int],
    nodes: Mapping[int, NodeGres],
    required: Iterable[int] = (),
) -> dict[int, Need] | None:
    """Give each need a node among ``candidates`` (the required ones first, then in
    order) that has it free; None when some need finds none."""
    req = [i for i in candidates if i in set(required)]
    order = req + [i for i in candidates if i not in set(req)]
    out: dict[int, Need] = {}
    left = list(needs)
    for i in order:
        if not left:
            break
        node = nodes.get(i)
        for pos, need in enumerate(left):
            if not need or (node is not None and node.fits(need)):
                out[i] = need
                del left[pos]
                break
        else:
            if i in req:
                return None  # a required node must hold part of the job
    return out if not left else None


# --------------------------------------------------------------------------- the plugin


class GresPlugin(SchedulerPlugin):
    """A GRES request fits only nodes with the devices free; the starts take them.

    ``inventory``: node name -> its GRES (``Gres=`` in gres.conf order); ``held``: what the
    jobs holding resources keep ({node name: entries}); ``requests``: job id -> request
    of the pending jobs that ask for GRES.
    """

    def __init__(
        self,
        inventory: Mapping[str, Sequence[GresItem]],
        held: Iterable[Mapping[str, Sequence[Sequence]]],
        requests: Mapping[int, GresRequest],
    ) -> None:
        self.inventory = inventory
        self.held = list(held)
        self.requests = requests
        self.free: dict[int, NodeGres] = {}
        self.plans: dict[int, dict[int, Need]] = {}
        self.taken: dict[int, dict[str, list[AllocEntry]]] = {}  # job id -> node -> entries
        self.names: dict[int, str] = {}

    def begin_pass(self, snapshot: Snapshot) -> None:
        index_of = {n.name: n.index for n in snapshot.nodes}
        self.names = {n.index: n.name for n in snapshot.nodes}
        self.index_of = index_of
        self.free = {
            index_of[name]: NodeGres.of(items) for name, items in self.inventory.items() if name in index_of
        }
        for alloc in self.held:
            for name, entries in alloc.items():
                node = self.free.get(index_of.get(name, -1))
                if node is not None:
                    node.release(entries)

    def selects(self, job: JobView) -> bool:
        return job.job_id in self.requests

    def select_nodes(
        self, job: JobView, candidates: Sequence[int], count: int, proposal: tuple[int, ...]
    ) -> tuple[int, ...] | Blocked:
        request = self.requests.get(job.job_id)
        if not request:
            return proposal
        needs = node_needs(request, count, job.num_tasks)
        required = [self.index_of[n] for n in job.req_nodes if n in self.index_of]
        plan = assign(needs, candidates, self.free, required)
        if plan is None:
            return Blocked(Reason.RESOURCES)
        self.plans[job.job_id] = plan
        return tuple(plan)

    def on_start(self, job: JobView, start: Start) -> None:
        request = self.requests.get(job.job_id)
        if not request:
            return
        plan = self.plans.pop(job.job_id, None)
        if plan is None or set(plan) != set(start.node_indices):
            # Another plugin chose the nodes: lay the needs out on them afresh.
            needs = node_needs(request, len(start.node_indices), job.num_tasks)
            plan = assign(needs, start.node_indices, self.free) or dict(
                zip(start.node_indices, needs, strict=True)
            )
        taken: dict[str, list[AllocEntry]] = {}
        for i, need in plan.items():
            node = self.free.get(i)
            if node is not None and need:
                taken[self.names[i]] = node.take(need)
        self.taken[job.job_id] = taken


# --------------------------------------------------------------------------- submission


def never_fits(request: GresRequest, nodes: int, tasks: int, members: Sequence[Sequence[GresItem]]) -> bool:
    """Whether no ``nodes`` of the partition (``members``: each node's GRES, whatever its
    state) could ever hold the request, however idle the cluster."""
    needs = node_needs(request, nodes, tasks)
    full = {i: NodeGres.of(items) for i, items in enumerate(members)}
    return assign(needs, list(full), full) is None


# --------------------------------------------------------------------------- shown


def fold_indices(indices: Sequence[int]) -> str:
    """``0-1,3`` as Slurm prints device indices."""
    return fold_ints(indices)


def gres_used(
    items: Sequence[GresItem], allocs: Iterable[Mapping[str, Sequence[Sequence]] | Sequence[Sequence]]
) -> str:
    """``scontrol show node``'s GresUsed=: each configured GRES with what is in use
    (``gpu:a100:2(IDX:0-1),gpu:v100:0(IDX:N/A)``); ``allocs`` are one node's entries
    of each job."""
    used: dict[tuple[str, str], list[int]] = {}
    counts: dict[tuple[str, str], int] = {}
    for entries in allocs:
        for name, kind, count, indices in entries:  # type: ignore[misc]
            used.setdefault((name, kind), []).extend(indices)
            counts[(name, kind)] = counts.get((name, kind), 0) + int(count)
    out = []
    for item in items:
        n = counts.get(item.key, 0)
        if item.name in DEVICE_NAMES:
            idx = fold_indices(used.get(item.key, [])) or "N/A"
            out.append(f"{item.name}:{item.type + ':' if item.type else ''}{n}(IDX:{idx})")
        else:
            out.append(f"{item.name}:{item.type + ':' if item.type else ''}{n}")
    return ",".join(out)


def tres_counts(items: Iterable[GresItem] | Iterable[Sequence]) -> dict[str, int]:
    """TRES of GRES (``gpu``, ``gpu:a100``), as CfgTRES and AllocTRES count them: a typed
    unit counts for its type and for the name."""
    out: dict[str, int] = {}
    for it in items:
        name, kind, count = (it.name, it.type, it.count) if isinstance(it, GresItem) else tuple(it[:3])
        out[name] = out.get(name, 0) + int(count)
        if kind:
            out[f"{name}:{kind}"] = out.get(f"{name}:{kind}", 0) + int(count)
    return out


def launch_gres(
    entries: Sequence[Sequence], *, per_node: str, per_job: str, per_task: str, cpus_per_gpu: int | None
) -> dict | None:
    """The launch's ``gres``: the devices given on the batch host (``[name, type, index]``)
    and the request the SLURM_GPUS* variables describe; None for a job without GRES."""
    if not (per_node or per_job or per_task):
        return None
    gpus_per_node = ""
    for item in per_node.split(","):
        parts = item.split(":")
        if parts[0] == "gpu":  # --gres=gpu:a100:2 is SLURM_GPUS_PER_NODE=a100:2
            gpus_per_node = ":".join(parts[1:]) or "1"
    return {
        "devices": [[name, kind, int(i)] for name, kind, _count, idx in entries for i in idx],
        "gpus": per_job.removeprefix("gpu:"),
        "gpus_per_node": gpus_per_node,
        "gpus_per_task": per_task.removeprefix("gpu:"),
        "cpus_per_gpu": cpus_per_gpu or 0,
    }


def job_gres_tres(
    per_node: str,
    per_job: str,
    per_task: str,
    *,
    nodes: int,
    tasks: int,
    alloc: Mapping[str, Sequence[Sequence]] | None = None,
) -> dict[str, int]:
    """A job's GRES as TRES counts (``gpu``, ``gpu:a100``; the caller adds ``gres/``): what
    it was given when ``alloc`` says, else what it asks on ``nodes`` nodes."""
    if alloc:
        return tres_counts(e for entries in alloc.values() for e in entries)
    request = request_of(per_node, per_job, per_task)
    if not request:
        return {}
    totals: dict[str, int] = {}
    for need in node_needs(request, nodes, tasks):
        for (name, kind), count in need.items():
            totals[name] = totals.get(name, 0) + count
            if kind:
                totals[f"{name}:{kind}"] = totals.get(f"{name}:{kind}", 0) + count
    return totals
