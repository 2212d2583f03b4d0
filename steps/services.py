"""The controller's side of job steps: one function per operation (docs/steps.md).

The controller decides where a step runs and records its state; it never carries the
tasks' output, which flows from the agents to srun directly.
"""

from __future__ import annotations

import ipaddress
import logging
import re
import signal as signals
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Max

from cluster import clock, extensions, publish, visibility
from cluster.core import hostlists
from cluster.core.states import JobState
from cluster.models import Job
from cluster.services import rows, step_usage
from cluster.services.action_audit import action_audit_record
from cluster.services.errors import NotFound, PermissionDenied, ServiceError
from slurmwords import agent_messages as am
from slurmwords.step_ids import INTERACTIVE_STEP, step_label
from steps.core import layout
from steps.core.warning import step_warning
from steps.models import Step

log = logging.getLogger("fsched.steps")

RUNNING = "RUNNING"
COMPLETED = "COMPLETED"
FAILED = "FAILED"
CANCELLED = "CANCELLED"
LIVE_JOB = (JobState.RUNNING.value, JobState.SUSPENDED.value)
MAX_ARGV = 64 * 1024
MAX_ENV = 256 * 1024
MAX_TASKS = 100_000
KEY = re.compile(r"[0-9a-f]{64}")


class StepBusy(ServiceError):
    """Not now; srun retries (``step creation temporarily disabled``)."""

    status = 409


def _int(data: Mapping[str, Any], name: str, *, low: int = 1, high: int = MAX_TASKS) -> int | None:
    value = data.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ServiceError(f"{name} must be a whole number from {low} to {high}", field=name)
    return value


def _text(data: Mapping[str, Any], name: str, *, limit: int = 1024, required: bool = False) -> str | None:
    value = data.get(name)
    if value is None or value == "":
        if required:
            raise ServiceError(f"{name} is required", field=name)
        return None
    if not isinstance(value, str) or len(value) > limit or "\0" in value:
        raise ServiceError(f"{name} must be a string of at most {limit} characters, without NUL", field=name)
    return value


CPU_BINDS = frozenset({"", "none", "rank", "rank_ldom", "sockets", "cores", "threads", "ldoms"})


def _cpu_bind(data: Mapping[str, Any]) -> dict[str, Any]:
    """srun --cpu-bind's type (cli/cpu_bind.py) and verbosity, for the launch."""
    kind = data.get("cpu_bind")
    if kind is not None and (not isinstance(kind, str) or kind not in CPU_BINDS):
        raise ServiceError(f"cpu_bind must be one of {', '.join(sorted(CPU_BINDS - {''}))}", field="cpu_bind")
    out: dict[str, Any] = {"cpu_bind": kind} if kind else {}
    if _flag(data, "cpu_bind_verbose"):
        out["cpu_bind_verbose"] = True
    return out


def _task_argv(data: Mapping[str, Any], ntasks: int) -> list[list[str]] | None:
    """srun --multi-prog: one argv per task of the step, by task id; None without it."""
    lists = data.get("task_argv")
    if lists is None:
        return None
    if not isinstance(lists, list) or len(lists) != ntasks:
        raise ServiceError(f"task_argv must be a list of {ntasks} argv lists, one a task", field="task_argv")
    out = [_argv({"argv": argv}) for argv in lists]
    if sum(len(a) for argv in out for a in argv) > MAX_ARGV * 16:
        raise ServiceError(f"task_argv must be at most {MAX_ARGV * 16} characters in all", field="task_argv")
    return out


def _argv(data: Mapping[str, Any]) -> list[str]:
    argv = data.get("argv")
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) and "\0" not in a for a in argv):
        raise ServiceError("argv must be a non-empty list of strings without NUL", field="argv")
    if sum(len(a) for a in argv) > MAX_ARGV or not argv[0]:
        raise ServiceError(f"argv must name a command, at most {MAX_ARGV} characters in all", field="argv")
    return argv


def _environment(data: Mapping[str, Any]) -> dict[str, str]:
    env = data.get("environment") or {}
    ok = isinstance(env, dict) and all(
        isinstance(k, str) and isinstance(v, str) and k and "=" not in k and "\0" not in k + v
        for k, v in env.items()
    )
    if not ok:
        raise ServiceError("environment must map names to strings", field="environment")
    if sum(len(k) + len(v) for k, v in env.items()) > MAX_ENV:
        raise ServiceError(f"environment is over {MAX_ENV} characters", field="environment")
    return env


def _io(data: Mapping[str, Any]) -> tuple[str, int, str]:
    host = _text(data, "io_host", limit=255, required=True)
    try:
        # An address, as srun reads it off its own socket: the agents connect to nothing else.
        ipaddress.ip_address(str(host))
    except ValueError:
        raise ServiceError("io_host must be an IP address", field="io_host") from None
    port = _int(data, "io_port", low=1, high=65535)
    key = data.get("io_key")
    if port is None:
        raise ServiceError("io_port is required", field="io_port")
    if not isinstance(key, str) or not KEY.fullmatch(key):
        raise ServiceError("io_key must be 64 hex digits", field="io_key")
    return str(host), port, key


def _flag(data: Mapping[str, Any], name: str) -> bool:
    value = data.get(name, False)
    if not isinstance(value, bool):
        raise ServiceError(f"{name} must be true or false", field=name)
    return value


def _terminal(data: Mapping[str, Any], streams: Mapping[str, str | None]) -> dict[str, Any]:
    """srun --pty: task 0 on a pseudo-terminal of srun's terminal's size; srun's own
    refusal when its output, error or input is also named."""
    if not _flag(data, "pty"):
        return {}
    if any(streams.values()):
        raise ServiceError("--error/--input/--output are incompatible with --pty", field="pty")
    size = {k: _int(data, k, high=65535) for k in ("pty_rows", "pty_cols")}
    return {"pty": True, **size}


def _job_for(actor: Any, job_id: int, *, lock: bool) -> Job:
    qs = Job.objects.select_for_update() if lock else Job.objects
    job = qs.filter(pk=job_id).first()
    if job is None or not visibility.may_see(actor, job):
        raise NotFound("Invalid job id specified")
    return job


def _may_run_as(actor: Any, job: Job) -> bool:
    """A step runs as the job's user: only that user or an operator may start one (an
    account coordinator may cancel a job, never run commands as its user)."""
    v = visibility.viewer(actor)
    return v.staff or v.privileged or (bool(v.username) and job.user == v.username)


def _held(job: Job) -> dict[str, set[int]]:
    held: dict[str, set[int]] = {}
    for row in Step.objects.filter(job=job, state=RUNNING, overlap=False).values_list("layout", flat=True):
        for node, _tasks, cpus in row:
            held.setdefault(node, set()).update(cpus)
    return held


def create_step(*, actor: Any, job_id: int, data: Mapping[str, Any], now: datetime | None = None) -> Step:
    """srun inside an allocation: a new step of a RUNNING job, launched on its nodes'
    agents after the commit; StepBusy while the job's other steps hold the CPUs it needs."""
    now = now or clock.now()
    interactive = _flag(data, "interactive")
    req = layout.Request(
        ntasks=_int(data, "ntasks"),
        nodes=_int(data, "nodes", high=10_000),
        ntasks_per_node=_int(data, "ntasks_per_node"),
        cpus_per_task=_int(data, "cpus_per_task", high=10_000) or 1,
        # The interactive step overlaps: it holds none of the CPUs the job's other steps need.
        overlap=bool(data.get("overlap")) or interactive,
        interactive=interactive,
    )
    argv, env = _argv(data), _environment(data)
    work_dir = _text(data, "work_dir", required=True) or "/"
    if not work_dir.startswith("/"):
        raise ServiceError("work_dir must be an absolute path", field="work_dir")
    # slurmctld names its interactive step "interactive", whatever srun's -J says.
    name = "interactive" if interactive else _text(data, "name", limit=256) or argv[0].rsplit("/", 1)[-1]
    streams = {k: _text(data, k) for k in ("std_out", "std_err", "std_in")}
    io_host, io_port, io_key = _io(data)
    terminal = _terminal(data, streams)
    preserve = {"preserve_env": True} if _flag(data, "preserve_env") else {}
    binding = _cpu_bind(data)
    with transaction.atomic():
        job = _job_for(actor, job_id, lock=True)  # the job's lock orders its steps' ids
        if not _may_run_as(actor, job):
            raise PermissionDenied("Access/permission denied")
        if job.state != JobState.RUNNING.value:
            if job.state == JobState.PENDING.value:
                raise ServiceError("Job is pending execution")
            raise ServiceError("Job/step already completing or completed")
        if job.script and not job.launched:
            # Its agent has not started the batch script yet (it may be reconnecting): a
            # launch sent now could be lost with no one to resend it. srun waits, as for a
            # job still configuring.
            raise StepBusy("Job is not launched yet")
        if interactive and Step.objects.filter(job=job, interactive=True, state=RUNNING).exists():
            # slurmctld's _build_interactive_step: one at a time per job.
            raise ServiceError("Duplicate job step id")
        nodes = list(job.alloc) if job.alloc else [job.batch_host]
        if job.node_list:
            order = hostlists.expand(job.node_list, limit=100_000)
            nodes = [n for n in order if n in job.alloc] or nodes
        cpus = {n: int(v[0]) for n, v in job.alloc.items()}
        try:
            plan = layout.plan(req, nodes, cpus, _held(job))
        except layout.StepRefused as exc:
            raise ServiceError(str(exc)) from None
        except layout.StepBusy:
            raise StepBusy("Requested nodes are busy") from None
        per_task = _task_argv(data, plan.ntasks)
        if interactive:
            # slurmctld keeps no ended step, and slurmdbd's record of a step id is its last:
            # a new interactive step replaces the job's earlier one.
            Step.objects.filter(job=job, step_id=INTERACTIVE_STEP).delete()
            step_usage.forget_step(job_id=job.id, step=str(INTERACTIVE_STEP))
            step_id = INTERACTIVE_STEP
        else:
            last = Step.objects.filter(job=job, interactive=False).aggregate(m=Max("step_id"))["m"]
            step_id = 0 if last is None else last + 1
        step = Step.objects.create(
            job=job,
            step_id=step_id,
            name=name,
            node_list=hostlists.fold(plan.nodes),
            num_nodes=len(plan.nodes),
            num_tasks=plan.ntasks,
            cpus_per_task=req.cpus_per_task,
            tasks_per_node=plan.tasks_per_node,
            layout=[[n, t, c] for n, t, c in zip(plan.nodes, plan.tasks, plan.cpus, strict=True)],
            overlap=req.overlap,
            interactive=interactive,
            argv=argv,
            start_time=now,
        )
        job_info = _job_info(job)
        warning = step_warning(
            job.signal,
            time_limit_minutes=job.time_limit,
            start=job.start_time.timestamp() if job.start_time else now.timestamp(),
            paused_seconds=job.paused_seconds,
        )
        warn = {"warn_signal": warning[0], "warn_at": warning[1]} if warning else {}
        launches = [
            (
                node,
                am.StepLaunch(
                    job_id=job.id,
                    step_id=step.step_id,
                    node=node,
                    node_index=i,
                    tasks=tasks,
                    cpu_ids=ids,
                    ntasks=plan.ntasks,
                    node_list=step.node_list,
                    num_nodes=step.num_nodes,
                    tasks_per_node=plan.tasks_per_node,
                    argv=argv,
                    environment=env,
                    work_dir=work_dir,
                    job={**job_info, "cpus_on_node": cpus.get(node, 1)},
                    io_host=io_host,
                    io_port=io_port,
                    io_key=io_key,
                    # The interactive task has the job's CPUs on its node, not a task's share.
                    cpus_per_task=len(ids) if interactive else _int(data, "cpus_per_task", high=10_000),
                    **streams,
                    **warn,
                    **terminal,
                    **preserve,
                    **({"task_argv": {str(t): per_task[t] for t in tasks}} if per_task else {}),
                    **binding,
                ).to_wire(),
            )
            for i, (node, tasks, ids) in enumerate(zip(plan.nodes, plan.tasks, plan.cpus, strict=True))
        ]
        publish.to_agents(launches)
        publish.console_changed("jobs")
    return step


def _job_info(job: Job) -> dict[str, Any]:
    """What the tasks' SLURM_JOB_* are made of (agent/jobs.py's job_environment), and
    what the extensions add to a launch (hres/lua's preps, as a step's credential carries
    them in Slurm)."""
    info = {
        "job_id": job.id,
        "name": job.name,
        "user": job.user,
        "node_list": job.node_list,
        "num_nodes": len(job.alloc) or job.min_nodes,
        "work_dir": job.work_dir,
        "partition": job.partition,
        "account": job.account,
        "qos": job.qos,
        "run": job.restart_count,
        "array_job_id": job.array_job_id,
        "array_task_id": job.array_task_id,
        # The job's expected end as of the step's start, for hres/lua's task functions'
        # job.end_time: the limit counts run time, so a suspension moves the start.
        "time_limit": job.time_limit,
        "start_time": (job.start_time.timestamp() + (job.paused_seconds or 0)) if job.start_time else None,
    }
    for ext in extensions.active():
        info.update(ext.launch_fields(job))
    return info


def _step_for(actor: Any, job_id: int, step_id: int) -> tuple[Job, Step]:
    job = _job_for(actor, job_id, lock=False)
    step = Step.objects.select_for_update().filter(job=job, step_id=step_id).first()
    if step is None:
        raise NotFound(f"Job step {job_id}.{step_label(step_id)} not found")
    return job, step


def _signal_nodes(step: Step, name: str) -> None:
    publish.to_agents([
        (node, am.StepSignal(job_id=step.job_id, step_id=step.step_id, node=node, signal=name).to_wire())
        for node, _tasks, _cpus in step.layout
    ])  # fmt: skip


def cancel_step(
    *, actor: Any, job_id: int, step_id: int, signal: object = None, now: datetime | None = None
) -> Step:
    """``scancel JOBID.STEP`` (and srun's second Ctrl-C): the step alone ends CANCELLED, its
    tasks killed; ``signal`` first (srun forwards its Ctrl-C as SIGINT, then forces the end)."""
    now = now or clock.now()
    first = None if signal is None else _signal_name(signal)
    with transaction.atomic():
        job, step = _step_for(actor, job_id, step_id)
        if not visibility.may_manage(actor, job):
            raise PermissionDenied("Access/permission denied")
        if step.state != RUNNING:
            raise ServiceError("Job/step already completing or completed")
        step.state, step.end_time = CANCELLED, now
        step.save(update_fields=["state", "end_time"])
        if first is not None and first != "KILL":
            _signal_nodes(step, first)
        _signal_nodes(step, "KILL")
        action_audit_record(
            actor=actor, instance=step, action="cancel", changes={"state": [RUNNING, CANCELLED]}
        )
        publish.console_changed("jobs")
    return step


def signal_step(*, actor: Any, job_id: int, step_id: int, signal: object) -> Step:
    """``scancel -s SIG JOBID.STEP``, srun's -K and its first Ctrl-C forward: the tasks get it."""
    name = _signal_name(signal)
    with transaction.atomic():
        job, step = _step_for(actor, job_id, step_id)
        if not visibility.may_manage(actor, job):
            raise PermissionDenied("Access/permission denied")
        if step.state != RUNNING:
            raise ServiceError("Job/step already completing or completed")
        _signal_nodes(step, name)
    return step


def _signal_name(signal: object) -> str:
    """``INT``, ``SIGINT`` or ``2`` → ``INT`` (the agents' spelling); refused when no signal."""
    if not isinstance(signal, str | int) or isinstance(signal, bool):
        raise ServiceError("Invalid signal name", field="signal")
    text = str(signal).upper().removeprefix("SIG")
    try:
        sig = signals.Signals(int(text)) if text.isdigit() else signals.Signals["SIG" + text]
    except (KeyError, ValueError):
        raise ServiceError(f"Invalid signal name: {signal}", field="signal") from None
    return sig.name.removeprefix("SIG")


def signal_job_steps(job_id: int, signal: str) -> int:
    """The job's running steps get ``signal`` on each of their nodes (a suspend's STOP, a
    resume's CONT, ``scancel -s``), in the caller's transaction."""
    running = list(Step.objects.filter(job_id=job_id, state=RUNNING))
    for step in running:
        _signal_nodes(step, signal)
    return len(running)


def step_done(*, nodes: list[str], msg: dict[str, Any], now: datetime | None = None) -> None:
    """An agent's ``step_done``: the step ends once all its nodes have reported.

    Heard only for the connection's own nodes, and only for a node of that step."""
    now = now or clock.now()
    try:
        done = am.decode(msg, {am.StepDone.TYPE: am.StepDone})
    except am.MessageError as exc:
        log.warning("malformed step_done dropped: %s", exc)
        return
    assert isinstance(done, am.StepDone)
    if done.node not in nodes:
        log.warning("step_done for %s from a connection holding %s: ignored", done.node, ",".join(nodes))
        return
    with transaction.atomic():
        step = Step.objects.select_for_update().filter(job_id=done.job_id, step_id=done.step_id).first()
        if step is None or done.node not in {n for n, _t, _c in step.layout}:
            log.warning("step_done for step %d.%d on %s, not one of its nodes: ignored",
                        done.job_id, done.step_id, done.node)  # fmt: skip
            return
        step.reports = {**step.reports, done.node: [done.exit_code, done.signal]}
        step_usage.step_ended(
            job_id=done.job_id, step=str(done.step_id), node=done.node, ends=done.tasks or []
        )
        if done.error and not step.error:
            step.error = f"{done.node}: {done.error}"[:512]
        fields = ["reports", "error"]
        if len(step.reports) == len(step.layout):
            codes = list(step.reports.values())
            step.exit_code = max(c[0] for c in codes)
            step.exit_signal = next((c[1] for c in codes if c[1]), 0)
            fields += ["exit_code", "exit_signal"]
            if step.state == RUNNING:
                failed = step.exit_code or step.exit_signal or step.error
                step.state = FAILED if failed else COMPLETED
                step.end_time = now
                fields += ["state", "end_time"]
        step.save(update_fields=fields)
        publish.console_changed("jobs")


def end_steps_of_ended_jobs(now: datetime) -> int:
    """The running steps of jobs that are no longer running end with them, CANCELLED, and
    their tasks are killed (Slurm ends a job's steps with the job)."""
    # Every completion batch asks, and a cluster running batch jobs only has no step
    # running: one plain statement answers that, where the query below is compiled by
    # the ORM (a third of recording a batch's ends).
    if not rows.select(Step, ("pk",), {"state": RUNNING}, limit=1):
        return 0
    # The steps' rows alone: the jobs' are this transaction's already (docs/locking.md).
    running = Step.objects.select_for_update(of=("self",)).filter(state=RUNNING)
    ended = list(running.exclude(job__state__in=LIVE_JOB))
    for step in ended:
        step.state, step.end_time = CANCELLED, now
        _signal_nodes(step, "KILL")
    Step.objects.bulk_update(ended, ["state", "end_time"])
    return len(ended)


def shown_state(step: Step) -> str:
    """A step still RUNNING in its row whose job has ended by a path that frees no nodes
    (a node failure) ended with it: CANCELLED, as the job's end would have recorded it."""
    if step.state == RUNNING and step.job.state not in LIVE_JOB:
        return CANCELLED
    return step.state


def steps_of(job_ids: Iterable[int]) -> dict[int, list[Step]]:
    out: dict[int, list[Step]] = {}
    # slurmdbd's order: by the signed step id, where the interactive step (-6) is first.
    found = (
        Step.objects.filter(job_id__in=list(job_ids))
        .select_related("job")
        .order_by("job_id", "-interactive", "step_id")
    )
    for step in found:
        out.setdefault(step.job_id, []).append(step)
    return out
