"""Preemption to reclaim a Mode 3 resource (Slurm's hres.html, "Mode 3, Preemption").

After a main scheduler pass (never backfill), a pending job held with reason ``Licenses``
on a Mode 3 resource may preempt running jobs that hold it, as ``PreemptType`` says:

* ``preempt/qos``: the preemptor's QOS must list the victim's QOS in its Preempt list, as
  ``sacctmgr modify qos high set preempt=low`` does; victims go lowest QOS priority, then
  lowest job priority, then youngest first; ``PreemptMode`` is slurm.conf's.
* ``preempt/partition_prio``: the victim's partition has a lower ``PriorityTier`` than the
  preemptor's; victims go lowest tier, then fewest nodes first (Slurm's partition_prio
  order); a partition's own ``PreemptMode`` governs its jobs, slurm.conf's otherwise.

Only ``CANCEL`` and ``REQUEUE`` reclaim Mode 3 resources.  Which jobs suffice is
:func:`hres.core.layers.mode3_preemption`'s decision: a job under a shared layer is a
candidate without sharing a node with the preemptor.  A configuration under which no job
can ever be preempted for a Mode 3 resource is warned about when it is loaded
(:func:`config_warnings`).

Victims end through the job services: CANCEL ends them PREEMPTED (squeue ``PR``, sacct
``PREEMPTED``); REQUEUE records PREEMPTED and sends them back to the queue (a job that may
not be requeued is cancelled instead, as in Slurm).  The preemptor starts in a later pass,
once the victims' processes are gone.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from ClusterShell.NodeSet import NodeSet, NodeSetParseError

from cluster import extensions, publish
from cluster.core import states
from cluster.core.scheduler import PassResult
from cluster.core.states import HOLDING_JOB_STATES, JobState, Reason
from cluster.models import Event, Job, Node, Partition
from cluster.services import rows, scheduler_params
from cluster.services.state import terminate_running, transition_row
from hres import services
from hres.core.layers import Charge, HresState, PreemptCandidate, mode3_preemption
from slurmwords.licenses import LicenseItem, Mode, parse_license_request

log = logging.getLogger(__name__)

MODES = ("CANCEL", "REQUEUE")
QOS = "preempt/qos"
PARTITION_PRIO = "preempt/partition_prio"
TYPES = (QOS, PARTITION_PRIO)
MAX_WINDOWS = 256  # node groups tried per preemptor: bounds the work of one pass


def option(options: Mapping[str, object], key: str) -> str:
    """A slurm.conf value, its key matched without regard to case (as Slurm reads them)."""
    lower = key.lower()
    return next((str(v) for k, v in options.items() if k.lower() == lower), "")


def preempt_type(options: Mapping[str, object]) -> str | None:
    """``preempt/qos`` or ``preempt/partition_prio`` (the types that reclaim Mode 3
    resources) when slurm.conf's ``PreemptType`` names one, else None."""
    ptype = option(options, "PreemptType").strip().lower()
    return ptype if ptype in TYPES else None


def _reclaiming(text: str) -> str | None:
    """``CANCEL`` or ``REQUEUE`` from a ``PreemptMode`` value, which may carry more words
    (``REQUEUE,GANG``); another mode (SUSPEND, OFF) reclaims nothing."""
    words = [w.strip().upper() for w in text.split(",") if w.strip()]
    return next((w for w in words if w in MODES), None)


def preempt_mode(options: Mapping[str, object], partition_mode: str = "") -> str | None:
    """``CANCEL`` or ``REQUEUE`` when slurm.conf asks for a preemption that reclaims Mode 3
    resources, else None.  Under ``preempt/partition_prio``, ``partition_mode`` (the
    victim's partition's own ``PreemptMode``, if set) overrides slurm.conf's, as Slurm's
    PreemptMode partition option does."""
    ptype = preempt_type(options)
    if ptype is None:
        return None
    if ptype == PARTITION_PRIO and partition_mode.strip():
        return _reclaiming(partition_mode)
    return _reclaiming(option(options, "PreemptMode"))


def config_warnings(
    options: Mapping[str, object], partitions: Iterable[tuple[str, int, str]], mode3: Sequence[str]
) -> tuple[str, ...]:
    """What to tell the administrator when the configuration loaded can never preempt a
    job to reclaim the Mode 3 resources ``mode3``: ``partitions`` are (name, PriorityTier,
    its own PreemptMode or "").  No preemption at all (neither ``PreemptType`` nor a
    ``PreemptMode`` that asks for one) is a choice, not a mistake: nothing to say."""
    if not mode3:
        return ()
    what = f"Mode 3 resource{'s' if len(mode3) > 1 else ''} {','.join(mode3)}"
    given = option(options, "PreemptType").strip()
    ptype = given.lower()
    mode = option(options, "PreemptMode").strip()
    if ptype in {"", "preempt/none"}:
        if _reclaiming(mode):
            return (
                f"PreemptMode={mode} without a PreemptType: no job is ever preempted to reclaim "
                f"{what}; set PreemptType=preempt/qos or preempt/partition_prio",
            )
        return ()
    if ptype not in TYPES:
        return (
            f"PreemptType={given} never preempts a job to reclaim {what}: only preempt/qos and "
            "preempt/partition_prio do",
        )
    if ptype == QOS:
        if _reclaiming(mode) is None:
            return (
                f"PreemptMode={mode or 'OFF'}: no job is ever preempted to reclaim {what}, "
                "only PreemptMode CANCEL or REQUEUE reclaims them",
            )
        return ()
    parts = list(partitions)
    if not parts:
        return ()
    top = max(tier for _, tier, _ in parts)
    lower = [(name, own) for name, tier, own in parts if tier < top]
    if not lower:
        return (
            f"PreemptType=preempt/partition_prio: every partition has PriorityTier={top}, so no "
            f"job is ever preempted to reclaim {what}",
        )
    if not any(preempt_mode(options, own) for _, own in lower):
        return (
            f"PreemptType=preempt/partition_prio: no partition below PriorityTier={top} has "
            f"PreemptMode CANCEL or REQUEUE (PreemptMode={mode or 'OFF'}), so no job is ever "
            f"preempted to reclaim {what}",
        )
    return ()


@dataclass(frozen=True, slots=True)
class Holder:
    """A running job holding a Mode 3 resource, as preemption sees it."""

    job_id: int
    qos: str
    qos_priority: int
    priority: int
    start: float
    charges: tuple[Charge, ...]
    partition: str = ""
    tier: int = 0  # its partition's PriorityTier
    node_count: int = 0


def order(holders: Iterable[Holder]) -> list[Holder]:
    """Preemption order: lowest QOS priority, lowest job priority, youngest first."""
    return sorted(holders, key=lambda h: (h.qos_priority, h.priority, -h.start, -h.job_id))


def order_by_partition(holders: Iterable[Holder]) -> list[Holder]:
    """preempt/partition_prio's order: lowest partition PriorityTier, then fewest nodes
    (Slurm's partition_prio sorts so), then lowest job priority, youngest first."""
    return sorted(holders, key=lambda h: (h.tier, h.node_count, h.priority, -h.start, -h.job_id))


def windows(usable: Sequence[int], count: int, required: Collection[int] = ()) -> list[tuple[int, ...]]:
    """Node groups a preemptor could run on: its required nodes, or runs of ``count``
    usable nodes in index order (nodes are named by rack, so a run stays close)."""
    if required:
        return [tuple(sorted(required))] if len(required) >= count else []
    count = max(1, count)
    return [tuple(usable[i : i + count]) for i in range(0, max(0, len(usable) - count + 1))][:MAX_WINDOWS]


def choose(
    state: HresState,
    items: Sequence[LicenseItem],
    groups: Iterable[tuple[int, ...]],
    candidates: Sequence[Holder],
    blockers: Mapping[int, Collection[int]],
    *,
    reservation: str = "",
) -> tuple[int, ...] | None:
    """The fewest victims that let ``items`` fit on one of ``groups``, or None.

    ``blockers`` maps a node index to the jobs that must leave it for the preemptor to
    have its CPUs (a group whose blockers are not all candidates is skipped)."""
    by_id = {h.job_id: h for h in candidates}
    offered = [PreemptCandidate(h.job_id, h.charges) for h in candidates]
    best: tuple[int, ...] | None = None
    for group in groups:
        must = {j for n in group for j in blockers.get(n, ())}
        if not must <= set(by_id):
            continue
        victims = list(dict.fromkeys(sorted(must, key=lambda j: candidates.index(by_id[j]))))
        freed = state.release(c for j in victims for c in by_id[j].charges)
        rest = [c for c in offered if c.job_id not in must]
        ok = True
        for item in items:
            more = mode3_preemption(freed, item, group, rest, reservation=reservation)
            if more is None:
                ok = False
                break
            victims += [j for j in more if j not in victims]
            freed = freed.release(c for j in more for c in by_id[j].charges)
            rest = [c for c in rest if c.job_id not in more]
        if ok and (best is None or len(victims) < len(best)):
            best = tuple(victims)
            if not best:
                break
    return best


def _mode3_items(licenses: str, modes: Mapping[str, Mode]) -> tuple[LicenseItem, ...]:
    try:
        items = parse_license_request(licenses, hres=modes).hres(modes)
    except ValueError:
        return ()
    return tuple(it for it in items if modes.get(it.name) == Mode.MODE_3)


def reclaim(
    result: PassResult,
    *,
    now: datetime,
    preempt: Mapping[str, Collection[str]] | None = None,
) -> list[int]:
    """After a main scheduler pass: preempt for the jobs waiting on a Mode 3 resource.

    ``preempt`` (QOS -> the QOS names it may preempt) defaults to the QOS rows' Preempt
    lists.  Returns the preempted job ids.  Runs inside the pass's transaction."""
    # The kept configuration row: every pass asks, though the row rarely changes.
    options = scheduler_params.config().options
    ptype = preempt_type(options)
    waiting = {p.job_id: p for p in result.pending if p.reason == Reason.LICENSES}
    if ptype is None or not waiting:
        return []
    state = services.current_state()
    modes = state.modes()
    if Mode.MODE_3 not in modes.values():
        return []
    part_rows = list(Partition.objects.all())
    parts = {p.name: p.nodes for p in part_rows}
    tiers = {p.name: p.priority_tier for p in part_rows}
    # The mode each victim is preempted with (None: its jobs are not preempted).
    victim_mode: dict[str, str | None] = {
        p.name: preempt_mode(options, option(p.extra or {}, "PreemptMode")) for p in part_rows
    }
    lists: dict[str, frozenset[str]] = {}
    mode = preempt_mode(options)
    if ptype == QOS:
        if mode is None:
            return []
        qos = extensions.qos_preemption()
        lists = {k: frozenset(v) for k, v in (preempt or {name: p for name, (_, p) in qos.items()}).items()}
        if not any(lists.values()):
            return []
    else:
        qos = {}
        if not any(victim_mode.values()):
            return []
    holders = _holders(qos, tiers)
    # Jobs already on their way out free what they hold: count them as gone.
    going = set(
        Job.objects.filter(state__in=[s.value for s in HOLDING_JOB_STATES])
        .exclude(final_state="")
        .values_list("id", flat=True)
    )
    live = {h.job_id: h for h in holders if h.job_id not in going}
    usage = [c for j, cs in services.holding_charges().items() if j not in going for c in cs]
    state = services.with_active_reservations(state, now).with_usage(usage)
    nodes = list(
        Node.objects.order_by("name").values_list("name", "cpus", "alloc_cpus", "base_state", "flags")
    )
    index = {name: i for i, (name, *_) in enumerate(nodes)}
    state = state.reindex([n for n, *_ in nodes])
    users_of: dict[int, list[int]] = {}  # node index -> every job holding it
    for job_id, alloc in Job.objects.filter(state__in=[s.value for s in HOLDING_JOB_STATES]).values_list(
        "id", "alloc"
    ):
        for n in alloc or {}:
            if n in index and job_id not in going:
                users_of.setdefault(index[n], []).append(job_id)
    done: list[int] = []
    rows = Job.objects.filter(pk__in=list(waiting), state=JobState.PENDING)
    for job in sorted(rows, key=lambda j: (-tiers.get(j.partition, 0), -waiting[j.id].priority, j.id)):
        items = _mode3_items(job.licenses, modes)
        if not items:
            continue
        if ptype == QOS:
            may = lists.get(job.qos, frozenset())
            candidates = order(h for h in live.values() if h.qos in may)
        else:
            mine = tiers.get(job.partition, 0)
            candidates = order_by_partition(
                h for h in live.values() if h.tier < mine and victim_mode.get(h.partition)
            )
        if not candidates:
            continue
        need = -(-job.num_tasks * job.cpus_per_task // max(1, job.min_nodes))
        within = _names(parts.get(job.partition, ""))
        servable = 0
        for it in items:
            servable |= state.resource(it.name).structure.servable
        usable = [
            index[n]
            for n, _cpus, _alloc, base, flags in nodes
            if n in within and states.is_usable(base, flags) and servable >> index[n] & 1
        ]
        required = [index[n] for n in _names(job.req_nodes) if n in index]
        # A node without the CPUs the job needs must be emptied of its jobs as well.
        blockers = {
            i: [j for j in users_of[i] if j not in going]
            for i in usable + required
            if nodes[i][1] - nodes[i][2] < need and i in users_of
        }
        victims = choose(
            state,
            items,
            windows(usable, job.min_nodes, required),
            candidates,
            blockers,
            reservation=job.reservation,
        )
        if not victims:
            continue
        for victim in victims:
            h = live.pop(victim)
            state = state.release(h.charges)
            going.add(victim)
            victim_as = mode if ptype == QOS else victim_mode[h.partition]
            _preempt(victim, by=job.id, mode=victim_as or "CANCEL", now=now)
            done.append(victim)
    if done:
        publish.console_changed("jobs")
    return done


def _names(expr: str) -> set[str]:
    try:
        return set(NodeSet(expr)) if expr else set()
    except NodeSetParseError:
        return set()


def _holders(qos: Mapping[str, tuple[int, frozenset[str]]], tiers: Mapping[str, int]) -> list[Holder]:
    out = []
    charges = services.holding_charges()
    rows = Job.objects.filter(pk__in=list(charges), state__in=[s.value for s in HOLDING_JOB_STATES])
    for job in rows:
        out.append(
            Holder(
                job_id=job.id,
                qos=job.qos,
                qos_priority=qos.get(job.qos, (0, frozenset()))[0],
                priority=job.priority,
                start=job.start_time.timestamp() if job.start_time else 0.0,
                charges=charges[job.id],
                partition=job.partition,
                tier=tiers.get(job.partition, 0),
                node_count=len(job.alloc or {}),
            )
        )
    return out


def _preempt(job_id: int, *, by: int, mode: str, now: datetime) -> None:
    """End one victim through the job services, as Slurm shows it."""
    job = Job.objects.select_for_update().get(pk=job_id)
    if job.state not in HOLDING_JOB_STATES or job.final_state:
        return
    requeue = mode == "REQUEUE" and job.requeue
    old = job.state
    terminate_running(job, final_state=JobState.REQUEUED if requeue else JobState.PREEMPTED, now=now)
    event = transition_row(
        job.id,
        old,
        JobState.PREEMPTED,
        now=now,
        why=f"preempted by job {by}",
        detail={"preempt_mode": "REQUEUE" if requeue else "CANCEL", "preemptor": by},
    )
    rows.insert_values(Event, [event])
    log.info("job %s preempted by job %s (%s)", job.id, by, "requeue" if requeue else "cancel")
