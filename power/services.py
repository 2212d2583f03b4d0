"""Power saving's adapter: ORM snapshot → pure core (``power.core.policy``) → one transaction.

Entry points (each one service, used by the cycles, the agent endpoint, the scheduler
pass, the REST API, the console and the tests):

* :func:`check_config` / :func:`config_loaded` -- validate the power keys on the one
  reconfigure path (``cluster.services.configuration.config_load``) and reset the
  controller-wide state when a configuration is applied.
* :func:`power_pass` -- the power-save cycle (a cycle of the power extension).
* :func:`node_registering` -- an agent registers a node (before its new boot time is
  stored): end of POWERING_UP, or "Node unexpectedly rebooted".
* :func:`jobs_allocated` -- the scheduler started jobs: those with powered-down nodes
  wait CONFIGURING and their nodes are asked to power up.
* :func:`nodes_freed` -- jobs ended: last-busy times and PowerDownOnIdle.
* :func:`power_request` -- ``scontrol power ...`` / ``scontrol update State=POWER_*``
  (staff only, audited).
* :func:`agent_power_action_done` -- a ``Location=slurmd`` PowerAction ended on a node.

Programs are started only after the transaction that decided them commits, as real
processes (``power.core.programs``), and each run is a :class:`power.models.PowerRun`.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import partial

from auditlog.context import set_actor
from ClusterShell.NodeSet import NodeSet, NodeSetParseError
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import close_old_connections, transaction

from cluster import clock, extensions, publish, triggers
from cluster.core.hostlists import fold
from cluster.core.scheduler import Snapshot, parse_constraint
from cluster.core.sharing import exclusive_text, oversubscribe_text
from cluster.core.slurmconf import ConfigError, SlurmConfig, load_slurm_conf
from cluster.core.states import HOLDING_JOB_STATES, JobState, NodeBase, NodeFlag
from cluster.models import ClusterConfig, Event, Job, Node, Partition
from cluster.services import pass_snapshot, scheduler_params
from cluster.services import rows as plain_rows
from cluster.services.configuration import conf_path
from cluster.services.errors import PermissionDenied, ServiceError
from cluster.services.state import (
    end_job,
    fail_job,
    launch_configured,
    record_transition,
    refresh_usage,
    requeue_now,
    set_node_state,
)
from power import cycle_input
from power.core import programs
from power.core.config import (
    Exclusions,
    PowerConfig,
    PowerProgram,
    auto_enabled_at_load,
    cycle_due,
    exclusions_after_reconfigure,
    executable_check,
    low_memory_reason,
    node_suspend_time_change,
    parse_exc_nodes,
    parse_exc_parts,
    parse_exc_states,
    parse_seconds,
    power_config,
)
from power.core.features import (
    NodeFeatures,
    active_at_allocation,
    active_at_load,
    active_when_powered_down,
    join_features,
    load_node_features,
    reported_features_problem,
    split_features,
)
from power.core.policy import (
    POWER_FLAGS,
    RESUME_TIMEOUT_REASON,
    CancelJobs,
    Decision,
    LaunchJobs,
    MarkDown,
    NodeChange,
    NodeFailJobs,
    PowerJob,
    PowerNode,
    PowerRequestError,
    RateState,
    RequeueJobs,
    ResumeFailed,
    ResumeNodes,
    SuspendNodes,
    on_allocation,
    on_node_idle,
    on_registration,
    parse_power_command,
    power_cycle,
)
from power.core.policy import power_request as core_power_request
from power.instances import instance_reported
from power.membership import partition_membership
from power.models import NodePowerActions, PowerRun, PowerState
from slurmwords.agent_messages import Cancel, PowerAction

log = logging.getLogger(__name__)

SYSTEM_USER = "slurm"  # who the controller's own state changes are recorded as
_WAITING = NodeFlag.POWERED_DOWN | NodeFlag.POWERING_UP | NodeFlag.POWER_UP

# --------------------------------------------------------------------------- configuration

_cache_lock = threading.Lock()
_cache: tuple[int, PowerConfig] | None = None


def check_config(conf: SlurmConfig) -> PowerConfig:
    """The power keys of a parsed configuration, validated with the program files
    checked on this host, and helpers.conf when NodeFeaturesPlugins is set;
    :class:`ConfigError` lists every problem (of both files) as ``file:line``."""
    problems = []
    power = None
    try:
        power = power_config(conf, program_check=executable_check)
    except ConfigError as exc:
        problems += exc.problems
    try:
        features = load_node_features(conf, program_check=executable_check)
    except ConfigError as exc:
        problems += exc.problems
    if problems or power is None:
        raise ConfigError(problems)
    return replace(power, node_features=features)


def config_loaded(power: PowerConfig, *, version: int) -> None:
    """A configuration was applied (inside config_load's transaction): remember it, and
    recompute the sticky "automatic power saving" flag (a reconfigure resets it)."""
    global _cache  # noqa: PLW0603 - one cache per process
    runtime = Node.objects.filter(in_conf=False).values_list("suspend_time", flat=True)
    state = PowerState.current()
    running = exclusions_from_text(state.exclusions) if state.exclusions is not None else power.exclusions
    state.exclusions = exclusions_text(exclusions_after_reconfigure(running, power))
    _show_exclusions(state.exclusions)
    state.config_version = version
    state.auto_enabled = auto_enabled_at_load(power, runtime)
    state.dirty = True
    state.save()
    _features_at_load(power.node_features)
    with _cache_lock:
        _cache = (version, power)


def _features_at_load(features: NodeFeatures | None) -> None:
    """Active features after a (re)configure.  Without NodeFeaturesPlugins every feature
    is always active; with it, changeable ones are active only where a powered-up node
    already had them (Slurm's power_save.html, "Node Features")."""
    changed = []
    # Five columns, no model instances: at 10,000 nodes building them was most of this.
    rows = plain_rows.select(Node, ("id", "name", "features", "active_features", "flags"))
    for pk, name, available_text, active_text, flags in rows:
        available = split_features(available_text)
        if features is None:
            active = available
        else:
            active = active_at_load(
                available,
                split_features(active_text),
                features.changeable(name),
                powered_down=bool(flags & NodeFlag.POWERED_DOWN),
            )
        text = join_features(active, available_text)
        if text != active_text:
            changed.append(Node(pk=pk, active_features=text))
    Node.objects.bulk_update(changed, ["active_features"], batch_size=500)


def settings_in_force() -> PowerConfig:
    """The power configuration of the configuration in force (re-read by a process that
    did not load it itself, e.g. a Celery worker after a reconfigure elsewhere)."""
    global _cache  # noqa: PLW0603
    # The kept configuration row: every power-save cycle asks (twice), most of them quiet.
    version = scheduler_params.config().version
    with _cache_lock:
        if _cache is not None and _cache[0] == version:
            return _cache[1]
    try:
        power = check_config(load_slurm_conf(conf_path()))
    except (ConfigError, OSError) as exc:
        # The file changed after it was loaded and is now bad: keep what we had.
        log.error("power configuration could not be re-read: %s", exc)
        with _cache_lock:
            return _cache[1] if _cache is not None else PowerConfig()
    with _cache_lock:
        _cache = (version, power)
    return power


# --------------------------------------------------------------------------- snapshots


def _epoch(dt: datetime | None) -> float | None:
    return dt.timestamp() if dt else None


def _dt(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


def unrunnable_actions(names: Iterable[str] | None = None) -> dict[str, tuple[tuple[str, str], ...]]:
    """Node -> the Location=slurmd PowerActions its agent reported it cannot run, with why."""
    rows = (
        NodePowerActions.objects.all() if names is None else NodePowerActions.objects.filter(node__in=names)
    )
    out = {}
    for row in rows:
        bad = row.unrunnable()
        if bad:
            out[row.node] = tuple(sorted(bad.items()))
    return out


def power_node(
    node: Node,
    partitions: Mapping[str, tuple[str, ...]],
    *,
    now: float,
    loaded: float,
    unrunnable: Mapping[str, tuple[tuple[str, str], ...]] | None = None,
) -> PowerNode:
    return power_node_of(
        cycle_input.power_row(node), partitions, now=now, loaded=loaded, unrunnable=unrunnable
    )


def power_node_of(
    row: tuple,
    partitions: Mapping[str, tuple[str, ...]],
    *,
    now: float,
    loaded: float,
    unrunnable: Mapping[str, tuple[tuple[str, str], ...]] | None = None,
) -> PowerNode:
    """The core's view of a node from its cycle_input.POWER_FIELDS."""
    _id, name, base, flags, weight, last_busy, suspend_time, entered, boot_time, action, reason = row
    busy = _busy(base, flags)
    return PowerNode(
        name=name,
        base=base,
        flags=flags,
        partitions=partitions.get(name, ()),
        weight=weight,
        last_busy=now if busy else (_epoch(last_busy) or loaded),
        suspend_time=suspend_time,
        power_entered=_epoch(entered),
        boot_time=_epoch(boot_time),
        power_action=action or None,
        reason=reason,
        unrunnable=(unrunnable or {}).get(name, ()),
    )


def _busy(base: str, flags: int) -> bool:
    """A node busy is last busy now."""
    return base in (NodeBase.ALLOCATED, NodeBase.MIXED) or bool(flags & NodeFlag.COMPLETING)


# The last cycle's views of the nodes not busy, by id(row) (the row, its partitions, the
# load time, its unrunnable actions, the view): a view depends on those alone, and the
# kept rows (cycle_input.locked_rows) are the same objects while a node is not written.
# At 10,000 nodes a cycle made thousands of views of the same idle nodes again.
_views_kept: dict[int, tuple[tuple, tuple[str, ...], float, tuple, PowerNode]] = {}


def _cycle_views(
    rows: Iterable[tuple],
    partitions: Mapping[str, tuple[str, ...]],
    *,
    now: float,
    loaded: float,
    unrunnable: Mapping[str, tuple[tuple[str, str], ...]],
) -> list[PowerNode]:
    """power_node_of for each row, the last cycle's view where it is the same."""
    global _views_kept  # noqa: PLW0603 - one per process, replaced whole
    kept, fresh, out = _views_kept, {}, []
    for row in rows:
        name = row[1]
        parts, unrun = partitions.get(name, ()), unrunnable.get(name, ())
        found = kept.get(id(row))
        if (
            found is not None
            and found[0] is row
            and found[1] is parts
            and found[2] == loaded
            and found[3] == unrun
        ):
            view = found[4]
        else:
            view = power_node_of(row, partitions, now=now, loaded=loaded, unrunnable=unrunnable)
        if not _busy(row[2], row[3]):
            fresh[id(row)] = (row, parts, loaded, unrun, view)
        out.append(view)
    _views_kept = fresh
    return out


def power_job(job: Job) -> PowerJob:
    return PowerJob(
        job_id=job.id,
        nodes=tuple(job.alloc),
        state=job.state,
        partition=job.partition,
        requeue=job.requeue,
        reservation=job.reservation,
        features=job.features,
        exclusive=exclusive_text(job.exclusive),
        oversubscribe=oversubscribe_text(job.exclusive, job.oversubscribe),
        extra=job.extra,
        layout=job.layout,
    )


# The fields power_job reads. A whole Job row (its JSON fields decoded) cost ~10 ms a
# power cycle for fifty running jobs, profiled in the simulator; the rest is never read here.
_POWER_JOB_FIELDS = (
    "id", "alloc", "state", "partition", "requeue", "reservation",
    "features", "exclusive", "oversubscribe", "extra", "layout",
)  # fmt: skip


def _holding_jobs(names: Iterable[str] | None = None) -> list[Job]:
    holding = Job.objects.filter(state__in=[s.value for s in HOLDING_JOB_STATES])
    jobs = list(holding.only(*_POWER_JOB_FIELDS))
    if names is None:
        return jobs
    wanted = set(names)
    return [j for j in jobs if wanted.intersection(j.alloc)]


def _cycle_input(
    power: PowerConfig, *, now: float, loaded: float, auto: bool, exclusions: Exclusions
) -> tuple[dict[str, tuple], list[Job]]:
    """The power-save cycle's nodes (locked; their cycle_input.POWER_FIELDS by name) and the
    jobs holding them: only those that can take part in a decision (power.cycle_input);
    none, read from the kept watch, when no node can."""
    found = pass_snapshot.kept_value("power.cycle_watch", (Node, Job, Partition), cycle_input.watch)
    if cycle_input.quiet(found, power, now=now, loaded=loaded, auto=auto, exclusions=exclusions):
        return {}, []
    holding = cycle_input.holding_allocs()
    names = cycle_input.cycle_node_names(
        power, now=now, loaded=loaded, auto=auto, exclusions=exclusions, holding=holding
    )
    rows = cycle_input.locked_rows(names)
    return rows, cycle_input.jobs_holding(set(rows), holding, _POWER_JOB_FIELDS)


def _loaded() -> float:
    return _epoch(scheduler_params.config().loaded_at) or 0.0


# --------------------------------------------------------------------------- applying


def describe(decision: Decision) -> str:
    """One log line for a decision (DebugFlags=Power)."""
    name = type(decision).__name__
    nodes = getattr(decision, "nodes", None)
    if nodes is not None:
        return f"{name} {fold(nodes)}"
    node = getattr(decision, "node", None)
    if node is not None:
        return f"{name} {node} {getattr(decision, 'reason', '') or ''}".rstrip()
    ids = getattr(decision, "job_ids", ())
    return f"{name} jobs {','.join(str(i) for i in ids)}"


@dataclass
class _Apply:
    """Applies decisions to locked Node rows; programs start after the commit."""

    power: PowerConfig
    nodes: dict[str, Node]
    now: datetime
    user: str = SYSTEM_USER

    def __post_init__(self) -> None:
        self.changed: dict[str, Node] = {}
        self.usage: set[str] = set()
        self.timed_out: list[str] = []

    def run(self, decisions: Iterable[Decision]) -> None:
        for d in decisions:
            if self.power.debug_power:
                # DebugFlags=Power: every decision of the power cycle, as slurmctld logs them.
                log.info("power_save: %s", describe(d))
            if isinstance(d, NodeChange):
                self.node_change(d)
            elif isinstance(d, SuspendNodes):
                self.program(PowerRun.Kind.SUSPEND, d.program, d.nodes)
            elif isinstance(d, ResumeNodes):
                self.program(PowerRun.Kind.RESUME, d.program, d.nodes, jobs=d.jobs, resume_file=d.resume_file)
            elif isinstance(d, ResumeFailed):
                self.program(PowerRun.Kind.RESUME_FAIL, d.program, d.nodes)
            elif isinstance(d, MarkDown):
                log.warning("node %s set DOWN: %s", d.node, d.reason)
                if d.reason == RESUME_TIMEOUT_REASON:
                    self.timed_out.append(d.node)
            elif isinstance(d, RequeueJobs):
                self.end_jobs(d.job_ids, requeue=True, why=d.reason)
            elif isinstance(d, CancelJobs):
                self.end_jobs(d.job_ids, requeue=False, why=d.reason)
            elif isinstance(d, NodeFailJobs):
                self.fail_jobs(d.job_ids, why=d.reason)
            elif isinstance(d, LaunchJobs):
                launch_jobs(d.job_ids, now=self.now)
        if self.timed_out:
            _resume_failed(self.timed_out, self.power, now=self.now)
            # A node that failed to resume returns to its configured HRES layers.
            extensions.nodes_reset(self.timed_out, actor=self.user, now=self.now)
        for node in self.changed.values():
            node.save()
        if self.usage or self.changed:
            refresh_usage(self.usage | set(self.changed))
            publish.console_changed("nodes", "power")

    def node_change(self, change: NodeChange) -> None:
        node = self.nodes.get(change.node)
        if node is None:
            node = Node.objects.select_for_update().get(name=change.node)
            self.nodes[node.name] = node
        apply_node_change(node, change, now=self.now, user=self.user)
        self.changed[node.name] = node

    def program(
        self,
        kind: str,
        program: PowerProgram | None,
        nodes: Sequence[str],
        *,
        jobs: Sequence[int] = (),
        resume_file: str | None = None,
    ) -> None:
        if program is None or not nodes:
            return  # none configured: the state change is all there is
        for inv in program.invocations(nodes):
            run = PowerRun.objects.create(
                kind=kind,
                program=program.label,
                argv=list(inv.argv),
                nodes=fold(nodes) if inv.host is None else inv.host,
                host=inv.host or "",
                jobs=list(jobs),
                started=self.now,
            )
            if inv.host is None:
                text = resume_file if kind == PowerRun.Kind.RESUME else None
                transaction.on_commit(partial(_spawn, run.pk, inv.argv, inv.env, text))
            elif why := self.cannot_run(inv.host, program):
                # Its agent said it cannot run this program: recorded as failed, never sent.
                log.error(
                    "power run %d: %s cannot run PowerAction %s: %s", run.pk, inv.host, program.label, why
                )
                run.ended, run.exit_code = self.now, 127
                run.failure = f"{inv.host} cannot run PowerAction {program.label} ({program.path}): {why}"[
                    :512
                ]
                run.save(update_fields=["ended", "exit_code", "failure"])
            else:
                action = PowerAction(
                    run_id=run.pk,
                    node=inv.host,
                    # The agent runs only programs its own slurm.conf names: the action's
                    # name finds it there; argv is what the agent checks it against.
                    action=program.action or "",
                    argv=list(inv.argv),
                    env=dict(inv.env),
                )
                publish.to_agent(inv.host, action.to_wire())

    def cannot_run(self, host: str, program: PowerProgram) -> str | None:
        if program.action is None:
            return None
        row = NodePowerActions.objects.filter(node=host).first()
        return row.unrunnable().get(program.action) if row is not None else None

    def fail_jobs(self, ids: Sequence[int], *, why: str) -> None:
        for job in Job.objects.select_for_update().filter(pk__in=list(ids)):
            if job.state not in HOLDING_JOB_STATES:
                continue
            self.usage.update(job.alloc)
            fail_job(job, now=self.now, why=why)

    def end_jobs(self, ids: Sequence[int], *, requeue: bool, why: str) -> None:
        for job in Job.objects.select_for_update().filter(pk__in=list(ids)):
            if job.state not in HOLDING_JOB_STATES:
                continue
            self.usage.update(job.alloc)
            old = job.state
            if job.launched and job.batch_host:
                # Its processes may still run on a powered-up node: kill them there.
                publish.to_agent(job.batch_host, Cancel(job_id=job.id, kill_wait=0).to_wire())
            if requeue and job.requeue:
                requeue_now(job, now=self.now)
                record_transition(job, old, now=self.now, why=why, user=self.user)
                publish.console_changed("jobs")
            else:
                end_job(job, JobState.CANCELLED, now=self.now, why=why, user=self.user)


def apply_node_change(node: Node, change: NodeChange, *, now: datetime, user: str = SYSTEM_USER) -> None:
    """Write one core NodeChange on a Node (unsaved), recording the state transition."""
    flags = (node.flags & ~change.clear_flags) | change.set_flags
    if flags & (NodeFlag.POWERING_DOWN | NodeFlag.POWERED_DOWN) and not flags & NodeFlag.POWERING_UP:
        # A powered-down node is neither pinged nor able to register: NoResp would stick
        # (Slurm's power_save.html, the RESUME note).  It registers again when it powers up.
        flags &= ~NodeFlag.NOT_RESPONDING
    if change.set_flags & NodeFlag.POWERED_DOWN and not node.flags & NodeFlag.POWERED_DOWN:
        # Powered down, the node returns to its configured HRES layers (Slurm's hres.html).
        extensions.nodes_reset([node.name], actor=user, now=now)
        # Powered down, changeable features are available but no longer active.
        features = settings_in_force().node_features
        if features is not None:
            active = active_when_powered_down(split_features(node.features), features.changeable(node.name))
            node.active_features = join_features(active, node.features)
    if change.power_entered is not None:
        node.power_entered = _dt(change.power_entered)
    if change.last_busy is not None:
        node.last_busy = _dt(change.last_busy)
    if change.action is not None:
        node.power_action = change.action
    set_node_state(
        node,
        base=change.base,
        add=NodeFlag(flags & ~node.flags),
        remove=NodeFlag(node.flags & ~flags),
        reason=change.reason,
        user=user,
        now=now,
        detail={"power": True},
    )


LAUNCHING: ContextVar[bool] = ContextVar("power_launching", default=False)


def launch_jobs(ids: Sequence[int], *, now: datetime) -> list[int]:
    """CONFIGURING → RUNNING (conditional: a launch already done is not repeated); only
    now is the launch sent to the batch host's agent."""

    launched = []
    # Power saving decided these nodes are up (at a registration, before the node's row
    # is saved): its own launch_ready need not look at their flags again.
    token = LAUNCHING.set(True)
    try:
        for job in Job.objects.select_for_update().filter(pk__in=list(ids), state=JobState.CONFIGURING):
            if launch_configured(job, now=now, why="nodes powered up"):
                launched.append(job.id)
    finally:
        LAUNCHING.reset(token)
    if launched:
        publish.console_changed("jobs")
    return launched


def _resume_failed(nodes: Sequence[str], power: PowerConfig, *, now: datetime) -> None:
    """Note on the resume runs of these nodes why they failed (the console shows it)."""
    left = set(nodes)
    parts = partition_membership()
    for run in PowerRun.objects.filter(kind=PowerRun.Kind.RESUME, failure="").order_by("-started")[:200]:
        try:
            hit = left.intersection(NodeSet(run.nodes))
        except NodeSetParseError:
            continue
        if not hit:
            continue
        timeout = max(power.effective_resume_timeout(parts.get(n, ())) for n in hit)
        run.failure = f"{RESUME_TIMEOUT_REASON}: {fold(sorted(hit))} did not register within {timeout} s"
        run.save(update_fields=["failure"])
        left -= hit
        if not left:
            break


# --------------------------------------------------------------------------- programs

_spawner_lock = threading.Lock()
_spawner: programs.Spawner | None = None


def spawner() -> programs.Spawner:
    """The process's spawner: programs run in the configuration directory (so a demo's
    relative program arguments resolve there), with the controller's environment and the
    ``fsched`` command on PATH."""
    global _spawner  # noqa: PLW0603 - one per process
    with _spawner_lock:
        if _spawner is None:
            env = dict(os.environ)
            bindir = os.path.dirname(sys.executable)
            env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
            env.setdefault("FSCHED_STATE_DIR", str(settings.STATE_DIR))
            env.setdefault("FSCHED_CONF_DIR", str(settings.CONF_DIR))
            env.setdefault("FSCHED_AGENT_KEY", settings.FSCHED_AGENT_KEY)
            _spawner = programs.Spawner(
                _record_exit, cwd=settings.CONF_DIR, env=env, resume_dir=settings.STATE_DIR / "power"
            )
        return _spawner


def install_spawner(replacement: programs.Spawner | None) -> None:
    """Use ``replacement`` for every program from now on (the simulator's, whose programs
    power virtual nodes up and down on its clock); None: a real one again when next needed."""
    global _spawner  # noqa: PLW0603
    with _spawner_lock:
        _spawner = replacement


def _spawn(run_id: int, argv: Sequence[str], env: Sequence[tuple[str, str]], resume_file: str | None) -> None:
    try:
        pid = spawner().spawn(run_id, argv, env=env, resume_file=resume_file)
    except programs.SpawnError as exc:
        log.error("power run %d: %s", run_id, exc)
        PowerRun.objects.filter(pk=run_id).update(
            ended=clock.now(), exit_code=127, failure=f"could not start: {exc.strerror or exc}"
        )
        publish.console_changed("power")
        return
    PowerRun.objects.filter(pk=run_id).update(pid=pid)


def _record_exit(run_id: int, code: int, ended: float) -> None:
    """A reaper thread: the program ended."""
    try:
        _finish_run(run_id, code, _dt(ended), error="")
    finally:
        close_old_connections()


def _finish_run(run_id: int, code: int, ended: datetime, *, error: str) -> None:
    run = PowerRun.objects.filter(pk=run_id).first()
    if run is None or run.ended is not None:
        return
    run.ended = ended
    run.exit_code = code
    if error:
        run.failure = error[:512]
    elif code != 0 and not run.failure:
        run.failure = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
    run.save(update_fields=["ended", "exit_code", "failure"])
    publish.console_changed("power")


def agent_power_action_done(
    *, run_id: int, exit_code: int, error: str = "", end_time: float | None = None
) -> None:
    """A ``Location=slurmd`` program ended on its node (agent message ``power_action_done``)."""
    _finish_run(run_id, int(exit_code), _dt(end_time) if end_time else clock.now(), error=error)


def shutdown(limit: float | None = None) -> list[int]:
    """Graceful controller shutdown: wait for spawned programs up to the limit of Slurm's
    power_save.html (ten seconds, or the larger timeout if less), then remove the resume files."""
    if _spawner is None:
        return []
    if limit is None:
        power = _cache[1] if _cache is not None else PowerConfig()
        limit = programs.shutdown_wait_limit(power.suspend_timeout, power.resume_timeout)
    left = _spawner.wait_all(limit)
    _spawner.close()
    return left


# --------------------------------------------------------------------------- the cycle


def _rates(data: Mapping[str, object]) -> RateState:
    return RateState(
        tuple(float(t) for t in data.get("suspends", ()) or ()),  # type: ignore[union-attr]
        tuple(float(t) for t in data.get("resumes", ()) or ()),  # type: ignore[union-attr]
    )


def mark_dirty() -> None:
    """Node states changed in a way the power cycle should see soon."""
    PowerState.objects.filter(pk=1).update(dirty=True)
    triggers.power_after_commit()


def power_save_cycle() -> str:
    """The power-save cycle, every power_save_interval (slurm.conf's, or the row's)."""
    return power_pass(force=True)


def _state_row(*, for_update: bool = False) -> PowerState:
    """The controller-wide power state, read without compiling a query (every cycle reads
    it, and the simulator runs one every power_save_interval)."""
    found = plain_rows.load(PowerState, None, {"pk": 1}, for_update=for_update)
    return found[0] if found else PowerState.current()


def power_change_cycle() -> str:
    """The power-save cycle sooner after node states changed (power_save_min_interval)."""
    state = _state_row()
    last = _epoch(state.last_run)
    if last is None:
        return power_pass(force=True)
    elapsed = clock.now().timestamp() - last
    if not state.dirty or elapsed < settings_in_force().power_save_min_interval:
        return "not due"
    return power_pass(force=True)


def power_pass(*, now: datetime | None = None, force: bool = False) -> str:
    """One power-save cycle when due (``power_save_interval``, sooner after a change)."""
    now = now or clock.now()
    power = settings_in_force()
    state = _state_row()
    t = now.timestamp()
    if not force and not cycle_due(power, now=t, last_run=_epoch(state.last_run), state_changed=state.dirty):
        return "not due"
    quiet = _quiet_pass(power, state, now)
    if quiet is not None:
        return quiet
    with transaction.atomic():
        loaded = _loaded()
        chosen_by = (state.auto_enabled, exclusions_in_force(power, state))
        rows, held = _cycle_input(power, now=t, loaded=loaded, auto=chosen_by[0], exclusions=chosen_by[1])
        # The lock order of every writer (docs/locking.md): the nodes by name, then this
        # row, which a registration, a completion or a pass marks dirty after its nodes.
        state = _state_row(for_update=True)
        # The nodes were chosen from the row as read before the lock: an scontrol update
        # in between keeps the cycle dirty, so that it runs again with its nodes.
        stale = chosen_by != (state.auto_enabled, exclusions_in_force(power, state))
        nodes = []
        if rows:
            parts = partition_membership()
            unrunnable = unrunnable_actions(list(rows) if len(rows) <= cycle_input.NAMES_AT_ONCE else None)
            nodes = _cycle_views(rows.values(), parts, now=t, loaded=loaded, unrunnable=unrunnable)
        jobs = [power_job(j) for j in held]
        result = power_cycle(
            power,
            nodes,
            jobs,
            now=t,
            rates=_rates(state.rates),
            exclusions=exclusions_in_force(power, state),
            auto_enabled=state.auto_enabled,
        )
        # Whole rows for the nodes the decisions change only (already locked above).
        changed = {d.node for d in result.decisions if isinstance(d, NodeChange)}
        _Apply(power, cycle_input.locked_nodes(changed), now).run(result.decisions)
        state.rates = {"suspends": list(result.rates.suspends), "resumes": list(result.rates.resumes)}
        state.last_run = now
        state.dirty = stale
        # The rest of the row is as read under its lock.
        plain_rows.update_rows([state], ("rates", "last_run", "dirty"))
    if result.decisions:
        triggers.schedule_after_commit()
    return (
        f"decisions={len(result.decisions)} deferred_suspends={len(result.deferred_suspends)} "
        f"deferred_resumes={len(result.deferred_resumes)}"
    )


def _quiet_pass(power: PowerConfig, state: PowerState, now: datetime) -> str | None:
    """The cycle when it can decide nothing (cycle_input.quiet), as one statement outside
    a transaction: its rates pruned, its time and a clean row written only if the row is
    still as read (no cycle ran, nothing marked it dirty, automatic power saving is as it
    was), else None and the whole cycle runs.  Most cycles are these (1,310 of 1,531 in
    the simulator's bench), and each took a transaction of its own with the row read
    again under a lock."""
    if state.dirty:
        return None
    t = now.timestamp()
    auto, exclusions = state.auto_enabled, exclusions_in_force(power, state)
    found = pass_snapshot.kept_value("power.cycle_watch", (Node, Job, Partition), cycle_input.watch)
    if not cycle_input.quiet(found, power, now=t, loaded=_loaded(), auto=auto, exclusions=exclusions):
        return None
    result = power_cycle(
        power, [], [], now=t, rates=_rates(state.rates), exclusions=exclusions, auto_enabled=auto
    )
    if result.decisions:
        return None
    rates = {"suspends": list(result.rates.suspends), "resumes": list(result.rates.resumes)}
    # The exclusions change only with the row marked dirty, the rates only with last_run.
    still = {"pk": 1, "dirty": False, "auto_enabled": auto, "last_run": state.last_run}
    if not plain_rows.update_where(PowerState, {"rates": rates, "last_run": now, "dirty": False}, still):
        return None
    return (
        f"decisions=0 deferred_suspends={len(result.deferred_suspends)} "
        f"deferred_resumes={len(result.deferred_resumes)}"
    )


# --------------------------------------------------------------------------- hooks


def node_registering(node: Node, *, boot_time: float | None, now: datetime) -> None:
    """An agent registers ``node`` (a locked row, saved by the caller), called before its
    new boot time is stored: the end of a power up, or an unexpected reboot."""
    down_after_resume = node.base_state == NodeBase.DOWN and node.reason == RESUME_TIMEOUT_REASON
    if not (node.flags & POWER_FLAGS or down_after_resume):
        return
    power = settings_in_force()
    t = now.timestamp()
    parts = partition_membership()
    loaded = _loaded()
    jobs = [power_job(j) for j in _holding_jobs([node.name])]
    all_nodes = None
    if power.fast_power_up_launch:
        names = {n for j in jobs for n in j.nodes}
        all_nodes = {
            n.name: power_node(n, parts, now=t, loaded=loaded) for n in Node.objects.filter(name__in=names)
        }
    decisions = on_registration(
        power,
        power_node(node, parts, now=t, loaded=loaded),
        jobs,
        boot_time=boot_time if boot_time is not None else t,
        now=t,
        all_nodes=all_nodes,
    )
    if decisions:
        _Apply(power, {node.name: node}, now).run(decisions)
        mark_dirty()


def node_reported(node: Node, info: Mapping[str, object], *, now: datetime) -> list[str]:
    """An agent's report of a registering node (a locked row): keep which Location=slurmd
    PowerActions it can run, and return why the registration is invalid, in Slurm's words:
    too little memory for ``node_reg_mem_percent``, or Helper-reported active features
    that miss some of the node's active changeable ones (power_save.html, "Node Features")."""
    actions = info.get("power_actions")
    if isinstance(actions, Mapping):
        NodePowerActions.objects.update_or_create(
            node=node.name,
            defaults={"actions": {str(k): str(v) for k, v in actions.items()}, "reported": now},
        )
        bad = {k: v for k, v in actions.items() if v}
        if bad:
            log.warning("node %s cannot run PowerAction %s", node.name,
                        "; ".join(f"{k}: {v}" for k, v in sorted(bad.items())))  # fmt: skip
    _instance_from(node, info, now=now)
    power = settings_in_force()
    problems = []
    reported_mb = info.get("real_memory")
    if isinstance(reported_mb, int):
        low = low_memory_reason(
            power,
            configured_mb=node.real_memory,
            reported_mb=reported_mb,
            cloud=bool(node.flags & NodeFlag.CLOUD),
        )
        if low:
            problems.append(low)
    reported = info.get("active_features")  # what the node's Helpers report
    if power.node_features is not None and isinstance(reported, str):
        wrong = reported_features_problem(
            split_features(reported),
            split_features(node.active_features),
            power.node_features.changeable(node.name),
        )
        if wrong:
            problems.append(wrong)
    return problems


# A node's cloud accounting fields (scontrol update names / register keys) -> Node field.
CLOUD_FIELDS = {"instance_id": "instance_id", "instance_type": "instance_type", "extra": "extra_text"}


def _instance_from(node: Node, given: Mapping[str, object], *, now: datetime) -> None:
    """Cloud accounting: the instance the node will have once ``given`` (a registration's
    report, an update's fields; an absent or None value keeps the node's) is stored."""
    if not any(given.get(k) is not None for k in CLOUD_FIELDS):
        return
    new = {k: getattr(node, f) if given.get(k) is None else str(given[k]) for k, f in CLOUD_FIELDS.items()}
    instance_reported(node.name, **new, now=now)


def cloud_fields_update(nodes: Sequence[Node], fields: Mapping[str, object], *, now: datetime) -> None:
    """``scontrol update NodeName=... InstanceId= InstanceType= Extra=`` (before the save)."""
    for node in nodes:
        _instance_from(node, fields, now=now)


def scheduling_snapshot(snap: Snapshot) -> Snapshot:
    """The scheduler's view with power: a powered-down node is usable (a job allocated to
    it resumes it) when power saving can run, and unusable when no programs exist."""
    ready = settings_in_force().ready
    nodes = []
    changed = False
    # Plain ints: enum's & is Python code, run here for every node of every pass.
    powered_down, not_responding = int(NodeFlag.POWERED_DOWN), int(NodeFlag.NOT_RESPONDING)
    for view in snap.nodes:
        n = view
        if n.flags & powered_down:
            flags = n.flags & ~not_responding if ready else n.flags | not_responding
            if flags != n.flags:
                n = replace(n, flags=flags)
                changed = True
        nodes.append(n)
    return replace(snap, nodes=tuple(nodes)) if changed else snap


def jobs_allocated(allocations: Mapping[int, Sequence[str]], *, now: datetime) -> set[int]:
    """The scheduler starts these jobs on these nodes (inside its transaction): returns
    the jobs that must wait CONFIGURING for nodes to power up, and asks those nodes to."""
    names = {n for hosts in allocations.values() for n in hosts}
    # Most allocations wait for nothing: their flags alone say so (read without the ORM).
    flagged = [
        name
        for name, flags in plain_rows.select(
            Node, ("name", "flags"), {"name": list(names)}, order_by=("name",), for_update=True
        )
        if flags & (_WAITING | NodeFlag.NOT_RESPONDING)
    ]
    if not flagged:
        return set()
    rows = {n.name: n for n in Node.objects.select_for_update().filter(name__in=flagged).order_by("name")}
    power = settings_in_force()
    t = now.timestamp()
    parts = partition_membership()
    loaded = _loaded()
    waiting: set[int] = set()
    changes: list[NodeChange] = []
    for job_id, hosts in allocations.items():
        mine = [power_node(rows[h], parts, now=t, loaded=loaded) for h in hosts if h in rows]
        if not mine:
            continue
        waits, wanted = on_allocation(mine)
        if waits:
            waiting.add(job_id)
        changes += wanted
    if power.node_features is not None:
        _activate_features(power.node_features, allocations, rows)
    if changes:
        _Apply(power, rows, now).run(changes)
    if waiting or changes:
        mark_dirty()
    return waiting


def _activate_features(
    features: NodeFeatures, allocations: Mapping[int, Sequence[str]], rows: Mapping[str, Node]
) -> None:
    """The changeable features a job asked for become active on the powered-down nodes
    it was given (they boot with them: Slurm's power_save.html, "Node Features")."""
    constraints = dict(Job.objects.filter(pk__in=list(allocations)).values_list("id", "features"))
    for job_id, hosts in allocations.items():
        dnf = parse_constraint(constraints.get(job_id) or "")
        for name in hosts:
            node = rows.get(name)
            if node is None or not node.flags & NodeFlag.POWERED_DOWN:
                continue
            active = active_at_allocation(
                dnf,
                split_features(node.features),
                split_features(node.active_features),
                features.changeable(name),
            )
            text = join_features(active, node.features)
            if text != node.active_features:
                node.active_features = text
                node.save(update_fields=["active_features"])


def nodes_freed(freed: Mapping[str, Iterable[str]], *, now: datetime) -> None:
    """Jobs ended on these nodes (node → the partitions of those jobs), after the usage
    was refreshed: a node now idle was last busy now; PowerDownOnIdle asks it to power down."""
    if not freed:
        return
    idle = {
        node_id: name
        for node_id, name, base, flags in plain_rows.select(
            Node,
            ("id", "name", "base_state", "flags"),
            {"name": list(freed)},
            order_by=("name",),
            for_update=True,
        )
        if base == NodeBase.IDLE and not flags & NodeFlag.COMPLETING
    }
    if not idle:
        return
    # By id: what the pass and the power cycle keep of the nodes reads again these rows
    # alone (a write by name could be any row: every node read again).
    plain_rows.update_where(Node, {"last_busy": now}, {"pk": list(idle)})
    idle_names = list(idle.values())
    power = settings_in_force()
    if not any(p.power_down_on_idle for p in power.partitions.values()):
        return
    rows = list(Node.objects.select_for_update().filter(name__in=idle_names).order_by("name"))
    t = now.timestamp()
    parts = partition_membership()
    changes: list[NodeChange] = []
    for node in rows:
        changes += on_node_idle(power, power_node(node, parts, now=t, loaded=t), set(freed[node.name]))
    if changes:
        _Apply(power, {n.name: n for n in rows}, now).run(changes)
        mark_dirty()


# --------------------------------------------------------------------------- node settings


def node_features_update(node: Node, *, available: str | None, active: str | None) -> None:
    """``scontrol update NodeName=... AvailableFeatures= ActiveFeatures=`` on a locked row
    (saved by the caller).  Active features must be available; without
    NodeFeaturesPlugins every feature is always active, so they cannot differ."""
    if available is None and active is None:
        return
    features = settings_in_force().node_features
    avail = split_features(node.features if available is None else available)
    changeable = features.changeable(node.name) if features is not None else frozenset()
    if active is None:
        new_active = (
            avail
            if features is None
            else active_at_load(
                avail,
                split_features(node.active_features),
                changeable,
                powered_down=bool(node.flags & NodeFlag.POWERED_DOWN),
            )
        )
    else:
        new_active = split_features(active)
        extra = new_active - avail
        if extra:
            raise ServiceError(
                f"Invalid ActiveFeatures for {node.name}: {','.join(sorted(extra))} not in AvailableFeatures"
            )
        if features is None and new_active != avail:
            raise ServiceError(
                "ActiveFeatures can differ from AvailableFeatures only with NodeFeaturesPlugins configured"
            )
        new_active |= avail - changeable  # features no plugin manages are always active
    node.features = join_features(avail, node.features if available is None else available)
    node.active_features = join_features(new_active, node.features)


def parse_node_suspend_time(value: str | int) -> int | None:
    """A node's SuspendTime as given to scontrol or REST: seconds, INFINITE (-1), NONE."""
    text = str(value).strip()
    if text.upper() == "NONE":
        return None
    try:
        return parse_seconds(text, allow_infinite=True)
    except ValueError as exc:
        raise ServiceError(f"Invalid SuspendTime {value!r}: {exc}") from None


def node_suspend_time_set(nodes: Sequence[Node], value: str | int, *, how: str = "update") -> str:
    """A per-node SuspendTime at runtime (``scontrol update/create node``, REST) on locked
    rows (saved by the caller): accepted, refused or warned as Slurm's power_save.html says;
    a finite value turns automatic power saving on at once, until the next reconfigure.
    Returns the warning to show, if any."""
    seconds = parse_node_suspend_time(value)
    verdict = node_suspend_time_change(settings_in_force(), seconds, how=how)
    if not verdict.accepted:
        raise ServiceError(verdict.message)
    for node in nodes:
        node.suspend_time = seconds
    if verdict.enables_auto:
        PowerState.current()  # the row exists
        PowerState.objects.filter(pk=1).update(auto_enabled=True)
    if verdict.message:
        log.warning("%s: %s", fold(n.name for n in nodes), verdict.message)
    mark_dirty()
    return verdict.message


# --------------------------------------------------------------------------- SuspendExc*

EXC_KEYS = {"nodes": "SuspendExcNodes", "parts": "SuspendExcParts", "states": "SuspendExcStates"}


def exclusions_text(exc: Exclusions) -> dict[str, str]:
    """Exclusions as Slurm writes them (``nid[10-20]:4,tux5``), for storing and showing."""
    sets = [fold(s.nodes) + (f":{s.count}" if s.count is not None else "") for s in exc.node_sets]
    return {
        "nodes": ",".join(sets),
        "parts": ",".join(sorted(exc.parts)),
        "states": ",".join(sorted(exc.states)),
    }


def exclusions_from_text(data: Mapping[str, str]) -> Exclusions:
    return Exclusions(
        node_sets=parse_exc_nodes(data.get("nodes", "")),
        parts=parse_exc_parts(data.get("parts", "")),
        states=parse_exc_states(data.get("states", "")),
    )


def exclusions_in_force(power: PowerConfig, state: PowerState | None = None) -> Exclusions:
    state = state or PowerState.current()
    return exclusions_from_text(state.exclusions) if state.exclusions is not None else power.exclusions


def _show_exclusions(values: Mapping[str, str]) -> None:
    """``scontrol show config`` prints the options of the configuration in force: put
    the running SuspendExc* there (an unset value is "(null)", as Slurm shows it)."""
    cfg = ClusterConfig.for_update()
    names = {k.lower() for k in EXC_KEYS.values()}
    options = {k: v for k, v in cfg.options.items() if k.lower() not in names}
    for field_name, key in EXC_KEYS.items():
        if values.get(field_name):
            options[key] = values[field_name]
    cfg.options = options
    cfg.save(update_fields=["options"])


@transaction.atomic
def suspend_exc_update(
    *,
    actor: AbstractBaseUser,
    nodes: str | None = None,
    parts: str | None = None,
    states: str | None = None,
    now: datetime | None = None,
) -> dict[str, str]:
    """``scontrol update SuspendExcNodes= SuspendExcParts= SuspendExcStates=``: staff only,
    validated like the file's values, in force at once and recorded; a reconfigure keeps
    them only with ReconfigFlags=KeepPowerSaveSettings.  Returns the values in force."""
    if not actor.is_staff:
        raise PermissionDenied("Access/permission denied")
    if nodes is None and parts is None and states is None:
        raise ServiceError("No SuspendExcNodes, SuspendExcParts or SuspendExcStates given")
    power = settings_in_force()
    # The configuration's row before this one, as a reconfigure takes them (docs/locking.md).
    ClusterConfig.for_update()
    state = PowerState.objects.select_for_update().get(pk=PowerState.current().pk)
    current = exclusions_in_force(power, state)
    try:
        node_sets = (
            current.node_sets
            if nodes is None
            else parse_exc_nodes(nodes, Node.objects.values_list("name", flat=True))
        )
        part_set = (
            current.parts
            if parts is None
            else parse_exc_parts(parts, Partition.objects.values_list("name", flat=True))
        )
        state_set = current.states if states is None else parse_exc_states(states)
    except ValueError as exc:
        raise ServiceError(f"Invalid SuspendExc value: {exc}") from None
    values = exclusions_text(Exclusions(node_sets, part_set, state_set))
    state.exclusions = values
    state.dirty = True
    state.save(update_fields=["exclusions", "dirty"])
    _show_exclusions(values)
    given = {k: v for k, v in (("nodes", nodes), ("parts", parts), ("states", states)) if v is not None}
    Event.objects.create(
        time=now or clock.now(),
        kind=Event.Kind.CONFIG,
        new_state="power settings",
        reason=" ".join(f"{EXC_KEYS[k]}={values[k] or '(null)'}" for k in given),
        user=actor.get_username(),
        detail={"suspend_exc": values},
    )
    publish.console_changed("config", "power")
    mark_dirty()
    return values


# --------------------------------------------------------------------------- manual power

MANUAL_OPS = ("POWER_DOWN", "POWER_DOWN_ASAP", "POWER_DOWN_FORCE", "POWER_UP", "POWER_UP_FORCE", "RESUME")


@dataclass(frozen=True)
class PowerAnswer:
    nodes: list[str]
    messages: list[str]


def power_command(*, actor: AbstractBaseUser, words: Sequence[str]) -> PowerAnswer:
    """``scontrol power <up|down> [asap|force] {ALL|<nodelist>} [Action=] [Reason=]``."""
    try:
        cmd = parse_power_command(list(words))
    except PowerRequestError as exc:
        raise ServiceError(str(exc)) from None
    return power_request(actor=actor, nodes=cmd.nodes, op=cmd.op, action=cmd.action, reason=cmd.reason)


@transaction.atomic
def power_request(
    *,
    actor: AbstractBaseUser,
    nodes: str,
    op: str,
    action: str | None = None,
    reason: str | None = None,
    now: datetime | None = None,
) -> PowerAnswer:
    """A manual power transition for ``nodes`` ("ALL" or a hostlist): staff only, every
    node checked before any changes, recorded with the user (audit log and node events)."""
    if not actor.is_staff:
        raise PermissionDenied("Access/permission denied")
    op = op.upper()
    if op not in MANUAL_OPS:
        raise ServiceError(f"Invalid node state specified: {op}")
    now = now or clock.now()
    if nodes.strip().upper() == "ALL":
        rows = {n.name: n for n in Node.objects.select_for_update().order_by("name")}
        names = list(rows)
    else:
        try:
            names = list(NodeSet(nodes))
        except NodeSetParseError as exc:
            raise ServiceError(f"Invalid node name specified: {nodes} ({exc})") from None
        rows = {n.name: n for n in Node.objects.select_for_update().filter(name__in=names).order_by("name")}
        missing = [n for n in names if n not in rows]
        if missing:
            raise ServiceError(f"Invalid node name specified: {NodeSet.fromlist(missing)}")
    power = settings_in_force()
    t = now.timestamp()
    parts = partition_membership()
    loaded = _loaded()
    jobs = [power_job(j) for j in _holding_jobs(names)]
    unrunnable = unrunnable_actions(names)
    decisions: list[Decision] = []
    messages: list[str] = []
    for name in names:
        try:
            outcome = core_power_request(
                power,
                power_node(rows[name], parts, now=t, loaded=loaded, unrunnable=unrunnable),
                jobs,
                op=op,
                now=t,
                action=action,
                reason=reason,
            )
        except PowerRequestError as exc:
            raise ServiceError(str(exc)) from None
        decisions += outcome.decisions
        if outcome.message:
            messages.append(outcome.message)
    who = actor.get_username()
    with set_actor(actor):
        _Apply(power, rows, now, user=who).run(decisions)
    Event.objects.create(
        time=now,
        kind=Event.Kind.NODE,
        node=fold(names)[:64],
        new_state=op,
        reason=reason or "",
        user=who,
        detail={"power_request": op, "nodes": fold(names), "action": action or ""},
    )
    mark_dirty()
    return PowerAnswer(names, messages)


__all__ = [
    "PowerAnswer",
    "agent_power_action_done",
    "apply_node_change",
    "check_config",
    "cloud_fields_update",
    "config_loaded",
    "jobs_allocated",
    "launch_jobs",
    "mark_dirty",
    "node_features_update",
    "node_registering",
    "node_reported",
    "node_suspend_time_set",
    "nodes_freed",
    "power_command",
    "power_pass",
    "power_request",
    "scheduling_snapshot",
    "settings_in_force",
    "shutdown",
    "spawner",
    "suspend_exc_update",
]
