"""Job operations: submit, cancel, hold, release, requeue, update, suspend, resume."""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ClusterShell.NodeSet import NodeSet, NodeSetParseError
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone

from cluster import jobspec, publish, slurmtime
from cluster.models import ClusterConfig, Event, Job, JobIdCounter, Node, Partition, SubmitKey
from cluster.services import rows
from cluster.services.errors import NotFound, PermissionDenied, ServiceError
from cluster.states import ACTIVE_JOB_STATES, FINISHED_JOB_STATES, HOLDING_JOB_STATES, JobState, Reason
from hres.request import parse_license_request

log = logging.getLogger(__name__)

SIGNALS = {"HUP", "INT", "QUIT", "KILL", "USR1", "USR2", "TERM", "STOP", "CONT", "ALRM"}


@dataclass(frozen=True)
class Submitted:
    job_ids: list[int]
    array_job_id: int | None


def _field(spec: dict[str, Any], name: str) -> Any:
    value = spec.get(name)
    return None if value in (None, "") else value


def _nodeset(text: str, what: str) -> NodeSet:
    try:
        return NodeSet(text)
    except NodeSetParseError as exc:
        raise ServiceError(f"Invalid {what} specification: {text} ({exc})", field=what) from None


@dataclass(frozen=True)
class _PartitionTimes:
    name: str
    max_time: int | None
    default_time: int | None


def _choose_partition(name: str | None) -> _PartitionTimes:
    # Read without the ORM's compiler: this runs on every submission (see rows.py).
    fields = ("name", "max_time", "default_time")
    if name:
        # sbatch -p a,b: the first partition that exists is used (multi-partition jobs later).
        for candidate in name.split(","):
            found = rows.select(Partition, fields, {"name": candidate}, order_by=("pk",), limit=1)
            if found:
                return _PartitionTimes(*found[0])
        raise ServiceError("Invalid partition name specified", field="partition")
    found = rows.select(Partition, fields, {"is_default": True}, order_by=("pk",), limit=1)
    if not found:
        raise ServiceError("No partition specified or system default partition", field="partition")
    return _PartitionTimes(*found[0])


def _check_licenses(text: str, cfg: ClusterConfig) -> str:
    """``-L``: cluster licenses (``a:2|b:1`` allowed) and hierarchical resources with
    their plugin arguments (spec hres.md); refused here rather than pending forever."""
    from hres import services as hres_services  # noqa: PLC0415 - hres.services imports this module

    text = text.strip()
    if not text:
        return ""
    cluster_licenses = cfg.licenses
    modes = hres_services.modes()
    try:
        request = parse_license_request(text, hres=modes, plain=cluster_licenses)
    except ValueError as exc:
        raise ServiceError(str(exc), field="licenses") from None
    for item in request.plain(modes):
        if item.count > cluster_licenses[item.name]:
            raise ServiceError(
                f"Invalid license specification {item.name}:{item.count}: only "
                f"{cluster_licenses[item.name]} configured",
                field="licenses",
            )
    return str(request)


MAX_IDEMPOTENCY_KEY = 128  # SubmitKey.key's length


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
    now = now or timezone.now()
    if idempotency_key is not None:
        _check_idempotency_key(idempotency_key)
        if (earlier := _submitted_with(user.get_username(), idempotency_key)) is not None:
            return earlier
    cfg = ClusterConfig.current()
    common, tasks = _validate_submission(user, spec, now, cfg)
    try:
        return _store(common, tasks, now, cfg, idempotency_key=idempotency_key)
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
    user: AbstractBaseUser, spec: dict[str, Any], now: datetime, cfg: ClusterConfig
) -> tuple[dict[str, Any], list[int | None]]:
    username = user.get_username()
    script = spec.get("script") or ""
    wrap = _field(spec, "wrap")
    if wrap is not None:
        if script:
            raise ServiceError("Script arguments not permitted with --wrap option", field="wrap")
        script = f"#!/bin/sh\n# This script was created by sbatch --wrap.\n\n{wrap}\n"
    if not script.strip():
        raise ServiceError("Batch script is empty!", field="script")
    if not script.startswith("#!"):
        raise ServiceError(
            "This does not look like a batch script.  The first line must start with #! followed by "
            "the path to an interpreter.",
            field="script",
        )

    partition = _choose_partition(_field(spec, "partition"))
    try:
        min_nodes, max_nodes = jobspec.parse_node_count(_field(spec, "nodes") or 1)
    except ValueError as exc:
        raise ServiceError(str(exc), field="nodes") from None
    try:
        ntasks = jobspec.parse_positive(_field(spec, "ntasks") or 1, "number of tasks")
        cpus_per_task = jobspec.parse_positive(_field(spec, "cpus_per_task") or 1, "--cpus-per-task")
    except ValueError as exc:
        raise ServiceError(str(exc), field="ntasks") from None
    mem = None
    if (mem_text := _field(spec, "mem")) is not None:
        try:
            mem = slurmtime.parse_memory_mb(str(mem_text))
        except ValueError:
            raise ServiceError(f"Invalid --mem specification: {mem_text}", field="mem") from None
    # No -t: the partition's DefaultTime, else its MaxTime, fixed at submission as Slurm does.
    time_limit = partition.default_time if partition.default_time is not None else partition.max_time
    if (time_text := _field(spec, "time")) is not None:
        try:
            time_limit = slurmtime.parse_job_time_limit(str(time_text))
        except ValueError:
            raise ServiceError(f"Invalid time limit specification: {time_text}", field="time") from None
    begin = None
    if (begin_text := _field(spec, "begin")) is not None:
        try:
            begin = slurmtime.parse_begin_time(str(begin_text), now)
        except ValueError:
            raise ServiceError(f"Invalid time specification: {begin_text}", field="begin") from None

    req_nodes = _nodeset(_field(spec, "nodelist") or "", "nodelist")
    exc_nodes = _nodeset(_field(spec, "exclude") or "", "exclude")
    named = list(req_nodes | exc_nodes)
    known = set(Node.objects.filter(name__in=named).values_list("name", flat=True)) if named else set()
    for ns in (req_nodes, exc_nodes):
        unknown = [n for n in ns if n not in known]
        if unknown:
            raise ServiceError(f"Invalid node name specified: {NodeSet.fromlist(unknown)}", field="nodelist")
    if len(req_nodes) > (max_nodes or min_nodes) and max_nodes is None:
        min_nodes = len(req_nodes)
    if len(req_nodes & exc_nodes):
        raise ServiceError("Requested node configuration is not available", field="nodelist")

    licenses = _check_licenses(str(_field(spec, "licenses") or ""), cfg)

    tasks: list[int | None] = [None]
    throttle = None
    if (array_text := _field(spec, "array")) is not None:
        try:
            task_ids, throttle = jobspec.parse_array(str(array_text))
        except ValueError as exc:
            raise ServiceError(str(exc), field="array") from None
        tasks = list(task_ids)

    signal_hold = bool(spec.get("hold"))
    work_dir = _field(spec, "work_dir") or "/tmp"  # noqa: S108 - the CLI always sends its cwd
    if not os.path.isabs(work_dir):
        raise ServiceError(f"Invalid working directory: {work_dir} (must be absolute)", field="work_dir")
    argv = spec.get("argv") or []
    environment = spec.get("environment") or {}
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise ServiceError("argv must be a list of strings", field="argv")
    if not isinstance(environment, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in environment.items()
    ):
        raise ServiceError("environment must map strings to strings", field="environment")

    name = _field(spec, "name") or ("wrap" if wrap is not None else "sbatch")
    common = {
        "name": name[:256],
        "user": username,
        "submitter": user if user.pk else None,
        "account": _field(spec, "account") or "",
        "qos": _field(spec, "qos") or "",
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
        "licenses": licenses,
        # --gres per node (gpu:2); parsed and checked against the tracked TRES in submit_fields.
        "gres": str(_field(spec, "gres") or ""),
        "req_nodes": str(req_nodes),
        "exc_nodes": str(exc_nodes),
        "features": _field(spec, "constraint") or "",
        "reservation": _field(spec, "reservation") or "",
        "hold": "user" if signal_hold else "",
        "begin_time": begin,
        "requeue": spec.get("requeue", True) is not False,
        "submit_time": now,
        "eligible_time": None if begin and begin > now else now,
        "array_max_tasks": throttle,
        "reason": Reason.JOB_HELD_USER.value if signal_hold else Reason.NONE.value,
        "priority": 0 if signal_hold else 1,
    }
    # Accounting (spec resource_limits.md): default account and QOS, submit limits.
    from limits.services import submit_fields  # noqa: PLC0415 - limits.services imports this module

    common.update(submit_fields(common, count=len(tasks), now=now, cfg=cfg))
    if common["reservation"]:
        from cluster.services.reservations import check_job_access  # noqa: PLC0415 - it imports this module

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
    username = common["user"]
    # Before the write transaction, which stays short (on SQLite it holds the database).
    _admit(len(tasks), cfg)
    with transaction.atomic():
        first = _take_job_ids(len(tasks))
        array_job_id = first if tasks != [None] else None
        job_ids = [first + i for i in range(len(tasks))]
        rows.insert_values(
            Job,
            [
                {"id": job_id, "array_job_id": array_job_id, "array_task_id": task, **common}
                for job_id, task in zip(job_ids, tasks, strict=True)
            ],
        )
        rows.insert_values(
            Event,
            [transition_row(job_id, "", JobState.PENDING, now=now, user=username) for job_id in job_ids],
        )
        if idempotency_key is not None:
            SubmitKey.objects.create(
                user=username,
                key=idempotency_key,
                response={"job_ids": job_ids, "array_job_id": array_job_id},
                created=now,
            )
        publish.console_changed("jobs")
    # A held job, or one that begins later, cannot start now: no pass to ask for (the
    # periodic pass sees it when --begin comes; release asks for one).
    if not common["hold"] and common["eligible_time"] is not None:
        _request_schedule()
    return Submitted(job_ids=job_ids, array_job_id=array_job_id)


def job_test_only(*, user: AbstractBaseUser, spec: dict[str, Any], now: datetime | None = None) -> dict:
    """sbatch --test-only: validate, and say where and when the job would start; store nothing."""
    from cluster.services.scheduling import estimate_start  # noqa: PLC0415 - scheduling imports jobs

    now = now or timezone.now()
    common, _tasks = _validate_submission(user, spec, now, ClusterConfig.current())
    start, nodes, cpus = estimate_start(common, now=now)
    when = start.strftime("%Y-%m-%dT%H:%M:%S") if start else "Unknown"
    return {
        "job_id": None,
        "start_time": start.isoformat() if start else None,
        "nodes": nodes,
        "message": f"Job to start at {when} using {cpus} processors on nodes {nodes or '(null)'} "
        f"in partition {common['partition']}",
    }


def _take_job_ids(count: int) -> int:
    """The first of ``count`` new job ids, taken under the counter row's lock."""
    last = rows.add_returning(JobIdCounter, 1, "next_id", count)
    if last is None:  # the first job of a new database
        JobIdCounter.objects.get_or_create(pk=1)
        last = rows.add_returning(JobIdCounter, 1, "next_id", count)
    return last - count


def _request_schedule() -> None:
    from cluster.cycles import request_schedule  # noqa: PLC0415 - cycles import services

    transaction.on_commit(request_schedule)


def get_job(job_id: int) -> Job:
    try:
        return Job.objects.get(pk=job_id)
    except (Job.DoesNotExist, ValueError, TypeError):
        raise NotFound("Invalid job id specified") from None


def _check_owner(actor: AbstractBaseUser, job: Job) -> None:
    if not (actor.is_staff or job.user == actor.get_username()):
        raise PermissionDenied("Access/permission denied")


def transition_row(
    job_id: int,
    old: str,
    new: str,
    *,
    now: datetime,
    why: str = "",
    user: str = "",
    node: str = "",
    detail: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One row of a job's history, for ``rows.insert_values(Event, ...)`` (the console's
    timeline and later reports read these)."""
    return {
        "time": now,
        "kind": Event.Kind.JOB,
        "job_id": job_id,
        "old_state": old,
        "new_state": new,
        "reason": why,
        "user": user,
        "node": node,
        "detail": detail or {},
    }


def record_transition(
    job: Job,
    old: str,
    *,
    now: datetime | None = None,
    why: str = "",
    user: str = "",
    node: str = "",
    detail: dict[str, Any] | None = None,
) -> None:
    """Record ``job``'s change from ``old`` to its present state."""
    rows.insert_values(
        Event,
        [
            transition_row(
                job.id,
                old,
                job.state,
                now=now or timezone.now(),
                why=why,
                user=user,
                node=node,
                detail=detail,
            )
        ],
    )


def end_job(
    job: Job,
    state: JobState,
    *,
    now: datetime,
    why: str,
    reason: str = Reason.NONE,
    node: str = "",
    user: str = "",
) -> None:
    """A job reaches a final state without an exit from its processes (cancelled while
    pending, lost with its node, failed to launch): it releases its nodes at once."""
    old = job.state
    job.state = state
    job.reason = reason
    job.end_time = now
    job.alloc = {}
    job.final_state = ""
    job.save()
    record_transition(job, old, now=now, why=why, user=user, node=node)
    publish.console_changed("jobs")


@transaction.atomic
def job_cancel(*, actor: AbstractBaseUser, job_id: int, signal: str | None = None) -> Job:
    """scancel: a pending job ends at once; a running one is signalled on its node."""
    job = Job.objects.select_for_update().get(pk=get_job(job_id).pk)
    _check_owner(actor, job)
    if job.state in FINISHED_JOB_STATES:
        raise ServiceError("Job/step already completing or completed")
    now = timezone.now()
    who = actor.get_username()
    if signal and signal.upper().removeprefix("SIG") not in ("KILL", "TERM"):
        sig = signal.upper().removeprefix("SIG")
        if sig not in SIGNALS:
            raise ServiceError(f"Invalid signal name: {signal}")
        if job.state not in HOLDING_JOB_STATES:
            raise ServiceError("Job is pending execution")
        publish.to_agent(job.batch_host, {"type": "signal", "job_id": job.id, "signal": sig})
        return job
    if job.state == JobState.PENDING:
        end_job(job, JobState.CANCELLED, now=now, why="scancel", user=who)
    elif job.state == JobState.CONFIGURING and not job.launched:
        # Waiting for its nodes to power up: no process to signal, it ends at once.
        from cluster.services.nodes import refresh_usage  # noqa: PLC0415 - nodes imports jobs

        held = list(job.alloc)
        end_job(job, JobState.CANCELLED, now=now, why="scancel", user=who)
        refresh_usage(held)
    else:
        terminate_running(job, final_state=JobState.CANCELLED, now=now)
        record_transition(job, job.state, now=now, why="scancel", user=who)
        publish.console_changed("jobs")
    return job


def terminate_running(job: Job, *, final_state: JobState, now: datetime) -> None:
    """Ask the agent to end a job: TERM, then KILL after KillWait; the exit is recorded later."""
    kill_wait = ClusterConfig.current().option_int("KillWait", 30)
    job.final_state = final_state
    job.kill_requested = now
    job.save(update_fields=["final_state", "kill_requested"])
    if job.state == JobState.SUSPENDED:
        publish.to_agent(job.batch_host, {"type": "signal", "job_id": job.id, "signal": "CONT"})
    publish.to_agent(job.batch_host, {"type": "cancel", "job_id": job.id, "kill_wait": kill_wait})


@transaction.atomic
def job_hold(*, actor: AbstractBaseUser, job_id: int) -> Job:
    job = Job.objects.select_for_update().get(pk=get_job(job_id).pk)
    _check_owner(actor, job)
    if job.state != JobState.PENDING:
        raise ServiceError("Job is no longer pending execution")
    job.hold = "admin" if actor.is_staff and job.user != actor.get_username() else "user"
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
    if job.hold == "admin" and not actor.is_staff:
        raise PermissionDenied("Access/permission denied")
    job.hold = ""
    job.reason = Reason.NONE
    job.save(update_fields=["hold", "reason"])
    record_transition(job, job.state, why="release", user=actor.get_username())
    publish.console_changed("jobs")
    _request_schedule()
    return job


@transaction.atomic
def job_requeue(*, actor: AbstractBaseUser, job_id: int) -> Job:
    job = Job.objects.select_for_update().get(pk=get_job(job_id).pk)
    _check_owner(actor, job)
    if job.state not in HOLDING_JOB_STATES and job.state not in FINISHED_JOB_STATES:
        raise ServiceError("Job is pending execution")
    if not job.requeue:
        raise ServiceError("Requested operation is presently disabled")
    now = timezone.now()
    old = job.state
    if job.state in HOLDING_JOB_STATES:
        # The job goes back to the queue once its processes are gone (see job_completed).
        terminate_running(job, final_state=JobState.REQUEUED, now=now)
    else:
        requeue_now(job, now=now)
    record_transition(job, old, now=now, why="requeue", user=actor.get_username())
    publish.console_changed("jobs")
    return job


def requeue_now(job: Job, *, now: datetime) -> None:
    job.state = JobState.PENDING
    job.reason = Reason.NONE
    job.restart_count += 1
    job.start_time = None
    job.end_time = None
    job.node_list = ""
    job.batch_host = ""
    job.alloc = {}
    job.launched = False
    job.kill_requested = None
    job.final_state = ""
    job.exit_code = 0
    job.exit_signal = 0
    job.eligible_time = now
    job.save()


@transaction.atomic
def job_update(*, actor: AbstractBaseUser, job_id: int, changes: dict[str, Any]) -> Job:
    """scontrol update JobId=: TimeLimit, Partition (pending only), Name, Nice-free subset."""
    job = Job.objects.select_for_update().get(pk=get_job(job_id).pk)
    _check_owner(actor, job)
    if job.state in FINISHED_JOB_STATES:
        raise ServiceError("Job/step already completing or completed")
    allowed = {"time_limit", "partition", "name", "comment"}
    unknown = set(changes) - allowed
    if unknown:
        raise ServiceError(f"Update of {', '.join(sorted(unknown))} is not supported")
    fields: list[str] = []
    before = {f: getattr(job, f) for f in allowed if hasattr(job, f)}
    if "time_limit" in changes:
        try:
            limit = slurmtime.parse_time_limit(str(changes["time_limit"]))
        except ValueError:
            raise ServiceError(f"Invalid TimeLimit value: {changes['time_limit']}") from None
        # Only an administrator may raise a limit (Slurm: users may only decrease it).
        if not actor.is_staff and (limit is None or (job.time_limit is not None and limit > job.time_limit)):
            raise PermissionDenied("Access/permission denied")
        job.time_limit = limit
        fields.append("time_limit")
    if "partition" in changes:
        if job.state != JobState.PENDING:
            raise ServiceError("Job is no longer pending execution")
        job.partition = _choose_partition(str(changes["partition"])).name
        fields.append("partition")
    if "name" in changes:
        job.name = str(changes["name"])[:256]
        fields.append("name")
    if fields:
        job.save(update_fields=fields)
        record_transition(
            job,
            job.state,
            why="update " + ",".join(fields),
            user=actor.get_username(),
            detail={"before": {f: before[f] for f in fields}, "after": {f: getattr(job, f) for f in fields}},
        )
        publish.console_changed("jobs")
        _request_schedule()
    return job


@transaction.atomic
def job_suspend(*, actor: AbstractBaseUser, job_id: int) -> Job:
    if not actor.is_staff:
        raise PermissionDenied("Access/permission denied")
    job = Job.objects.select_for_update().get(pk=get_job(job_id).pk)
    if job.state != JobState.RUNNING:
        raise ServiceError("Job is not running")
    old = job.state
    job.state = JobState.SUSPENDED
    job.save(update_fields=["state"])
    publish.to_agent(job.batch_host, {"type": "signal", "job_id": job.id, "signal": "STOP"})
    record_transition(job, old, why="suspend", user=actor.get_username())
    publish.console_changed("jobs")
    return job


@transaction.atomic
def job_resume(*, actor: AbstractBaseUser, job_id: int) -> Job:
    if not actor.is_staff:
        raise PermissionDenied("Access/permission denied")
    job = Job.objects.select_for_update().get(pk=get_job(job_id).pk)
    if job.state != JobState.SUSPENDED:
        raise ServiceError("Job is not suspended")
    job.state = JobState.RUNNING
    job.save(update_fields=["state"])
    publish.to_agent(job.batch_host, {"type": "signal", "job_id": job.id, "signal": "CONT"})
    record_transition(job, JobState.SUSPENDED, why="resume", user=actor.get_username())
    publish.console_changed("jobs")
    return job
