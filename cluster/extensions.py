"""The extensions of the cluster core: the hooks the core calls, and their order.

The core (``cluster/``) names no extension.  The hierarchical resources, the accounting
limits and power saving, and three parts of the core itself (reservations, licenses, the
array throttle), each implement the hooks they need of :class:`ClusterExtension` and
register an instance in their ``AppConfig.ready()``.  The core calls every hook of every
active extension in the order of ``settings.FSCHED_EXTENSIONS``, as Django does
``MIDDLEWARE`` and Slurm ``JobSubmitPlugins=``: an entry is the name an app registered,
or the dotted path of a ``ClusterExtension`` class, which needs no app.

The order is the order of the scheduler's gates: the first plugin that holds a job gives
its reason.  An extension that drops a start (hres, whose layers can refuse the final
nodes) comes before one that acts on the starts (power, which resumes their nodes).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from importlib import import_module
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from cluster.core.feasibility import Refused
from cluster.core.scheduler import NodeView, PassResult, SchedulerPlugin, Snapshot
from slurmwords.licenses import Mode


@dataclass(frozen=True)
class ConfigCheck:
    """What an extension read from a configuration being loaded, handed back to its
    ``config_loaded`` once every extension has accepted the configuration."""

    value: object = None
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Cycle:
    """A periodic job of an extension: ``run`` every ``interval`` seconds, by the embedded
    cycle thread or by Celery beat, one process at a time (cluster.cycles.cycle_lock).

    ``interval`` is the default of the cycle's row, which an administrator may edit (the
    cycles app); ``setting`` names the environment variable it was read from and
    ``slurm_parameter`` ("SchedulerParameters=sched_interval") the slurm.conf option that,
    when set, overrides it, so that the admin can say where a value comes from."""

    name: str
    run: Callable[[], str]
    interval: float
    setting: str = ""
    slurm_parameter: str = ""


@dataclass(frozen=True)
class PendingCause:
    """One thing holding a pending job, as ``pending_causes`` answers it: Slurm's reason
    code, what holds it (``holder``: the limit, HRES layer, nodes or reservation, with the
    figures), where (``level``) and what would release it.  The console's "Why is this job
    pending?", ``GET /api/jobs/{id}/explain/`` and ``fsched explain`` show these."""

    reason: str
    holder: str
    level: str
    release: str


@dataclass(frozen=True)
class PageSection:
    """A section an extension adds to a console page (``node_page_sections``): ``template``
    rendered with ``section`` = ``context``, and the scripts and style sheets (URLs) the
    page's head loads for it."""

    template: str
    context: Mapping[str, Any] = field(default_factory=dict)
    scripts: tuple[str, ...] = ()
    styles: tuple[str, ...] = ()


@dataclass(frozen=True)
class Sample:
    """One Prometheus sample an extension exposes at ``/metrics`` (a gauge): its metric
    name (``fsched_...``), the family's help text, its labels and value.  Samples of one
    name form one family; every sample of a name must carry the same label names."""

    name: str
    help: str
    labels: Mapping[str, str]
    value: float


@dataclass(frozen=True)
class UsageBar:
    """One line of a dashboard panel: ``used`` of ``total`` (None: no limit)."""

    label: str
    used: float
    total: float | None
    text: str = ""  # how the figures read, e.g. "3/10 GPUs"; empty: "used/total"

    @property
    def pct(self) -> int | None:
        if self.total is None:
            return None
        if not self.total:
            return 100 if self.used else 0
        return min(100, round(100 * self.used / self.total))


@dataclass(frozen=True)
class OverviewPanel:
    """A panel an extension adds to the dashboard: a title, bars of use, a link to its page."""

    title: str
    bars: tuple[UsageBar, ...]
    link: str = ""
    empty: str = "Nothing to show."


@dataclass(frozen=True)
class AccountRoles:
    """What the accounting knows of a login user (``account_roles``): the accounts it
    coordinates, each with every account beneath it (``sacctmgr add coordinator``), and
    whether its AdminLevel is Operator or Administrator."""

    coordinated: frozenset[str] = frozenset()
    operator: bool = False
    accounts: frozenset[str] = frozenset()  # the accounts it has an association in


@dataclass(frozen=True)
class Filtered:
    """What a job-submit plugin (``job_submit``, ``job_modify``) made of a request: the
    request as it is to be checked and stored, and its messages for the submitter (Slurm's
    ``slurm.user_msg``), one per line."""

    request: Mapping[str, Any]
    user_msg: str = ""


# Keys of PassContext.shared that more than one extension reads.
LICENSE_ROWS = "license_rows"  # (id, licenses, licenses_alloc, reservation) of jobs holding resources
LICENSE_MODES = "license_modes"  # license names managed by an extension -> their Mode
BASIC_PRIORITY = "priority/basic"  # the core's own: submit order, less the nice


@dataclass
class PassContext:
    """One scheduler pass as the extensions see it.  ``shared`` carries what one
    extension prepares for another within the pass (hres' license modes for the
    licenses' counters); ``plugins`` is filled once every extension has given its own."""

    now: datetime
    cfg: Any  # cluster.models.ClusterConfig
    backfill: bool = False
    shared: dict[str, Any] = field(default_factory=dict)
    plugins: list[SchedulerPlugin] = field(default_factory=list)


@dataclass
class Allocation:
    """The starts a pass is applying: job id -> its nodes.  Extensions drop a start
    (the next pass redoes it), keep a job CONFIGURING until its nodes are up, and add
    the parts of its ``LicensesAlloc``."""

    nodes: dict[int, list[str]]
    dropped: set[int] = field(default_factory=set)
    waiting: set[int] = field(default_factory=set)
    licenses: dict[int, list[str]] = field(default_factory=dict)
    gres: dict[int, dict[str, list]] = field(default_factory=dict)  # devices given, per node

    def kept(self) -> dict[int, list[str]]:
        return {job_id: hosts for job_id, hosts in self.nodes.items() if job_id not in self.dropped}

    def licenses_alloc(self, job_id: int) -> str:
        return ",".join(self.licenses.get(job_id, ()))


@dataclass(frozen=True)
class JobPriorityFactors:
    """A pending job's priority as ``sprio`` shows it: each factor already multiplied by
    its PriorityWeight*, and the priority the scheduler orders the job by."""

    priority: int
    age: float = 0.0
    fairshare: float = 0.0
    jobsize: float = 0.0
    partition: float = 0.0
    qos: float = 0.0
    tres: Mapping[str, float] = field(default_factory=dict)  # TRES name -> weighted factor
    site: int = 0
    nice: int = 0


@dataclass(frozen=True)
class PriorityReport:
    """The priority plugin in force, its weights (age, fairshare, jobsize, partition, qos,
    tres) and the factors of the pass's pending jobs."""

    plugin: str
    weights: Mapping[str, Any]
    jobs: Mapping[int, JobPriorityFactors]


# An agent message handler, called as handler(nodes=<the nodes the connection holds>,
# msg=<the message>) in the database thread.
AgentHandler = Callable[[Sequence[str], Mapping[str, Any]], None]


class ClusterExtension:
    """Every hook, doing nothing: an extension overrides the ones it needs."""

    name = ""

    # -- configuration (scontrol reconfigure, start-up)

    def check_config(self, conf: Any, *, path: Path, node_names: set[str]) -> ConfigCheck | None:
        """Read this extension's part of a configuration being loaded; raise
        ``cluster.core.slurmconf.ConfigError`` to refuse it before anything changes."""
        return None

    def config_loaded(self, checked: ConfigCheck | None, *, actor: str, recover: bool, version: int) -> None:
        """Store what ``check_config`` read, in the transaction that applies slurm.conf."""

    # -- submission

    def license_modes(self) -> Mapping[str, Mode]:
        """The license names this extension manages, with their planning modes."""
        return {}

    def license_variables(self) -> Mapping[str, Mapping[str, int]]:
        """License name -> its variables (name -> amount) a request may name as its count."""
        return {}

    def submit_fields(self, common: Mapping[str, Any], *, count: int, now: datetime, cfg: Any) -> Mapping:
        """Fields a submission adds to its jobs (raise ServiceError to refuse it)."""
        return {}

    def job_submit(self, request: Mapping[str, Any], *, user: Any, cfg: Any) -> Filtered | None:
        """Slurm's JobSubmitPlugins at submission: the request as sent, before it is
        checked; return it changed (checked then as any request), or None to leave it.
        Raise ServiceError to reject it (its ``err_msg``: the plugin's message)."""
        return None

    def job_modify(self, changes: Mapping[str, Any], *, job: Any, user: Any, cfg: Any) -> Filtered | None:
        """The same at ``scontrol update`` of a job: the changes asked for, as sent."""
        return None

    def reservation_check(self, row: Any, *, now: datetime) -> None:
        """A reservation being stored (raise ServiceError to refuse it)."""

    def never_runs(
        self, common: Mapping[str, Any], *, nodes: Sequence[str], count: int, unnamed: int
    ) -> Refused | None:
        """Why a job being submitted could never run with what this extension manages, as
        configured (not as used now), on any ``count`` of ``nodes``: its partition's nodes
        that could hold it, with ``unnamed`` more that may still be created.  Called for a
        job that asks for licenses."""
        return None

    # -- the scheduler pass

    def prepare_pass(self, ctx: PassContext) -> None:
        """Read what this extension needs for the pass, before any plugin is made."""

    def adjust_snapshot(self, ctx: PassContext, snap: Snapshot) -> Snapshot:
        return snap

    def node_order_key(self) -> Callable[[NodeView], tuple] | None:
        """The order nodes are taken in, when this extension has one (the last wins)."""
        return None

    def pass_plugins(self, ctx: PassContext) -> Sequence[SchedulerPlugin]:
        return ()

    def pass_priority(self, ctx: PassContext, snap: Snapshot) -> Mapping[str, Any]:
        """Keyword arguments of ``cluster.core.scheduler.schedule`` for job priorities."""
        return {}

    def priority_report(self, ctx: PassContext, snap: Snapshot) -> PriorityReport | None:
        """The factors of the priorities this extension gives (sprio), or None when it
        gives none (the core's priority/basic)."""
        return None

    def priority_type(self) -> str | None:
        """The PriorityType whose priorities this extension gives instead of the core's
        priority/basic, or None when it gives none."""
        return None

    def jobs_allocated(self, ctx: PassContext, allocation: Allocation) -> None:
        """The pass's starts, their rows locked and not yet written."""

    def after_apply(self, ctx: PassContext, result: PassResult) -> None:
        """The pass's decisions are written; still in its transaction."""

    # -- nodes

    def check_node_fields(self, fields: Mapping[str, Any]) -> None:
        """Fields of ``scontrol update``/``create`` this extension owns (raise ServiceError)."""

    def node_state_request(self, *, actor: Any, nodes: str, found: Mapping[str, Any], state: str,
                           reason: str | None) -> bool:  # fmt: skip
        """A state asked by ``scontrol update``: True when this extension carried it out."""
        return False

    def node_fields_update(self, nodes: Sequence[Any], fields: Mapping[str, Any], *, how: str) -> None:
        """The fields it owns, set on nodes being updated or created (saved by the caller)."""

    def node_registering(self, node: Any, *, boot_time: float | None, now: datetime) -> None:
        pass

    def node_reported(self, node: Any, info: Mapping[str, Any], *, now: datetime) -> Sequence[str]:
        """What an agent reports for a registering node (``register``'s node record): keep
        what this extension needs of it, and return why the registration is invalid
        (Slurm's reasons; the node becomes INVALID_REG and is drained), or nothing."""
        return ()

    def nodes_freed(self, freed: Mapping[str, Iterable[str]], *, now: datetime) -> None:
        pass

    def node_created(self, node: Any, fields: Mapping[str, Any], *, actor: str, now: datetime) -> None:
        pass

    def node_deleted(self, node: Any) -> None:
        pass

    def node_heartbeat(self, load: Mapping[str, Mapping[str, Any]], *, now: datetime) -> None:
        """The load figures an agent's heartbeat carried, by node (in its transaction)."""

    def node_details(self, names: Sequence[str]) -> Mapping[str, Mapping[str, Any]]:
        """Fields this extension adds to the API's node objects, by node name."""
        return {}

    def node_page_sections(self, name: str) -> Sequence[PageSection]:
        """Sections this extension adds to the console's page of node ``name``."""
        return ()

    def nodes_reset(self, names: Sequence[str], *, actor: str, now: datetime) -> None:
        """Nodes back to their configured state (powered down, or failed to resume): what
        runtime updates gave them is undone."""

    def qos_preemption(self) -> Mapping[str, tuple[int, frozenset[str]]]:
        """QOS name -> (its priority, the QOS it may preempt), for preemption."""
        return {}

    # -- the rest

    def cycles(self) -> Sequence[Cycle]:
        return ()

    def job_signalled(self, job: Any, signal: str) -> None:
        """The job's batch script was sent ``signal`` (``STOP``/``CONT`` of a suspend or a
        resume, ``scancel -s``), in the transaction that decided it: what else runs for the
        job (srun's steps, on all its nodes) is to get it too."""

    def launch_ready(self, job: Any) -> bool:
        """False while something of this extension must end before the allocated ``job``
        is launched: it stays CONFIGURING, and is launched by ``launch_configured`` once
        every extension agrees (the caller holds the job's row lock)."""
        return True

    def launch_fields(self, job: Any) -> Mapping[str, Any]:
        """Fields of the job's launch (slurmwords LaunchJob) this extension fills, fixed
        when the job starts: the hierarchical resources' plugin data for the nodes."""
        return {}

    def launch_fields_many(self, jobs: Sequence[Any]) -> Mapping[int, Mapping[str, Any]]:
        """``launch_fields`` of the jobs a pass launches together, by job id: for an
        extension that reads what it needs once for them all rather than once a job."""
        return {job.id: self.launch_fields(job) for job in jobs}

    def job_steps(self, job_ids: Sequence[int], now: datetime) -> Mapping[int, Sequence[Any]]:
        """The steps srun started (cluster.core.job_steps.Step each), listed after a job's
        batch step by accounting (sacct's ``N.0``, ``N.1`` ...)."""
        return {}

    def agent_messages(self) -> Mapping[str, AgentHandler]:
        """Agent message types this extension handles, by their ``type``."""
        return {}

    def account_roles(self, username: str) -> AccountRoles | None:
        """The user's coordinated accounts and operator standing (cluster.visibility)."""
        return None

    def pending_causes(self, job: Any) -> list[PendingCause]:
        """What holds a pending job, for "Why is this job pending?" (the console, the API's
        explain endpoint and ``fsched explain``)."""
        return []

    def metrics(self) -> Sequence[Sample]:
        """This extension's samples for ``/metrics``, read at scrape time in a fixed
        number of queries whatever the cluster's size."""
        return ()

    def overview_panels(self) -> Sequence[OverviewPanel]:
        """This extension's panels of the dashboard, read once per publishing cycle for
        every open dashboard (cluster/overview_publisher.py)."""
        return ()


_registered: dict[str, ClusterExtension] = {}
_active: tuple[ClusterExtension, ...] | None = None
_guard = threading.Lock()


def register(extension: ClusterExtension) -> None:
    """Called by an app's ``ready()``; the settings decide whether and where it runs."""
    global _active  # noqa: PLW0603 - the registry is the process's
    if not extension.name:
        raise ImproperlyConfigured(f"{type(extension).__name__}: a cluster extension needs a name")
    with _guard:
        _registered[extension.name] = extension
        _active = None


def _load(entry: str) -> ClusterExtension:
    if entry in _registered:
        return _registered[entry]
    if "." not in entry:
        known = ", ".join(sorted(_registered)) or "none"
        raise ImproperlyConfigured(
            f"FSCHED_EXTENSIONS: no extension {entry!r} is registered (known: {known})"
        )
    module, _, name = entry.rpartition(".")
    try:
        cls = getattr(import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ImproperlyConfigured(f"FSCHED_EXTENSIONS: cannot import {entry!r}: {exc}") from exc
    if not (isinstance(cls, type) and issubclass(cls, ClusterExtension)):
        raise ImproperlyConfigured(f"FSCHED_EXTENSIONS: {entry!r} is not a ClusterExtension")
    return cls()


def active() -> tuple[ClusterExtension, ...]:
    """The extensions in force, in the order of settings.FSCHED_EXTENSIONS."""
    global _active  # noqa: PLW0603
    found = _active
    if found is None:
        with _guard:
            found = _active = tuple(_load(entry) for entry in settings.FSCHED_EXTENSIONS)
    return found


def reset() -> None:
    """Forget the order read (after the settings changed, in tests)."""
    global _active  # noqa: PLW0603
    with _guard:
        _active = None


def license_modes() -> dict[str, Mode]:
    """Every managed license name -> its mode: what ``-L`` may name besides slurm.conf's."""
    out: dict[str, Mode] = {}
    for ext in active():
        out.update(ext.license_modes())
    return out


def job_submit(request: Mapping[str, Any], *, user: Any, cfg: Any) -> Filtered:
    """The request through every extension's job-submit plugin, in order, as Slurm runs
    the plugins of JobSubmitPlugins= one after the other on the same job_desc."""
    messages: list[str] = []
    for ext in active():
        found = ext.job_submit(request, user=user, cfg=cfg)
        if found is not None:
            request = found.request
            messages += [found.user_msg] if found.user_msg else []
    return Filtered(request, "\n".join(messages))


def job_modify(changes: Mapping[str, Any], *, job: Any, user: Any, cfg: Any) -> Filtered:
    messages: list[str] = []
    for ext in active():
        found = ext.job_modify(changes, job=job, user=user, cfg=cfg)
        if found is not None:
            changes = found.request
            messages += [found.user_msg] if found.user_msg else []
    return Filtered(changes, "\n".join(messages))


def license_variables() -> dict[str, Mapping[str, int]]:
    """Every managed license name -> the variables ``-L name:VARIABLE`` may use."""
    out: dict[str, Mapping[str, int]] = {}
    for ext in active():
        out.update(ext.license_variables())
    return out


def node_order_key() -> Callable[[NodeView], tuple] | None:
    key = None
    for ext in active():
        key = ext.node_order_key() or key
    return key


def nodes_reset(names: Sequence[str], *, actor: str, now: datetime) -> None:
    for ext in active():
        ext.nodes_reset(names, actor=actor, now=now)


def node_heartbeat(load: Mapping[str, Mapping[str, Any]], *, now: datetime) -> None:
    for ext in active():
        ext.node_heartbeat(load, now=now)


def node_details(names: Sequence[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for ext in active():
        for name, fields in ext.node_details(names).items():
            out.setdefault(name, {}).update(fields)
    return out


def node_page_sections(name: str) -> list[PageSection]:
    return [section for ext in active() for section in ext.node_page_sections(name)]


def account_roles(username: str) -> AccountRoles:
    coordinated: set[str] = set()
    accounts: set[str] = set()
    operator = False
    for ext in active():
        roles = ext.account_roles(username)
        if roles is not None:
            coordinated |= roles.coordinated
            accounts |= roles.accounts
            operator = operator or roles.operator
    return AccountRoles(frozenset(coordinated), operator, frozenset(accounts))


def qos_preemption() -> dict[str, tuple[int, frozenset[str]]]:
    out: dict[str, tuple[int, frozenset[str]]] = {}
    for ext in active():
        out.update(ext.qos_preemption())
    return out


def priority_report(ctx: PassContext, snap: Snapshot) -> PriorityReport | None:
    """The first extension's report of the priorities in force (None: priority/basic)."""
    for ext in active():
        report = ext.priority_report(ctx, snap)
        if report is not None:
            return report
    return None


def priority_type() -> str:
    """The priority plugin in force: the first extension's, else the core's priority/basic."""
    return next((t for ext in active() if (t := ext.priority_type()) is not None), BASIC_PRIORITY)


def cycles() -> list[Cycle]:
    return [cycle for ext in active() for cycle in ext.cycles()]


def metric_samples() -> list[Sample]:
    return [sample for ext in active() for sample in ext.metrics()]


def overview_panels() -> list[OverviewPanel]:
    return [panel for ext in active() for panel in ext.overview_panels()]


def launch_ready(job: Any) -> bool:
    """Every extension agrees that the CONFIGURING or starting ``job`` may be launched."""
    return all(ext.launch_ready(job) for ext in active())


def launch_fields(jobs: Sequence[Any]) -> dict[int, dict[str, Any]]:
    """job id -> what every extension adds to its launch (``launch_fields_many``)."""
    out: dict[int, dict[str, Any]] = {job.id: {} for job in jobs}
    if jobs:
        for ext in active():
            for job_id, fields in ext.launch_fields_many(jobs).items():
                out[job_id].update(fields)
    return out


def job_signalled(job: Any, signal: str) -> None:
    for ext in active():
        ext.job_signalled(job, signal)


def agent_handler(kind: str) -> AgentHandler | None:
    for ext in active():
        handler = ext.agent_messages().get(kind)
        if handler is not None:
            return handler
    return None


def setting_changed(*, setting: str, **_: object) -> None:
    if setting == "FSCHED_EXTENSIONS":
        reset()
