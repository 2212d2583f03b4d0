"""Preemption to reclaim a Mode 3 resource (Slurm's hres.html, "Mode 3, Preemption").

After a main scheduler pass (never backfill), a pending job held with reason ``Licenses``
on a Mode 3 resource may preempt running jobs that hold it, when ``PreemptType=preempt/qos``
and ``PreemptMode`` is ``CANCEL`` or ``REQUEUE`` (the only modes Mode 3 supports).  The
preemptor's QOS must list the victim's QOS in its Preempt list, as ``sacctmgr modify qos
high set preempt=low`` does; victims go lowest QOS priority, then lowest job priority, then
youngest first.  Which jobs suffice is :func:`hres.core.layers.mode3_preemption`'s decision: a
job under a shared layer is a candidate without sharing a node with the preemptor.

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
from cluster.models import ClusterConfig, Event, Job, Node, Partition
from cluster.services import rows
from cluster.services.state import terminate_running, transition_row
from hres import services
from hres.core.layers import Charge, HresState, PreemptCandidate, mode3_preemption
from slurmwords.licenses import LicenseItem, Mode, parse_license_request

log = logging.getLogger(__name__)

MODES = ("CANCEL", "REQUEUE")
MAX_WINDOWS = 256  # node groups tried per preemptor: bounds the work of one pass


def _option(options: Mapping[str, object], key: str) -> str:
    lower = key.lower()
    return next((str(v) for k, v in options.items() if k.lower() == lower), "")


def preempt_mode(options: Mapping[str, object]) -> str | None:
    """``CANCEL`` or ``REQUEUE`` when slurm.conf asks for QOS preemption, else None.

    ``PreemptMode`` may carry more words (``REQUEUE,GANG``); another mode (SUSPEND, OFF)
    means no preemption for Mode 3 resources."""
    if _option(options, "PreemptType").strip().lower() != "preempt/qos":
        return None
    words = [w.strip().upper() for w in _option(options, "PreemptMode").split(",") if w.strip()]
    mode = next((w for w in words if w in MODES), None)
    if mode is None and words and words != ["OFF"]:
        log.warning("PreemptMode=%s: only CANCEL and REQUEUE reclaim Mode 3 resources", ",".join(words))
    return mode


@dataclass(frozen=True, slots=True)
class Holder:
    """A running job holding a Mode 3 resource, as preemption sees it."""

    job_id: int
    qos: str
    qos_priority: int
    priority: int
    start: float
    charges: tuple[Charge, ...]


def order(holders: Iterable[Holder]) -> list[Holder]:
    """Preemption order: lowest QOS priority, lowest job priority, youngest first."""
    return sorted(holders, key=lambda h: (h.qos_priority, h.priority, -h.start, -h.job_id))


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
    mode = preempt_mode(ClusterConfig.current().options)
    waiting = {p.job_id: p for p in result.pending if p.reason == Reason.LICENSES}
    if mode is None or not waiting:
        return []
    state = services.current_state()
    modes = state.modes()
    if Mode.MODE_3 not in modes.values():
        return []
    qos = extensions.qos_preemption()
    lists = {k: frozenset(v) for k, v in (preempt or {name: p for name, (_, p) in qos.items()}).items()}
    if not any(lists.values()):
        return []
    holders = _holders(qos)
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
    parts = {p.name: p.nodes for p in Partition.objects.all()}
    done: list[int] = []
    rows = Job.objects.filter(pk__in=list(waiting), state=JobState.PENDING)
    for job in sorted(rows, key=lambda j: (-waiting[j.id].priority, j.id)):
        may = lists.get(job.qos, frozenset())
        items = _mode3_items(job.licenses, modes)
        if not may or not items:
            continue
        candidates = order(h for h in live.values() if h.qos in may)
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
            _preempt(victim, by=job.id, mode=mode, now=now)
            done.append(victim)
    if done:
        publish.console_changed("jobs")
    return done


def _names(expr: str) -> set[str]:
    try:
        return set(NodeSet(expr)) if expr else set()
    except NodeSetParseError:
        return set()


def _holders(qos: Mapping[str, tuple[int, frozenset[str]]]) -> list[Holder]:
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
