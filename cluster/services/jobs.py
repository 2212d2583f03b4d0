"""Job operations: submit, cancel, hold, release, requeue, update, suspend, resume."""

from __future__ import annotations

import functools
import logging
import os
import threading
import time
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from ClusterShell.NodeSet import NodeSet
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, connection, models, transaction

from cluster import clock, extensions, publish, selectors, triggers, visibility
from cluster.core import constraints, dependencies, feasibility, hostlists, jobspec
from cluster.core.allocation_leases import lease_seconds
from cluster.core.scheduler import split_features
from cluster.core.states import ACTIVE_JOB_STATES, FINISHED_JOB_STATES, HOLDING_JOB_STATES, JobState, Reason
from cluster.models import (
    AllocationHolder,
    ClusterConfig,
    Event,
    Job,
    JobIdCounter,
    Node,
    Partition,
    SubmitKey,
)
from cluster.services import dependencies as depend_services
from cluster.services import gres as gres_services
from cluster.services import job_account_update, job_options, job_priority_update, job_request_update, rows
from cluster.services.errors import NotFound, PermissionDenied, ServiceError, storing_nothing
from cluster.services.reservations import check_job_access
from cluster.services.scheduling import estimate_start
from cluster.services.state import (
    alloc_epilogs,
    end_job,
    record_transition,
    refresh_usage,
    requeue_now,
    resume_job,
    suspend_job,
    terminate_running,
    transition_row,
)
from slurmwords import durations
from slurmwords.agent_messages import Signal
from slurmwords.licenses import combine, parse_license_request, parse_resources_request
from slurmwords.nice import INVALID_NICE, parse_nice
from slurmwords.option_lists import option_items

log = logging.getLogger(__name__)

SIGNALS = {"HUP", "INT", "QUIT", "KILL", "USR1", "USR2", "TERM", "STOP", "CONT", "ALRM"}


@dataclass(frozen=True)
class Submitted:
    job_ids: list[int]
    array_job_id: int | None
    user_msg: str = ""  # the job-submit plugins' messages, which sbatch prints


def _field(spec: dict[str, Any], name: str) -> Any:
    value = spec.get(name)
    return None if value in (None, "") else value


def _count(spec: dict[str, Any], name: str, what: str, maximum: int) -> int:
    try:
        return jobspec.parse_count(_field(spec, name) or 1, what, maximum=maximum)
    except ValueError as exc:
        raise ServiceError(str(exc), field=name) from None


def _nodeset(text: str, what: str, limit: int) -> NodeSet:
    """A hostlist of the request, refused before it is expanded if it names more nodes
    than can exist (``node[1-2000000]`` took 19 s and 1 GB)."""
    try:
        return hostlists.parse(text, limit=limit, what=what)
    except hostlists.HostlistTooLarge as exc:
        raise ServiceError(str(exc), field=what) from None
    except hostlists.HostlistError as exc:
        raise ServiceError(f"Invalid {what} specification: {exc.detail}", field=what) from None


# Fields that name or locate something: no control characters, within their columns.
# field -> (sbatch's name for it in messages, longest value)
_NAMED_FIELDS = {
    "name": ("--job-name", 1024),  # stored cut to 256, as before
    "partition": ("--partition", 1024),
    "account": ("--account", 64),
    "qos": ("--qos", 64),
    "reservation": ("--reservation", 64),
    "output": ("--output", 1024),
    "error": ("--error", 1024),
    "input": ("--input", 1024),
    "work_dir": ("--chdir", 1024),
    "command": ("command", 1024),
    "licenses": ("--licenses", 512),
    "resources": ("--resources", 512),
    "gres": ("--gres", 512),
    "gpus": ("--gpus", 64),
    "gpus_per_node": ("--gpus-per-node", 64),
    "gpus_per_task": ("--gpus-per-task", 64),
    "cpus_per_gpu": ("--cpus-per-gpu", 64),
    "constraint": ("--constraint", 512),
    "wckey": ("--wckey", 256),
    "nodelist": ("--nodelist", hostlists.MAX_TEXT),
    "exclude": ("--exclude", hostlists.MAX_TEXT),
    "nodes": ("node count", 64),
    "ntasks": ("number of tasks", 64),
    "cpus_per_task": ("--cpus-per-task", 64),
    "mem": ("--mem", 64),
    "time": ("time limit", 64),
    "begin": ("time", 256),
    "array": ("job array", 10_000),
    "extra": ("--extra", 1024),
    "layout": ("--layout", 256),
    "dependency": ("--dependency", dependencies.MAX_TEXT),
}


def _checked_spec(spec: dict[str, Any], cfg: ClusterConfig) -> dict[str, Any]:
    """The request's fields, each of the right type, length and characters, or a 400
    naming it: what the parsers after this see is plain printable text."""
    try:
        jobspec.check_fields(spec)
        out: dict[str, Any] = {}
        for name, (what, max_len) in _NAMED_FIELDS.items():
            if spec.get(name) not in (None, ""):
                out[name] = jobspec.check_text(spec[name], name, what, max_len=max_len)
        max_script = _max_script_bytes(cfg)
        for name in ("script", "wrap"):
            if spec.get(name) not in (None, ""):
                text = jobspec.check_text(
                    spec[name], name, "batch script", max_len=max_script, printable=False
                )
                if len(text.encode("utf-8")) > max_script:
                    raise jobspec.SpecError(
                        f"Batch job script is larger than max_script_size ({max_script} bytes)", field=name
                    )
                out[name] = text
        out["argv"] = jobspec.check_strings(spec.get("argv") or [], "argv", max_bytes=jobspec.MAX_EXEC_BYTES)
        out["environment"] = jobspec.check_environment(
            spec.get("environment") or {}, max_bytes=jobspec.MAX_EXEC_BYTES
        )
        out["hold"] = jobspec.check_flag(spec, "hold", default=False)
        out["requeue"] = jobspec.check_flag(spec, "requeue", default=True)
        # salloc's (and srun's outside an allocation) request: no script, no process.
        out["allocation"] = jobspec.check_flag(spec, "allocation", default=False)
        out["test_only"] = jobspec.check_flag(spec, "test_only", default=False)
        out["exclusive"] = jobspec.check_flag(spec, "exclusive", default=False)
        out["oversubscribe"] = jobspec.check_flag(spec, "oversubscribe", default=False)
        if spec.get("nice") is not None:
            try:
                out["nice"] = parse_nice(spec["nice"])
            except ValueError as exc:
                raise jobspec.SpecError(str(exc), field="nice") from None
        out.update(job_options.checked(spec))
        if out["exclusive"] and out["oversubscribe"]:
            raise jobspec.SpecError(
                "--exclusive and --oversubscribe are mutually exclusive", field="oversubscribe"
            )
    except jobspec.SpecError as exc:
        raise ServiceError(str(exc), field=exc.field) from None
    return out


def _max_script_bytes(cfg: ClusterConfig) -> int:
    """SchedulerParameters=max_script_size=N, else Slurm's 4 MB."""
    value = option_items(cfg.options.get("SchedulerParameters")).get("max_script_size")
    return int(value) if value and value.isdigit() else jobspec.MAX_SCRIPT_BYTES


@dataclass(frozen=True)
class _PartitionRow:
    name: str
    max_time: int | None
    default_time: int | None
    nodes: str  # hostlist expression
    state: str

    @functools.cached_property
    def size(self) -> int:
        """How many names the node list holds (counted once per configuration revision)."""
        return hostlists.count(self.nodes) if self.nodes else 0

    @functools.cached_property
    def node_names(self) -> tuple[str, ...]:
        return tuple(hostlists.expand(self.nodes, limit=self.size)) if self.nodes else ()


# (database alias, configuration revision) -> partition name ("" for the default) -> its
# row. Partitions change only with the configuration (reconfigure, in the transaction
# that gives it a new revision), so a submission's revision, read anyway, tells whether
# these are current: one read fewer per submission.
_partitions_seen: dict[tuple[str, str], dict[str, _PartitionRow | None]] = {}


def _choose_partition(name: str | None, cfg: ClusterConfig) -> _PartitionRow:
    key = (connection.alias, cfg.revision)
    seen = _partitions_seen.get(key)
    if seen is None:
        _partitions_seen.clear()  # an older revision's partitions are never asked again
        seen = _partitions_seen[key] = {}
    # sbatch -p a,b: the first partition that exists is used (multi-partition jobs later).
    for candidate in name.split(",") if name else [""]:
        if candidate not in seen:
            seen[candidate] = _read_partition(candidate)
        if seen[candidate] is not None:
            return seen[candidate]
    if name:
        raise ServiceError("Invalid partition name specified", field="partition")
    raise ServiceError("No partition specified or system default partition", field="partition")


def _read_partition(name: str) -> _PartitionRow | None:
    """``name``'s row ("": the default partition's); None: no such partition."""
    # Read without the ORM's compiler (see rows.py).
    where = {"name": name} if name else {"is_default": True}
    fields = ("name", "max_time", "default_time", "nodes", "state")
    found = rows.select(Partition, fields, where, order_by=("pk",), limit=1)
    return _PartitionRow(*found[0]) if found else None


# (database alias, configuration revision) -> partition name -> the configured sizes of its
# nodes, read only for a request whose answer depends on them. A dynamic node created
# since counts as a name of the partition that is no node yet, and one deleted since as
# still there: either way the job is accepted and pends, never wrongly refused.
_sizes_seen: dict[tuple[str, str], dict[str, tuple[tuple[feasibility.NodeSize, ...], int]]] = {}


def _partition_sizes(
    partition: _PartitionRow, cfg: ClusterConfig
) -> tuple[tuple[feasibility.NodeSize, ...], int]:
    """The partition's nodes, and how many of its names are no node yet."""
    key = (connection.alias, cfg.revision)
    seen = _sizes_seen.get(key)
    if seen is None:
        _sizes_seen.clear()
        seen = _sizes_seen[key] = {}
    found = seen.get(partition.name)
    if found is None:
        wanted = set(partition.node_names)
        members = tuple(
            feasibility.NodeSize(*row)
            for row in rows.select(Node, ("name", "cpus", "real_memory"), order_by=("name",))
            if row[0] in wanted
        )
        found = seen[partition.name] = (members, feasibility.unnamed_count(wanted, members))
    return found


# The same key -> (partition, CPUs a task, memory a node) -> the partition's nodes that
# could hold one share of such a job (no excluded nodes): a submission asks in one of a few
# shapes, and at 10,000 nodes scanning its partition's 5,000 twice a submission was a
# quarter of the simulator's first minute.
_capable_seen: dict[tuple[str, str], dict[tuple[str, int, int], tuple[str, ...]]] = {}


def _capable(
    request: feasibility.Request,
    partition: _PartitionRow,
    cfg: ClusterConfig,
    members: tuple[feasibility.NodeSize, ...],
) -> tuple[str, ...]:
    """feasibility.capable_nodes of the partition's ``members`` (from _partition_sizes)."""
    if request.exc_nodes:
        return feasibility.capable_nodes(request, members)
    key = (connection.alias, cfg.revision)
    seen = _capable_seen.get(key)
    if seen is None:
        _capable_seen.clear()
        seen = _capable_seen[key] = {}
    shape = (partition.name, request.cpus_per_node, request.mem_per_node or 0)
    found = seen.get(shape)
    if found is None:
        found = seen[shape] = feasibility.capable_nodes(request, members)
    return found


def _never_runs(
    request: feasibility.Request, partition: _PartitionRow, cfg: ClusterConfig, *, hres: bool
) -> tuple[tuple[str, ...], int]:
    """Refuse a job that can never run in its partition (see cluster.core.feasibility);
    else the partition's nodes that could hold it, and how many of its names are no node
    yet (read only when the answer needs them, or for the extensions' check)."""
    # As Slurm's _part_access_check: only a partition that schedules (UP or DRAIN) refuses.
    refused = None
    if partition.state in ("UP", "DRAIN"):
        refused = feasibility.count_refusal(request, partition.name, partition.size)
    if refused is None and not request.sized and not hres:
        return (), 0
    capable: tuple[str, ...] = ()
    if refused is None:
        members, unnamed = _partition_sizes(partition, cfg)
        capable = _capable(request, partition, cfg, members)
        refused = feasibility.size_refusal(request, partition.name, members, unnamed=unnamed, capable=capable)
    if refused is not None:
        raise _refusal(refused)
    return capable, unnamed


def _refusal(refused: feasibility.Refused) -> ServiceError:
    return ServiceError(
        refused.message, field=refused.field, explanation=refused.explanation, err_msg=refused.err_msg
    )


def _check_extensions_feasible(
    common: dict[str, Any], count: int, pool: tuple[str, ...], unnamed: int
) -> None:
    """What an extension manages (hierarchical resources) can never serve the job: refused
    as Slurm refuses a job no node configuration can hold."""
    for ext in extensions.active():
        refused = ext.never_runs(common, nodes=pool, count=count, unnamed=unnamed)
        if refused is not None:
            raise _refusal(refused)


def _check_licenses(text: str, cfg: ClusterConfig, resources: str = "") -> str:
    """``-L``: cluster licenses (``a:2|b:1`` allowed) and hierarchical resources with
    their plugin arguments and variables (Slurm's hres.html), plus ``--resources``
    (hierarchical resources only, Slurm 25.11); refused here rather than pending forever.
    The one request is stored, with the variables resolved: ``Licenses=`` shows it."""
    text = text.strip()
    if not text and not resources.strip():
        return ""
    cluster_licenses = cfg.licenses
    modes = extensions.license_modes()
    variables = extensions.license_variables()
    try:
        request = parse_license_request(text, hres=modes, plain=cluster_licenses, variables=variables)
    except ValueError as exc:
        raise ServiceError(str(exc), field="licenses") from None
    try:
        extra = parse_resources_request(resources, hres=modes, variables=variables)
        request = combine(request, extra, hres=modes)
    except ValueError as exc:
        raise ServiceError(str(exc), field="resources") from None
    for item in request.plain(modes):
        if item.count > cluster_licenses[item.name]:
            raise ServiceError(
                f"Invalid license specification {item.name}:{item.count}: only "
                f"{cluster_licenses[item.name]} configured",
                field="licenses",
            )
    text = str(request)
    if len(text) > _NAMED_FIELDS["licenses"][1]:
        # The stored form adds the counts left out: still within Job.licenses's column.
        raise ServiceError(
            f"Invalid --licenses specification: longer than {_NAMED_FIELDS['licenses'][1]} characters",
            field="licenses",
        )
    return text


MAX_IDEMPOTENCY_KEY = 128  # SubmitKey.key's length


def _check_constraint(text: object, partition: _PartitionRow) -> None:
    """--constraint: an expression fsched reads, naming features some node has (available
    or active), else slurmctld's refusal, "Invalid feature specification"; and one some
    node of the partition satisfies, else "Requested node configuration is not
    available", as slurmctld refuses a job that could never run."""
    if not text:
        return
    try:
        alternatives = constraints.parse(str(text))
    except constraints.ConstraintError as exc:
        raise ServiceError(str(exc), field="constraint") from None
    known: set[str] = set()
    members = set(partition.node_names)
    fits = False
    for name, available, active in Node.objects.values_list("name", "features", "active_features"):
        features = split_features(available) | split_features(active)
        known |= features
        fits = fits or (name in members and any(alt <= features for alt in alternatives))
    if constraints.unknown_features(alternatives, known):
        raise ServiceError(constraints.INVALID, field="constraint")
    if alternatives and not fits:
        raise ServiceError("Requested node configuration is not available", field="constraint")


def job_submit(
    *,
    user: AbstractBaseUser,
    spec: dict[str, Any],
    now: datetime | None = None,
    idempotency_key: str | None = None,
) -> Submitted:
    """Validate an sbatch request and store the job (one per array task) before answering.

    With an ``idempotency_key``, a request repeated by a client that never saw the answer
    (a connection closed mid-submission) gets the jobs of the first one: the key is stored
    in the transaction that stores the jobs, so either both exist or neither does.
    """
    now = now or clock.now()
    if idempotency_key is not None:
        _check_idempotency_key(idempotency_key)
        if (earlier := _submitted_with(user.get_username(), idempotency_key)) is not None:
            return earlier
    cfg = ClusterConfig.current()
    notes: list[str] = []
    common, tasks = _validate_submission(user, spec, now, cfg, notes)
    try:
        submitted = _store(common, tasks, now, cfg, idempotency_key=idempotency_key)
        return replace(submitted, user_msg="\n".join(notes))
    except IntegrityError:
        # The same key arrived twice at once: the other request's jobs stand.
        if idempotency_key is not None and (earlier := _submitted_with(common["user"], idempotency_key)):
            return earlier
        raise


def _check_idempotency_key(key: str) -> None:
    if not key or len(key) > MAX_IDEMPOTENCY_KEY or not key.isprintable() or not key.isascii():
        raise ServiceError(
            f"Invalid Idempotency-Key: 1 to {MAX_IDEMPOTENCY_KEY} printable ASCII characters",
            field="Idempotency-Key",
        )


def _submitted_with(username: str, key: str) -> Submitted | None:
    row = SubmitKey.objects.filter(user=username, key=key).values_list("response", flat=True).first()
    if row is None:
        return None
    return Submitted(job_ids=list(row["job_ids"]), array_job_id=row["array_job_id"])


def _validate_submission(
    user: AbstractBaseUser,
    spec: dict[str, Any],
    now: datetime,
    cfg: ClusterConfig,
    notes: list[str] | None = None,
) -> tuple[dict[str, Any], list[int | None]]:
    username = user.get_username()
    # JobSubmitPlugins see the request as sent and may change it; what they return is
    # checked as any request (Slurm runs them before validate_job_desc).
    filtered = extensions.job_submit(spec, user=user, cfg=cfg)
    if notes is not None and filtered.user_msg:
        notes.append(filtered.user_msg)
    spec = _checked_spec(dict(filtered.request), cfg)
    script = spec.get("script") or ""
    wrap = _field(spec, "wrap")
    if spec["allocation"]:
        if script or wrap is not None or _field(spec, "array") is not None:
            # salloc and srun take no batch script; Slurm refuses --array outside sbatch.
            raise ServiceError("An allocation request takes no script, --wrap or --array", field="allocation")
    elif wrap is not None:
        if script:
            raise ServiceError("Script arguments not permitted with --wrap option", field="wrap")
        script = f"#!/bin/sh\n# This script was created by sbatch --wrap.\n\n{wrap}\n"
    if not script.strip() and not spec["allocation"]:
        raise ServiceError("Batch script is empty!", field="script")
    if not script.startswith("#!") and not spec["allocation"]:
        raise ServiceError(
            "This does not look like a batch script.  The first line must start with #! followed by "
            "the path to an interpreter.",
            field="script",
        )

    partition = _choose_partition(_field(spec, "partition"), cfg)
    try:
        min_nodes, max_nodes = jobspec.parse_node_count(_field(spec, "nodes") or 1)
    except ValueError as exc:
        raise ServiceError(str(exc), field="nodes") from None
    node_limit = 1
    if min_nodes > 1 or max_nodes or _field(spec, "nodelist") or _field(spec, "exclude"):
        node_limit = selectors.hostlist_limit(cfg)
    if min_nodes > node_limit:
        # -N 1000000 on a cluster of 36 nodes can never start (Slurm refuses it too).
        raise ServiceError("Node count specification invalid", field="nodes")
    if max_nodes is not None:
        max_nodes = min(max_nodes, node_limit)
    ntasks = _count(spec, "ntasks", "number of tasks", jobspec.MAX_INT32)
    try:
        ntasks, min_nodes = job_options.tasks_per_node(
            spec,
            ntasks=ntasks,
            ntasks_given=_field(spec, "ntasks") is not None,
            min_nodes=min_nodes,
            max_nodes=max_nodes,
            nodes_given=_field(spec, "nodes") is not None,
        )
    except jobspec.SpecError as exc:
        raise ServiceError(str(exc), field=exc.field) from None
    if min_nodes > node_limit and min_nodes > (node_limit := selectors.hostlist_limit(cfg)):
        raise ServiceError("Node count specification invalid", field="nodes")
    cpus_per_task = _count(spec, "cpus_per_task", "--cpus-per-task", jobspec.MAX_CPUS_PER_TASK)
    if ntasks * cpus_per_task > jobspec.MAX_INT32:
        raise ServiceError(
            f"Invalid number of tasks specification: {ntasks} tasks of {cpus_per_task} CPUs", field="ntasks"
        )
    mem = None
    if (mem_text := _field(spec, "mem")) is not None:
        mem = job_request_update.parse_memory(mem_text, "--mem specification")
    # No -t: the partition's DefaultTime, else its MaxTime, fixed at submission as Slurm does.
    time_limit = partition.default_time if partition.default_time is not None else partition.max_time
    if (time_text := _field(spec, "time")) is not None:
        # -1, INFINITE and UNLIMITED mean no limit, as in Slurm's time_str2mins.
        try:
            time_limit = durations.parse_job_time_limit(time_text)
        except ValueError:
            time_limit = -1
        if time_limit is not None and not 0 <= time_limit <= jobspec.MAX_INT32:
            raise ServiceError(f"Invalid time limit specification: {time_text}", field="time")
    begin = None
    if (begin_text := _field(spec, "begin")) is not None:
        begin = job_request_update.parse_begin(begin_text, now)
    if (gres := _field(spec, "gres")) is not None:
        try:
            jobspec.check_gres(gres)
        except ValueError as exc:
            raise ServiceError(str(exc), field="gres") from None

    _check_constraint(_field(spec, "constraint"), partition)
    req_nodes = _nodeset(_field(spec, "nodelist") or "", "nodelist", node_limit)
    exc_nodes = _nodeset(_field(spec, "exclude") or "", "exclude", node_limit)
    named = list(req_nodes | exc_nodes)
    known = set(Node.objects.filter(name__in=named).values_list("name", flat=True)) if named else set()
    for ns, what in ((req_nodes, "nodelist"), (exc_nodes, "exclude")):
        unknown = [n for n in ns if n not in known]
        if unknown:
            raise ServiceError(f"Invalid node name specified: {hostlists.fold(unknown)}", field=what)
    if len(req_nodes) > (max_nodes or min_nodes) and max_nodes is None:
        min_nodes = len(req_nodes)
    if ntasks * cpus_per_task > 1 and not req_nodes and spec.get("ntasks_per_node") is None:
        largest = max((n.cpus for n in _partition_sizes(partition, cfg)[0]), default=0)
        min_nodes = job_options.nodes_for_tasks(
            ntasks,
            cpus_per_task,
            min_nodes=min_nodes,
            max_nodes=max_nodes,
            nodes_given=_field(spec, "nodes") is not None,
            largest=largest,
        )
    if len(req_nodes & exc_nodes):
        raise ServiceError("Requested node configuration is not available", field="nodelist")

    try:
        mem = job_options.node_memory(
            spec, mem, nodes=max(min_nodes, len(req_nodes), 1), ntasks=ntasks, cpus_per_task=cpus_per_task
        )
    except jobspec.SpecError as exc:
        raise ServiceError(str(exc), field=exc.field) from None
    licenses = _check_licenses(
        str(_field(spec, "licenses") or ""), cfg, resources=str(_field(spec, "resources") or "")
    )
    request = feasibility.Request(
        nodes=max(min_nodes, len(req_nodes), 1),
        cpus_per_task=cpus_per_task,
        mem_per_node=mem,
        exc_nodes=frozenset(exc_nodes),
        num_tasks=ntasks,
    )
    pool, unnamed = _never_runs(request, partition, cfg, hres=bool(licenses))

    tasks: list[int | None] = [None]
    throttle = None
    if (array_text := _field(spec, "array")) is not None:
        try:
            task_ids, throttle = jobspec.parse_array(
                array_text,
                max_size=cfg.option_int("MaxArraySize", jobspec.MAX_ARRAY_SIZE),
                max_tasks=cfg.option_int("MaxJobCount", 10000),
            )
        except ValueError as exc:
            raise ServiceError(str(exc), field="array") from None
        tasks = list(task_ids)

    signal_hold = spec["hold"]
    nice = spec.get("nice", 0)
    if nice < 0 and not visibility.privileged(user):
        # slurmctld's validate_job_create_req: a negative nice is for operators only, and
        # the refusal is ESLURM_INVALID_NICE.
        raise PermissionDenied(INVALID_NICE, field="nice")
    work_dir = _field(spec, "work_dir") or "/tmp"  # noqa: S108 - the CLI always sends its cwd
    if not os.path.isabs(work_dir):
        raise ServiceError(f"Invalid working directory: {work_dir} (must be absolute)", field="work_dir")
    argv = spec["argv"]
    environment = spec["environment"]

    default_name = "interactive" if spec["allocation"] else "wrap" if wrap is not None else "sbatch"
    name = _field(spec, "name") or default_name
    dependency = depend_services.checked(_field(spec, "dependency") or "")
    common = {
        "name": name[:256],
        "user": username,
        "submitter": user if user.pk else None,
        "account": _field(spec, "account") or "",
        "qos": _field(spec, "qos") or "",
        # --wckey, checked and defaulted by the accounting (TrackWCKey).
        "wckey": _field(spec, "wckey") or "",
        "partition": partition.name,
        "script": script,
        "command": "(wrap)" if wrap is not None else (_field(spec, "command") or ""),
        "argv": argv,
        "environment": environment,
        "work_dir": work_dir,
        "std_out": _field(spec, "output") or "",
        "std_err": _field(spec, "error") or "",
        "std_in": _field(spec, "input") or "",
        "min_nodes": min_nodes,
        "max_nodes": max_nodes,
        "num_tasks": max(ntasks, min_nodes),
        "cpus_per_task": cpus_per_task,
        "mem_per_node": mem,
        "time_limit": time_limit,
        # No -t: an extension may set the limit instead of the partition's (limits: MaxWall).
        "time_asked": time_text is not None,
        "licenses": licenses,
        # --gres per node (gpu:2); parsed and checked against the tracked TRES in submit_fields.
        "gres": str(_field(spec, "gres") or ""),
        "req_nodes": str(req_nodes),
        "exc_nodes": str(exc_nodes),
        "features": _field(spec, "constraint") or "",
        "reservation": _field(spec, "reservation") or "",
        "hold": "user" if signal_hold else "",
        "begin_time": begin,
        # Slurm requeues batch jobs only: an allocation's holder has lost it.
        "requeue": spec["requeue"] and not spec["allocation"],
        # --exclusive is node exclusive (OverSubscribe=NO): the scheduler gives whole nodes.
        "exclusive": "NODE" if spec["exclusive"] else "",
        "oversubscribe": spec["oversubscribe"],
        "extra": _field(spec, "extra") or "",
        "layout": _field(spec, "layout") or "",
        "submit_time": now,
        # Slurm's EligibleTime: --begin's time, else the submission, but for a job with
        # a dependency, which becomes eligible when the pass finds it satisfied
        # (cluster.services.scheduling).
        "eligible_time": begin or (None if dependency else now),
        "array_max_tasks": throttle,
        "reason": _first_reason(signal_hold, dependency),
        "dependency": dependency,
        "priority": 0 if signal_hold else 1,
        "nice": nice,
        "batch": not spec["allocation"],
    }
    try:
        common.update(job_options.stored(spec, time_limit, now=now, begin=begin))
    except jobspec.SpecError as exc:
        raise ServiceError(str(exc), field=exc.field) from None
    common.update(gres_services.submitted(spec, common, cfg))  # --gres, --gpus*, --cpus-per-gpu
    # What the extensions add (the accounting's default account and QOS, submit limits).
    for ext in extensions.active():
        common.update(ext.submit_fields(common, count=len(tasks), now=now, cfg=cfg))
    del common["time_asked"]
    if licenses:
        _check_extensions_feasible(common, request.nodes, pool, unnamed)
    if common["reservation"]:
        check_job_access(common["reservation"], common["user"], common["account"])
    return common, tasks


_ACTIVE_TTL = 1.0
_active_lock = threading.Lock()
_active: tuple[str, float, int] = ("", 0.0, 0)  # configuration revision, when counted, count


def _admit(count: int, cfg: ClusterConfig) -> None:
    """MaxJobCount, a guard against runaway submission rather than an exact quota.

    Counting the active jobs cost 0.33 ms per submission with 9,000 of them (the default
    limit is 10,000), so a process counts at most once a second and adds its own
    submissions since.  Jobs that ended meanwhile only make the estimate high, and it is
    counted afresh before any refusal; what it can miss is other processes' submissions
    of the last second.
    """
    global _active  # noqa: PLW0603 - one estimate per process
    max_count = cfg.option_int("MaxJobCount", 10000)
    with _active_lock:
        revision, at, active = _active
        now = time.monotonic()
        if revision != cfg.revision or now - at > _ACTIVE_TTL or active + count > max_count:
            active, at = rows.count_in(Job, "state", [s.value for s in ACTIVE_JOB_STATES]), now
        _active = (cfg.revision, at, active if active + count > max_count else active + count)
    if active + count > max_count:
        raise ServiceError("Slurm temporarily unable to accept job, sleeping and retrying")


def _store(
    common: dict[str, Any],
    tasks: list[int | None],
    now: datetime,
    cfg: ClusterConfig,
    *,
    idempotency_key: str | None = None,
) -> Submitted:
    # Before the write transaction, which stays short (on SQLite it holds the database).
    _admit(len(tasks), cfg)
    # PostgreSQL takes the ids from a sequence (``nextval``), which no transaction locks:
    # concurrent submissions never wait for each other. With the counter row they did: its
    # lock was held until the commit's WAL flush, so submissions queued one flush at a time
    # (measured with pg_stat_statements: 7-14 ms of wait per submission, with 8 clients).
    # A submission that fails after taking its id leaves a gap, never a repeat. SQLite's
    # transactions hold the whole database anyway: there the counter row stays, inside.
    if tasks == [None] and rows.one_message():
        taken = _taken_id()
        key = None
        if idempotency_key is not None:
            answer = f"jsonb_build_object('job_ids', jsonb_build_array({taken}), 'array_job_id', NULL)"
            key = (idempotency_key, rows.Sql(answer))
        found = rows.insert_together(_stored_rows([taken], tasks, common, now, key), first=(_NEXT_ID, []))
        assert found is not None  # nextval returns its row
        job_ids, array_job_id = [found[0]], None
    else:
        with transaction.atomic():
            job_ids = _take_job_ids(len(tasks))
            array_job_id = job_ids[0] if tasks != [None] else None
            key = None
            if idempotency_key is not None:
                key = (idempotency_key, {"job_ids": job_ids, "array_job_id": array_job_id})
            rows.insert_together(_stored_rows(job_ids, tasks, common, now, key))
    publish.console_changed("jobs")
    # A held job, or one that begins later, cannot start now: no pass to ask for (the
    # periodic pass sees it when --begin comes; release asks for one).
    begin = common["begin_time"]
    if not common["hold"] and not (begin and begin > now):
        triggers.schedule_after_commit()
    return Submitted(job_ids=job_ids, array_job_id=array_job_id)


def _first_reason(held: bool, dependency: str) -> str:
    """A held job shows JobHeldUser, one with a dependency Dependency until a pass tests
    it (Slurm tests it at submission; the pass asked for right after does here)."""
    if held:
        return Reason.JOB_HELD_USER.value
    return Reason.DEPENDENCY.value if dependency else Reason.NONE.value


def job_test_only(*, user: AbstractBaseUser, spec: dict[str, Any], now: datetime | None = None) -> dict:
    """sbatch --test-only: validate, and say where and when the job would start; store no
    job.  As slurmctld's will-run test makes a job record and purges it, the answer names a
    job id of its own, taken from the ids (``Job 12 to start at ...``, which scripts read)."""
    now = now or clock.now()
    common, _tasks = _validate_submission(user, spec, now, ClusterConfig.current())
    start, nodes, cpus = estimate_start(common, now=now)
    when = durations.format_timestamp(start)
    (job_id,) = _take_job_ids(1)
    return {
        "job_id": job_id,
        "start_time": start.isoformat() if start else None,
        "nodes": nodes,
        "message": f"Job {job_id} to start at {when} using {cpus} processors on nodes "
        f"{nodes or '(null)'} in partition {common['partition']}",
    }


def _stored_rows(
    job_ids: list[Any],
    tasks: list[int | None],
    common: dict[str, Any],
    now: datetime,
    key: tuple[str, Any] | None,
) -> list[tuple[type[models.Model], rows.Rows]]:
    """A submission's rows: its jobs (an array's are the tasks of its first job), their
    first events, and its idempotency key with the answer it keeps (``key``); an id may be
    ``rows.Sql``."""
    username = common["user"]
    array_job_id = job_ids[0] if tasks != [None] else None
    stored: list[tuple[type[models.Model], rows.Rows]] = [
        (
            Job,
            [
                {"id": job_id, "array_job_id": array_job_id, "array_task_id": task, **common}
                for job_id, task in zip(job_ids, tasks, strict=True)
            ],
        ),
        (Event, [transition_row(job_id, "", JobState.PENDING, now=now, user=username) for job_id in job_ids]),
    ]
    if not common["batch"]:
        # The holder's first lease (cluster/core/allocation_leases.py), renewed while it lives.
        lease = timedelta(seconds=lease_seconds(ClusterConfig.current().option_int("InactiveLimit", 0)))
        holders = [{"job_id": job_id, "lease_until": now + lease} for job_id in job_ids]
        stored.append((AllocationHolder, holders))
    if key is not None:
        stored.append((SubmitKey, [{"user": username, "key": key[0], "response": key[1], "created": now}]))
    return stored


# The sequence of job ids on PostgreSQL (made by migration 0013).
JOB_ID_SEQUENCE = "cluster_job_ids"
_NEXT_ID = f"SELECT nextval('{JOB_ID_SEQUENCE}')"


def _taken_id() -> rows.Sql:
    """The id the submission's message took (its first statement, ``_NEXT_ID``), read back
    later in the same message: ``currval`` is the session's own last ``nextval``."""
    return rows.Sql(f"currval('{JOB_ID_SEQUENCE}')")


def _take_job_ids(count: int) -> list[int]:
    """``count`` new job ids, increasing. On PostgreSQL they come from the sequence and may
    interleave with a concurrent submission's, as an array's task ids do in Slurm (each
    task gets its own job id when it is split off); on SQLite they follow each other,
    taken under the counter row's lock."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT nextval('{JOB_ID_SEQUENCE}') FROM generate_series(1, %s)", [count])  # noqa: S608
            return sorted(row[0] for row in cursor.fetchall())
    with storing_nothing():
        first = rows.add_returning(JobIdCounter, 1, "next_id", count) - count
    return [first + i for i in range(count)]


MAX_JOB_ID = 2**63 - 1  # Job.id is a BigIntegerField


def get_job(job_id: int) -> Job:
    try:
        if not 0 < int(job_id) <= MAX_JOB_ID:
            raise ValueError(job_id)
        return Job.objects.get(pk=job_id)
    except (Job.DoesNotExist, ValueError, TypeError):
        raise NotFound("Invalid job id specified") from None


def _check_owner(actor: AbstractBaseUser, job: Job) -> None:
    # The owner, a coordinator of the job's account, staff (cluster.visibility).
    if not visibility.may_manage(actor, job):
        raise PermissionDenied("Access/permission denied")


# Which of a running job's processes a signal other than KILL/TERM reaches (scancel):
# Slurm sends it to the job's steps only; -b/--batch to the batch shell only (its process
# group: the script and its children); -f/--full to both.
SIGNAL_SCOPES = ("steps", "batch", "full")


@transaction.atomic
def job_cancel(
    *, actor: AbstractBaseUser, job_id: int, signal: str | None = None, scope: str = "steps"
) -> Job:
    """scancel: a pending job ends at once; a running one is signalled on its nodes."""
    job = Job.objects.select_for_update().get(pk=get_job(job_id).pk)
    _check_owner(actor, job)
    if job.state in FINISHED_JOB_STATES or job.state == JobState.COMPLETING:  # its Epilog runs
        raise ServiceError("Job/step already completing or completed")
    now = clock.now()
    who = actor.get_username()
    if signal is not None and not isinstance(signal, str):
        raise ServiceError(f"Invalid signal name: {jobspec.quoted(signal)}", field="signal")
    if signal and signal.upper().removeprefix("SIG") not in ("KILL", "TERM"):
        sig = signal.upper().removeprefix("SIG")
        if sig not in SIGNALS:
            raise ServiceError(f"Invalid signal name: {jobspec.quoted(signal)}", field="signal")
        if scope not in SIGNAL_SCOPES:
            raise ServiceError(f"Invalid signal scope: {jobspec.quoted(scope)}", field="scope")
        if job.state not in HOLDING_JOB_STATES:
            raise ServiceError("Job is pending execution")
        if scope != "steps" and job.batch:
            publish.to_agent(job.batch_host, Signal(job_id=job.id, signal=sig).to_wire())
        if scope != "batch":
            extensions.job_signalled(job, sig)
        return job
    if job.state == JobState.PENDING:
        end_job(job, JobState.CANCELLED, now=now, why="scancel", user=who)
    elif job.state == JobState.CONFIGURING and not job.launched:
        # Waiting for its nodes to power up or its allocation Prologs: no process to
        # signal, it ends at once.
        held = list(job.alloc)
        alloc_epilogs(job)
        end_job(job, JobState.CANCELLED, now=now, why="scancel", user=who)
        refresh_usage(held)
    else:
        terminate_running(job, final_state=JobState.CANCELLED, now=now)
        record_transition(job, job.state, now=now, why="scancel", user=who)
        publish.console_changed("jobs")
    return job


@transaction.atomic
def job_hold(*, actor: AbstractBaseUser, job_id: int, user_hold: bool = False) -> Job:
    """scontrol hold (an operator's is an administrator's hold, whoever owns the job) and
    uhold (``user_hold``: a user's hold whoever asks), as slurmctld's update_job; a hold
    asked by a user leaves an administrator's hold as it is."""
    job = Job.objects.select_for_update().get(pk=get_job(job_id).pk)
    _check_owner(actor, job)
    if job.state != JobState.PENDING:
        raise ServiceError("Job is no longer pending execution")
    operator = visibility.privileged(actor)
    if job.hold == "admin" and not operator:
        return job  # slurmctld: the priority is 0 already, nothing for a user to change
    job.hold = "admin" if operator and not user_hold else "user"
    job.reason = Reason.JOB_HELD_ADMIN if job.hold == "admin" else Reason.JOB_HELD_USER
    job.priority = 0
    job.save(update_fields=["hold", "reason", "priority"])
    record_transition(job, job.state, why="hold", user=actor.get_username())
    publish.console_changed("jobs")
    return job


@transaction.atomic
def job_release(*, actor: AbstractBaseUser, job_id: int) -> Job:
    job = Job.objects.select_for_update().get(pk=get_job(job_id).pk)
    _check_owner(actor, job)
    if job.state != JobState.PENDING:
        raise ServiceError("Job is no longer pending execution")
    if job.hold == "admin" and not visibility.privileged(actor):
        raise PermissionDenied("Access/permission denied")
    job.hold = ""
    job.reason = Reason.NONE
    job.save(update_fields=["hold", "reason"])
    record_transition(job, job.state, why="release", user=actor.get_username())
    publish.console_changed("jobs")
    triggers.schedule_after_commit()
    return job


@transaction.atomic
def job_requeue(*, actor: AbstractBaseUser, job_id: int, hold: bool = False) -> Job:
    """scontrol requeue; ``hold``: requeuehold, back to the queue held by its user's hold
    (slurmctld's JOB_REQUEUE_HOLD, whoever asks), until ``scontrol release``."""
    job = Job.objects.select_for_update().get(pk=get_job(job_id).pk)
    _check_owner(actor, job)
    if job.state not in HOLDING_JOB_STATES and job.state not in FINISHED_JOB_STATES:
        raise ServiceError("Job is pending execution")
    if not job.requeue:
        raise ServiceError("Requested operation is presently disabled")
    if job.state == JobState.COMPLETING:  # slurmctld's answer while the Epilog runs
        raise ServiceError("Job can not be altered now, try again later")
    now = clock.now()
    old = job.state
    if hold:
        # Kept through the run's end: requeue_now holds a job that has it.
        job.hold = "user"
        job.save(update_fields=["hold"])
    if job.state == JobState.CONFIGURING and not job.launched:
        # Its nodes power up or run their allocation Prolog: no process to wait for.
        held = list(job.alloc)
        alloc_epilogs(job)
        requeue_now(job, now=now)
        refresh_usage(held)
    elif job.state in HOLDING_JOB_STATES:
        # The job goes back to the queue once its processes are gone (see job_completed).
        terminate_running(job, final_state=JobState.REQUEUED, now=now)
    else:
        requeue_now(job, now=now)
    record_transition(job, old, now=now, why="requeuehold" if hold else "requeue", user=actor.get_username())
    publish.console_changed("jobs")
    return job


@transaction.atomic
def job_update(*, actor: AbstractBaseUser, job_id: int, changes: dict[str, Any]) -> Job:
    """scontrol update JobId=: TimeLimit, Partition, Licenses, Dependency, Account and QOS
    (cluster.services.job_account_update) and the request of a pending job
    (cluster.services.job_request_update), Name, Nice, Comment."""
    job = Job.objects.select_for_update().get(pk=get_job(job_id).pk)
    _check_owner(actor, job)
    if job.state in FINISHED_JOB_STATES:
        raise ServiceError("Job/step already completing or completed")
    # JobSubmitPlugins' job_modify: the changes as asked, which it may change or refuse.
    changes = dict(extensions.job_modify(changes, job=job, user=actor, cfg=ClusterConfig.current()).request)
    allowed = job_request_update.FIELDS | job_account_update.FIELDS | _UPDATED_HERE
    unknown = set(changes) - allowed
    if unknown:
        shown = ", ".join(sorted(jobspec.quoted(u) for u in unknown))
        raise ServiceError(f"Update of {shown} is not supported", field=jobspec.quoted(min(unknown, key=str)))
    changes = dict(changes)
    nice = _checked_nice(changes.pop("nice")) if "nice" in changes else None
    priority = job_priority_update.checked(changes.pop("priority")) if "priority" in changes else None
    changes = _checked_changes(changes)
    fields: list[str] = []
    before = {f.attname: getattr(job, f.attname) for f in Job._meta.concrete_fields}
    if nice is not None and nice != job.nice:
        _update_nice(actor, job, nice)
        fields += ["nice", "priority"]
    if priority is not None:
        fields += [f for f in job_priority_update.apply(actor, job, priority) if f not in fields]
    if "time_limit" in changes:
        try:
            limit = durations.parse_time_limit(changes["time_limit"])
        except ValueError:
            limit = -1
        if limit is not None and not 0 <= limit <= jobspec.MAX_INT32:
            raise ServiceError(f"Invalid TimeLimit value: {changes['time_limit']}", field="time_limit")
        # Only an administrator may raise a limit (Slurm: users may only decrease it).
        if not visibility.privileged(actor) and (
            limit is None or (job.time_limit is not None and limit > job.time_limit)
        ):
            raise PermissionDenied("Access/permission denied")
        job.time_limit = limit
        fields.append("time_limit")
    if "partition" in changes:
        if job.state != JobState.PENDING:
            raise ServiceError("Job is no longer pending execution")
        cfg = ClusterConfig.current()
        job.partition = _choose_partition(changes["partition"], cfg).name
        fields.append("partition")
    if "name" in changes:
        job.name = changes["name"][:256]
        fields.append("name")
    if "licenses" in changes:
        # Slurm's hres.html, "Limitations": the licenses of a running job that holds or
        # requests an HRES cannot be changed; requeue it and change them while it is
        # pending.  fsched re-books no license of a running job, so this holds for plain
        # licenses too.
        if job.state != JobState.PENDING:
            raise ServiceError("Job is no longer pending execution", field="licenses")
        job.licenses = _check_licenses(changes["licenses"], ClusterConfig.current())
        fields.append("licenses")
    if "dependency" in changes:
        _update_dependency(job, changes["dependency"])
        fields += ["dependency", "reason"]
    cfg = ClusterConfig.current()
    asked = {k: changes[k] for k in job_request_update.FIELDS if k in changes}
    fields += job_request_update.apply(job, asked, now=clock.now(), node_limit=selectors.hostlist_limit(cfg))
    moved = "partition" in changes or "licenses" in changes
    counted_as = (before["user"], before["account"], before["partition"], before["qos"])
    moved_to = "partition" in changes
    fields += job_account_update.apply(job, changes, moved=moved_to, counted_as=counted_as, cfg=cfg)
    if moved or job_request_update.REQUEST_FIELDS.intersection(fields):
        # Checked as a submission is, with every change made: a pending job that could never
        # run where it now is (Slurm validates scontrol update's new partition the same way).
        partition = _choose_partition(job.partition, cfg)
        _check_constraint(job.features, partition)
        req = NodeSet(job.req_nodes) if job.req_nodes else NodeSet()
        if req & NodeSet(job.exc_nodes) or not set(req) <= set(partition.node_names):
            raise ServiceError("Requested node configuration is not available", field="req_nodes")
        _check_moved_job(job, partition, cfg)
    if fields:
        job.save(update_fields=fields)
        record_transition(
            job,
            job.state,
            why="update " + ",".join(fields),
            user=actor.get_username(),
            detail={
                "before": {f: _audited(before[f]) for f in fields},
                "after": {f: _audited(getattr(job, f)) for f in fields},
            },
        )
        publish.console_changed("jobs")
        triggers.schedule_after_commit()
    return job


def _audited(value: Any) -> Any:
    """A field's value as the event's JSON holds it (a begin time as ISO 8601)."""
    return value.isoformat() if isinstance(value, datetime) else value


def _update_dependency(job: Job, text: str) -> None:
    """scontrol update Dependency=: pending jobs only (Slurm's ESLURM_JOB_NOT_PENDING); an
    empty value (or 0) clears it.  The reason is the new dependency's until the next pass
    tests it, which the update asks for; a held job keeps its hold's."""
    if job.state != JobState.PENDING:
        raise ServiceError("Job is no longer pending execution", field="dependency")
    job.dependency = depend_services.checked(
        text, job_id=job.id, array_job_id=job.array_job_id, array_task_id=job.array_task_id
    )
    if not job.hold:
        job.reason = Reason.DEPENDENCY if job.dependency else Reason.NONE


def _checked_nice(value: Any) -> int:
    try:
        return parse_nice(value)
    except ValueError as exc:
        raise ServiceError(str(exc).replace("--nice", "Nice"), field="nice") from None


def _update_nice(actor: AbstractBaseUser, job: Job, nice: int) -> None:
    """scontrol update Nice=, as slurmctld's update_job takes it: anyone who may update the
    job may set a nice of 0 or more, only an operator a negative one.  Under priority/basic
    the priority moves by the difference at once (at least 2), a running job's too;
    priority/multifactor gives a pending job its new priority at the next pass and leaves
    a running job's as it started (Slurm's default, without PriorityFlags=CALCULATE_RUNNING).
    A held job keeps its priority of 0 until released."""
    if nice < 0 and not visibility.privileged(actor):
        raise PermissionDenied("Access/permission denied", field="nice")
    if job.priority and extensions.priority_type() == extensions.BASIC_PRIORITY:
        job.priority = max(job.priority + job.nice - nice, 2)
    job.nice = nice


def _check_moved_job(job: Job, partition: _PartitionRow, cfg: ClusterConfig) -> None:
    """A pending job moved to another partition is checked there as a submission is (Slurm
    validates the new partition of ``scontrol update JobId= Partition=`` the same way)."""
    req = NodeSet(job.req_nodes) if job.req_nodes else NodeSet()
    request = feasibility.Request(
        nodes=max(job.min_nodes, len(req), 1),
        cpus_per_task=job.cpus_per_task,
        mem_per_node=job.mem_per_node,
        exc_nodes=frozenset(NodeSet(job.exc_nodes)) if job.exc_nodes else frozenset(),
        num_tasks=job.num_tasks,
    )
    pool, unnamed = _never_runs(request, partition, cfg, hres=bool(job.licenses))
    if job.licenses:
        fields = {"licenses": job.licenses, "req_nodes": job.req_nodes, "min_nodes": job.min_nodes}
        _check_extensions_feasible(fields, request.nodes, pool, unnamed)


_UPDATED_HERE = frozenset({"time_limit", "partition", "name", "licenses", "nice", "dependency", "priority"})
_UPDATE_FIELDS = {
    "begin": ("StartTime", 256),
    "features": ("Features", 512),
    "req_nodes": ("ReqNodeList", hostlists.MAX_TEXT),
    "exc_nodes": ("ExcNodeList", hostlists.MAX_TEXT),
    "nodes": ("NumNodes", 64),
    "num_tasks": ("NumTasks", 64),
    "mem": ("MinMemoryNode", 64),
    "comment": ("Comment", 1024),
    "account": ("Account", 64),
    "qos": ("QOS", 64),
    "time_limit": ("TimeLimit", 64),
    "partition": ("Partition", 1024),
    "name": ("JobName", 1024),
    "licenses": ("Licenses", 512),
    "dependency": ("Dependency", dependencies.MAX_TEXT),
}


def _checked_changes(changes: dict[str, Any]) -> dict[str, str]:
    """scontrol's values: printable text (a number for TimeLimit is taken as its digits)."""
    try:
        return {
            name: jobspec.check_text(value, name, _UPDATE_FIELDS[name][0], max_len=_UPDATE_FIELDS[name][1])
            for name, value in changes.items()
        }
    except jobspec.SpecError as exc:
        raise ServiceError(str(exc), field=exc.field) from None


@transaction.atomic
def job_suspend(*, actor: AbstractBaseUser, job_id: int) -> Job:
    if not visibility.privileged(actor):
        raise PermissionDenied("Access/permission denied")
    job = Job.objects.select_for_update().get(pk=get_job(job_id).pk)
    if job.state != JobState.RUNNING:
        raise ServiceError("Job is not running")
    suspend_job(job, now=clock.now(), user=actor.get_username())
    publish.console_changed("jobs")
    return job


@transaction.atomic
def job_resume(*, actor: AbstractBaseUser, job_id: int) -> Job:
    if not visibility.privileged(actor):
        raise PermissionDenied("Access/permission denied")
    job = Job.objects.select_for_update().get(pk=get_job(job_id).pk)
    if job.state != JobState.SUSPENDED:
        raise ServiceError("Job is not suspended")
    resume_job(job, now=clock.now(), user=actor.get_username())
    publish.console_changed("jobs")
    return job
