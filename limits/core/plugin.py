"""Limits as a :class:`cluster.core.scheduler.SchedulerPlugin` (pure, no Django).

``JobView`` carries neither account, QOS nor GRES, so the adapter passes them per job id in
:class:`JobLimitsInfo`.  Each pass:

* :meth:`LimitsPlugin.begin_pass` builds a :class:`limits.core.policy.LimitState` from the
  snapshot's running and pending jobs and the usage records, and computes
  :attr:`LimitsPlugin.kills` (jobs to end, without ``safe``) and
  :attr:`LimitsPlugin.accrue_start` (pending jobs that begin accruing age now); the adapter
  applies both, since :class:`cluster.core.scheduler.PassResult` has no field for them yet;
* :meth:`LimitsPlugin.job_gate` answers with Slurm's reason code (``AssocMaxJobsLimit``,
  ``QOSGrpCpuLimit``...), which holds that one job and not its partition;
* :meth:`LimitsPlugin.on_start` charges the started job, so later jobs of the pass see it;
* :meth:`LimitsPlugin.may_reserve` is MinPrioThreshold for backfill reservations (the core
  does not ask plugins before reserving yet; see docs/limits-core.md).

Job shapes (TRES of a request) are cached by request, so 20,000 pending jobs of a few
hundred distinct shapes cost a few hundred shape computations.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import compress
from operator import attrgetter, is_, is_not

from cluster.core.licenses import limit_counts
from cluster.core.scheduler import (
    WHOLE_MEM,
    Blocked,
    JobView,
    NodeView,
    PartitionView,
    RunningChange,
    SchedulerPlugin,
    Snapshot,
    Start,
    cpu_layout,
    mem_request,
    node_count,
    resolve_time_limit,
)
from cluster.core.states import JobState
from limits.core.policy import JobRequest, JobShape, LimitKill, LimitState, Policy, RunningCharges, make_shape
from limits.core.priority import may_reserve
from limits.core.reasons import PARTITION_NODE_LIMIT, PARTITION_TIME_LIMIT
from limits.core.usage import UsageKey, UsageRecord
from slurmwords.tres import gres_tres


@dataclass(frozen=True, slots=True)
class JobLimitsInfo:
    """Per-job fields the limits need and ``JobView`` lacks.

    ``gres`` is the per-node GRES request (``gpu:tesla:2``); ``usage_factor`` the UsageFactor
    booked when a running job started; ``accrue_time`` when a pending job began accruing age
    priority (None: not yet)."""

    account: str = ""
    qos: str = ""
    gres: str = ""
    wckey: str = ""
    accrue_time: float | None = None
    usage_factor: float | None = None


_NO_INFO = JobLimitsInfo()
_KeptRequest = tuple[JobView, JobLimitsInfo, JobRequest]


class ShapeMemo:
    """Job shapes kept from one pass to the next by the adapter (one per process).

    A pass asks for the shape of every running and pending job (``request``), and the
    running jobs' shapes are nearly all new to a pass's own cache (each holds its own
    allocation), though the same as in the pass before.  A shape depends on the job's
    fields in its key and on the policy (tracked GRES, TRESBillingWeights), the partitions'
    DefaultTime and MaxTime, and DefMemPerNode: kept while those stay the same.  A pending
    job asking for a whole node's memory (``--mem=0``) also depends on the nodes' memory:
    its shape is kept for one pass only."""

    KEPT = 65536  # shapes at most; all dropped beyond

    def __init__(self) -> None:
        # (policy, partitions' time limits, DefMemPerNode), shapes: replaced whole, so a
        # thread holding the old pair never sees a mixture.
        self._kept: tuple[tuple[Policy, dict[str, tuple[int | None, int | None]], int], dict] | None = None
        self._requests: tuple[dict, dict[int, _KeptRequest]] | None = None
        # (shapes, views, infos, now, BeginTimes by id(view), requests, job ids, request
        # by id(view): None for a COMPLETING job).
        self._whole: tuple | None = None
        # The running jobs' counters, kept while their requests are these same objects.
        self.charges = RunningCharges()

    def shapes(self, policy: Policy, partitions: Mapping[str, PartitionView], default_mem: int) -> dict:
        times = {name: (p.default_time, p.max_time) for name, p in partitions.items()}
        kept = self._kept
        if kept is not None:
            (k_policy, k_times, k_mem), shapes = kept
            if k_policy is policy and k_times == times and k_mem == default_mem and len(shapes) < self.KEPT:
                return shapes
        shapes = {}
        self._kept = ((policy, times, default_mem), shapes)
        return shapes

    # The running jobs' requests of the last pass, kept with the shapes they were built
    # with: job id -> (view, info, request).  A running job's request depends on its view,
    # its info, its shape and, through ``eligible``, the moment: kept while the snapshot
    # hands the same view (the kept snapshot's views are the same objects until their row
    # is written), the info is equal and the shapes are the same dict.
    def running_requests(self, shapes: dict) -> dict[int, _KeptRequest]:
        kept = self._requests
        return kept[1] if kept is not None and kept[0] is shapes else {}

    def keep_running_requests(self, shapes: dict, requests: dict[int, _KeptRequest]) -> None:
        self._requests = (shapes, requests)

    # The last pass's running requests as a whole, and what they were built from: the
    # views (the same objects while their rows are unwritten), the running jobs' infos (the
    # same objects while their rows are unwritten: the adapter's mapping is a kept value,
    # never mutated, made anew with the other entries the same objects), the shapes and the
    # moment.  A request depends on the moment only through
    # ``eligible`` (BeginTime): the same while no BeginTime lies between the two moments.
    def same_running(
        self, shapes: dict, views: Sequence[JobView], infos: Mapping[int, JobLimitsInfo], now: float
    ) -> list[JobRequest] | None:
        kept = self._whole
        if kept is None:
            return None
        k_shapes, k_views, k_infos, k_now, begins, out, k_ids, _by_view = kept
        if k_shapes is not shapes or len(k_views) != len(views):
            return None
        if not all(map(is_, k_views, views)):
            return None
        # Another infos mapping (a job written since: every submission) with the running
        # jobs' entries the same objects: their requests are the same.
        if k_infos is not infos and any(map(is_not, map(k_infos.get, k_ids), map(infos.get, k_ids))):
            return None
        for begin in begins.values():
            if (begin <= k_now) != (begin <= now):
                return None
        return out

    def keep_running(
        self,
        shapes: dict,
        views: Sequence[JobView],
        infos: Mapping[int, JobLimitsInfo],
        now: float,
        out: list[JobRequest] | None,
        *,
        by_view: dict[int, JobRequest | None] | None = None,
    ) -> None:
        if out is None or by_view is None:
            self._whole = None
            return
        begins = {id(v): v.begin_time for v in views if v.begin_time is not None}
        views = tuple(views)
        self._whole = (shapes, views, infos, now, begins, out, tuple(map(_JOB_ID, views)), by_view)

    # The last pass's running requests brought up to date by the views that left and came
    # since (the snapshot's RunningChange), instead of walking every running job: at
    # 10,000 nodes thousands run, and a pass where one started or ended walked them all.
    # Kept requests as same_running keeps them: the shapes the same dict, the staying
    # jobs' infos the same objects, no BeginTime between the two moments.
    def changed_running(
        self,
        shapes: dict,
        change: RunningChange,
        infos: Mapping[int, JobLimitsInfo],
        now: float,
    ) -> tuple[dict[int, JobRequest | None], dict[int, float]] | None:
        """The kept requests by id(view) and BeginTimes of ``change.base`` less the views
        gone, None when they cannot serve (the caller adds those of the views come)."""
        kept = self._whole
        if kept is None:
            return None
        k_shapes, k_views, k_infos, k_now, begins, _out, k_ids, by_view = kept
        if k_shapes is not shapes or k_views is not change.base:
            return None
        gone_ids = {v.job_id for v in change.gone}
        if k_infos is not infos:
            changed = compress(k_ids, map(is_not, map(k_infos.get, k_ids), map(infos.get, k_ids)))
            if not gone_ids.issuperset(changed):
                return None
        for begin in begins.values():
            if (begin <= k_now) != (begin <= now):
                return None
        by_view, begins = by_view.copy(), begins.copy()
        for view in change.gone:
            by_view.pop(id(view), None)
            begins.pop(id(view), None)
        return by_view, begins

    def keep_changed(
        self,
        shapes: dict,
        views: tuple[JobView, ...],
        infos: Mapping[int, JobLimitsInfo],
        now: float,
        found: tuple[dict[int, JobRequest | None], dict[int, float], list[JobRequest]],
    ) -> None:
        by_view, begins, out = found
        self._whole = (shapes, views, infos, now, begins, out, tuple(map(_JOB_ID, views)), by_view)


_JOB_ID = attrgetter("job_id")


class LimitsPlugin(SchedulerPlugin):
    def __init__(
        self,
        policy: Policy,
        *,
        jobs: Mapping[int, JobLimitsInfo] | None = None,
        usage: Mapping[UsageKey, UsageRecord] | None = None,
        bf_min_prio_reserve: int | None = None,
        memo: ShapeMemo | None = None,
    ) -> None:
        self.policy = policy
        self.memo = memo
        self.jobs = jobs or {}
        self.usage = usage or {}
        self.bf_min_prio_reserve = bf_min_prio_reserve
        self.state: LimitState | None = None
        self.kills: tuple[LimitKill, ...] = ()
        self.accrue_start: frozenset[int] = frozenset()
        self._shapes: dict[tuple, JobShape] = {}
        self._pass_shapes: dict[tuple, JobShape] = {}  # those that depend on the nodes' memory
        self._whole_mem: dict[str, int] = {}
        self._node_mem: dict[int, int] | None = None
        self._parts: Mapping[str, PartitionView] = {}
        self._nodes: Sequence[NodeView] = ()
        self._default_mem = 0
        self._now = 0.0

    # -- shapes ------------------------------------------------------------------------

    def _info(self, job: JobView) -> JobLimitsInfo:
        info = self.jobs.get(job.job_id)
        if info is None:
            if not (job.account or job.qos or job.gres):
                return _NO_INFO
            return JobLimitsInfo(account=job.account, qos=job.qos, gres=job.gres)
        return info

    def shape(self, job: JobView, info: JobLimitsInfo | None = None) -> JobShape:
        """The job's TRES as the limits count them: requested for a pending job, held for a
        running one (when the snapshot gives its per-node allocation)."""
        info = info or self._info(job)
        held = bool(job.node_indices) and len(job.alloc_cpus) == len(job.node_indices)
        key = (
            job.partition,
            job.min_nodes,
            len(job.req_nodes),
            job.num_tasks,
            job.cpus_per_task,
            job.mem_per_node,
            job.time_limit,
            info.gres,
            job.licenses,
            sum(job.alloc_cpus) if held else -1,
            sum(job.alloc_mem) if held else -1,
            len(job.node_indices) if held else -1,
            # The shape's per-node figures are the largest node's (MaxTRESPerNode).
            max(job.alloc_cpus) if held else -1,
            max(job.alloc_mem, default=0) if held else -1,
        )
        shapes = self._shapes
        if not held and job.mem_per_node is not None and job.mem_per_node <= 0:
            shapes = self._pass_shapes  # --mem=0: the partition's largest node, this pass
        shape = shapes.get(key)
        if shape is None:
            shape = shapes[key] = self._new_shape(job, info, held)
        return shape

    def _partition_whole_mem(self, partition: str) -> int:
        """The memory of the partition's largest node (``--mem=0``), found when a job asks."""
        found = self._whole_mem.get(partition)
        if found is None:
            if self._node_mem is None:
                self._node_mem = {n.index: n.real_memory for n in self._nodes}
            view = self._parts.get(partition)
            indices = view.node_indices if view is not None else ()
            found = self._whole_mem[partition] = max((self._node_mem.get(i, 0) for i in indices), default=0)
        return found

    def _new_shape(self, job: JobView, info: JobLimitsInfo, held: bool) -> JobShape:
        part = self._parts.get(job.partition)
        limit = resolve_time_limit(job, part)
        gres = gres_tres(info.gres)
        licenses = limit_counts(job.licenses, running=held)
        if held:
            n = len(job.node_indices)
            return make_shape(
                self.policy,
                job.partition,
                cpus=sum(job.alloc_cpus),
                mem=sum(job.alloc_mem),
                nodes=n,
                time_limit=limit,
                cpus_per_node=max(job.alloc_cpus, default=0),
                mem_per_node=max(job.alloc_mem, default=0),
                gres_per_node=gres,
                licenses=licenses,
            )
        n = node_count(job)
        need, charges = cpu_layout(job, n)
        mem = mem_request(job, self._default_mem)
        if mem == WHOLE_MEM:
            mem = self._partition_whole_mem(job.partition)
        return make_shape(
            self.policy,
            job.partition,
            cpus=sum(charges),
            mem=mem * n,
            nodes=n,
            time_limit=limit,
            cpus_per_node=need,
            mem_per_node=mem,
            gres_per_node=gres,
            licenses=licenses,
        )

    def request(self, job: JobView, *, running: bool = False) -> JobRequest:
        info = self._info(job)
        return JobRequest(
            job_id=job.job_id,
            user=job.user,
            account=info.account,
            partition=job.partition,
            qos=info.qos,
            shape=self.shape(job, info),
            submit_time=job.submit_time,
            running=running,
            start_time=job.start_time,
            accrue_time=info.accrue_time,
            usage_factor=info.usage_factor,
            wckey=info.wckey,
            eligible=not job.hold and (job.begin_time is None or job.begin_time <= self._now),
        )

    # -- hooks -----------------------------------------------------------------------------

    def begin_pass(self, snapshot: Snapshot) -> None:
        self._now = snapshot.now
        self._parts = snapshot.partitions
        self._default_mem = snapshot.config.default_mem_per_node
        if self.memo is not None:
            self._shapes = self.memo.shapes(self.policy, snapshot.partitions, self._default_mem)
        else:
            self._shapes = {}
        self._pass_shapes = {}
        self._nodes = snapshot.nodes
        self._node_mem = None
        self._whole_mem = {}
        running = self._running_requests(snapshot.running, snapshot.running_since)
        pending = [self.request(j) for j in snapshot.pending]
        self.state = LimitState(
            self.policy,
            running=running,
            pending=pending,
            usage=self.usage,
            now=snapshot.now,
            kept=self.memo.charges if self.memo is not None else None,
        )
        self.kills = self.state.kills()
        self.accrue_start = self.state.accrue_plan()

    def _running_requests(
        self, jobs: Sequence[JobView], since: RunningChange | None = None
    ) -> list[JobRequest]:
        """The requests of the running jobs (not COMPLETING), those of the last pass reused
        where nothing they depend on changed (ShapeMemo)."""
        if self.memo is None:
            return [self.request(j, running=True) for j in jobs if j.state != JobState.COMPLETING]
        now = self._now
        same = self.memo.same_running(self._shapes, jobs, self.jobs, now)
        if same is not None:
            return same
        if since is not None and since.result is jobs:
            derived = self._running_derived(since)
            if derived is not None:
                return derived
        kept = self.memo.running_requests(self._shapes)
        out, keep, by_view = [], {}, {}
        for job in jobs:
            if job.state == JobState.COMPLETING:
                by_view[id(job)] = None
                continue
            info = self._info(job)
            found = kept.get(job.job_id)
            request = None
            if found is not None and found[0] is job and (found[1] is info or found[1] == info):
                request = found[2]
                eligible = not job.hold and (job.begin_time is None or job.begin_time <= now)
                if request.eligible != eligible:
                    request = None
            if request is None:
                request = self.request(job, running=True)
            held = bool(job.node_indices) and len(job.alloc_cpus) == len(job.node_indices)
            if held or job.mem_per_node is None or job.mem_per_node > 0:
                keep[job.job_id] = (job, info, request)  # its shape is of the kept ones
            out.append(request)
            by_view[id(job)] = request
        self.memo.keep_running_requests(self._shapes, keep)
        # A --mem=0 job's request without its allocation is of this pass only.
        whole = len(keep) == len(out)
        self.memo.keep_running(self._shapes, jobs, self.jobs, now, out if whole else None, by_view=by_view)
        return out

    def _running_derived(self, since: RunningChange) -> list[JobRequest] | None:
        """The running requests from the last pass's by the views gone and come since
        (ShapeMemo.changed_running), None when they cannot be."""
        memo = self.memo
        assert memo is not None
        found = memo.changed_running(self._shapes, since, self.jobs, self._now)
        if found is None:
            return None
        by_view, begins = found
        kept = memo.running_requests(self._shapes).copy()
        for view in since.gone:
            kept.pop(view.job_id, None)
        for job in since.came:
            if job.begin_time is not None:
                begins[id(job)] = job.begin_time
            if job.state == JobState.COMPLETING:
                by_view[id(job)] = None
                continue
            held = bool(job.node_indices) and len(job.alloc_cpus) == len(job.node_indices)
            if not held and job.mem_per_node is not None and job.mem_per_node <= 0:
                return None  # a --mem=0 job's request without its allocation: this pass's
            request = by_view[id(job)] = self.request(job, running=True)
            kept[job.job_id] = (job, self._info(job), request)
        out = [r for r in map(by_view.get, map(id, since.result)) if r is not None]
        memo.keep_running_requests(self._shapes, kept)
        memo.keep_changed(self._shapes, since.result, self.jobs, self._now, (by_view, begins, out))
        return out

    def job_gate(self, job: JobView, partition: PartitionView) -> Blocked | None:
        assert self.state is not None, "begin_pass first"
        info = self._info(job)
        block = self.state.check(job.user, info.account, job.partition, info.qos, self.shape(job, info))
        return None if block is None else Blocked(block.reason, block.detail)

    def on_start(self, job: JobView, start: Start) -> None:
        assert self.state is not None, "begin_pass first"
        info = self._info(job)
        held = JobView(
            job_id=job.job_id,
            partition=job.partition,
            user=job.user,
            submit_time=job.submit_time,
            time_limit=start.time_limit or 0,
            licenses=job.licenses,
            node_indices=start.node_indices,
            alloc_cpus=start.cpus_per_node,
            alloc_mem=start.mem_per_node,
        )
        shape = self.shape(held, info)
        self.state.charge_start(
            JobRequest(
                job_id=job.job_id,
                user=job.user,
                account=info.account,
                partition=job.partition,
                qos=info.qos,
                shape=shape,
                accrue_time=info.accrue_time,
            )
        )

    def exempt_partition_limit(self, job: JobView, reason: str) -> bool:
        """The job QOS's PartitionTimeLimit / PartitionMaxNodes / PartitionMinNodes flags:
        the QOS (or association) bound replaces the partition's, checked in job_gate."""
        info = self._info(job)
        plan = self.policy.plan(job.user, info.account, job.partition, info.qos)
        q = plan.job_qos if plan.error is None else None
        if q is None:
            return False
        if reason == PARTITION_TIME_LIMIT:
            return q.has("PartitionTimeLimit")
        if reason == PARTITION_NODE_LIMIT:
            return q.has("PartitionMaxNodes") or q.has("PartitionMinNodes")
        return False

    def may_reserve(self, job: JobView, priority: int) -> bool:
        """MinPrioThreshold: may backfill plan a reservation for ``job`` at ``priority``?"""
        info = self._info(job)
        plan = self.policy.plan(job.user, info.account, job.partition, info.qos)
        threshold = plan.min_prio_threshold if plan.error is None else None
        return may_reserve(priority, threshold, self.bf_min_prio_reserve)


__all__ = ["JobLimitsInfo", "LimitsPlugin", "ShapeMemo"]
