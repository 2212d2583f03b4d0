"""hres/lua's controller callbacks (Slurm's hres.html, "Callbacks"): create and destroy
context, validate arguments, the pre-runs, revoke and the controller epilog.

Each runs on the resource's controller state (:func:`hres.lua_plugins.controller_script`),
bounded by PrologTimeout or EpilogTimeout (:func:`hres.core.lua_calls.timeouts`).  Several
resources of one job are called in resources.yaml's order, the epilogs in reverse; the
pre-runs stop at the first failure, the other kinds run all.  The maintenance callback,
with a state of its own, is in :mod:`hres.lua_maintenance`.
"""

from __future__ import annotations

import atexit
import logging
import pwd
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import F, Q

from cluster import clock
from cluster.core.slurmconf import ConfigError
from cluster.core.states import HOLDING_JOB_STATES, JobState
from cluster.extensions import Allocation
from cluster.models import ClusterConfig, Event, Job, Partition
from cluster.services.errors import ServiceError
from cluster.services.state import hold_pending
from hres import lua_async_jobs, lua_history, lua_plugins, services
from hres.core.config import HresConfig, HresProblem, PluginConf
from hres.core.layers import Charge, HresState
from hres.core.lua_calls import (
    REMOTE_FAIL,
    Outcome,
    ctx_table,
    end_time,
    job_table,
    layers_table,
    outcome,
    prep_table,
    timeouts,
)
from hres.models import JobPluginRun, LayerUpdate
from luaplug import CallFailed, LuaScript, ScriptError, strerror
from luaplug.codes import ESLURM, SUCCESS
from slurmwords.licenses import Mode, parse_license_request

log = logging.getLogger("fsched.hres.lua")

PLUGIN = lua_plugins.PLUGIN
INVALID_LICENSES = ESLURM["ESLURM_INVALID_LICENSES"][0]


@dataclass(frozen=True)
class Called:
    """One callback's end: its return code (ERROR when it failed to run), its other
    values, and the message to show (the plugin's ``slurm.user_msg``, else the error)."""

    rc: int
    values: tuple[Any, ...] = ()
    message: str = ""

    @property
    def outcome(self) -> Outcome:
        return outcome(self.rc)


def call(script: LuaScript, resource: str, function: str, *args: Any, timeout: float | None) -> Called:
    """``function`` of ``resource``'s script; a Lua error or the timeout is its failure."""
    try:
        result = script.call(
            function, *(script.table(a) if isinstance(a, dict | list) else a for a in args), timeout=timeout
        )
    except CallFailed as exc:
        log.error("%s: %s: %s: %s", PLUGIN, resource, function, exc)
        lua_history.record(resource, function, str(exc))
        return Called(-1, (), f"{PLUGIN}: {function}: {exc}")
    if result.rc != SUCCESS:
        log.error("%s: %s: %s returned %s", PLUGIN, resource, function, result.rc)
        msg = f"returned {result.rc}" + (f": {result.user_msg}" if result.user_msg else "")
        lua_history.record(resource, function, msg)
    return Called(result.rc, tuple(result.values[1:]), result.user_msg)


def _options() -> Mapping[str, Any]:
    return ClusterConfig.current().options


def _not_loaded(resource: str, rc: int) -> Called | None:
    """A resource with a plugin whose script this process could not load (another process
    read the configuration: hres.lua_process): its callbacks fail here with ``rc``."""
    error = lua_plugins.failed().get(resource)
    if error is None:
        return None
    return Called(rc, (), f"{PLUGIN}: {error.reason}: not loaded in this process")


def _script(resource: str) -> LuaScript | None:
    try:
        return lua_plugins.controller_script(resource)
    except ScriptError as exc:  # not loaded by this process (hres.lua_process)
        log.error("%s", exc)
        return None


# --------------------------------------------------------------------------- contexts


def destroy_contexts(options: Mapping[str, Any] | None = None) -> None:
    """hres_destroy_context of every resource in force, before the configuration is read
    again (and at shutdown); its result is ignored, a failure logged."""
    limit = timeouts(options if options is not None else {}).epilog
    # This process's states as they are: looking at the configuration in force here would
    # load the one being replaced.
    for resource in lua_plugins.loaded_resources():
        script, plugin = _script(resource), lua_plugins.plugin_conf(resource)
        if script is not None and plugin is not None:
            call(script, resource, "hres_destroy_context", ctx_table(resource, plugin.config), timeout=limit)


def create_contexts(
    prepared: lua_plugins.Prepared, config: HresConfig, state: HresState, options: Mapping[str, Any]
) -> tuple[str, ...]:
    """hres_create_context of every resource of a configuration being read, with its
    layers as configured and nothing used (the running jobs' usage is not restored yet).
    Returns the resources whose every layer is to be disabled (the two MAINTENANCE
    codes); any other error refuses the configuration, naming the resource."""
    limit = timeouts(options).prolog
    disabled: list[str] = []
    problems: list[HresProblem] = []
    for conf in config.resources:
        script = prepared.scripts.get(conf.name)
        if script is None or conf.plugin is None:
            continue
        layers = layers_table(state.resource(conf.name), with_usage=False)
        called = call(
            script,
            conf.name,
            "hres_create_context",
            ctx_table(conf.name, conf.plugin.config),
            layers,
            timeout=limit,
        )
        if called.outcome is Outcome.MAINTENANCE:
            log.warning(
                "%s: %s: hres_create_context disabled every layer (%s)",
                PLUGIN,
                conf.name,
                strerror(called.rc),
            )
            disabled.append(conf.name)
        elif called.outcome is not Outcome.OK:
            why = called.message or f"returned {called.rc}"
            problems.append(
                HresProblem(
                    config.file,
                    conf.plugin.line,
                    f"resource {conf.name}: {PLUGIN}: hres_create_context failed: {why}",
                    conf.name,
                )
            )
    if problems:
        raise ConfigError(problems)
    return tuple(disabled)


def recreate_contexts(options: Mapping[str, Any]) -> None:
    """A refused reconfigure keeps the configuration in force: its contexts, destroyed
    before the new one was read, are created again (their result logged only)."""
    names = lua_plugins.loaded_resources()
    if not names:
        return
    kept = lua_plugins.Prepared(
        {n: s for n in names if (s := _script(n)) is not None},
        {n: p for n in names if (p := lua_plugins.plugin_conf(n)) is not None},
    )
    config = services.current_config()
    try:
        create_contexts(kept, config, services.current_state(), options)
    except ConfigError as exc:
        log.error("%s: the configuration kept: %s", PLUGIN, exc)


def disable_resources(resources: Iterable[str], state: HresState, *, now: datetime) -> None:
    """Every layer of ``resources`` disabled, as ``scontrol update DisableLayer=yes`` by
    slurm (a runtime update: the next reconfigure reads resources.yaml again)."""
    for name in resources:
        for layer in state.resource(name).structure.layers:
            set_layer(name, layer.name, disable=True, now=now, why="hres_create_context")


def set_layer(resource: str, layer: str, *, disable: bool, now: datetime, why: str) -> None:
    changes = {"disable_layer": disable}
    LayerUpdate.objects.create(time=now, user="slurm", resource=resource, layer=layer, changes=changes)
    Event.objects.create(
        time=now,
        kind=Event.Kind.CONFIG,
        reason="hres update",
        new_state=f"{resource}/{layer}",
        user="slurm",
        detail={"hres_name": resource, "layer_name": layer, "changes": changes, "by": f"{PLUGIN} {why}"},
    )


_registered_exit = False


def destroy_at_exit() -> None:
    """hres_destroy_context once more when the process ends (slurmctld's shutdown)."""
    global _registered_exit  # noqa: PLW0603 - once per process
    if not _registered_exit:
        _registered_exit = True
        atexit.register(destroy_contexts)


# --------------------------------------------------------------------------- arguments


def _plugin_items(
    licenses: str, modes: Mapping[str, Mode]
) -> list[tuple[int, str, tuple[tuple[str, str], ...]]]:
    """(position in resources.yaml, resource, its plugin arguments) of each resource with
    a plugin a license request names, in resources.yaml's order."""
    order = {name: i for i, name in enumerate(lua_plugins.resources_with_plugins())}
    if not licenses or not order:
        return []
    try:
        items = parse_license_request(licenses, hres=dict(modes)).hres(modes)
    except ValueError:
        return []  # refused by the request's own check
    return sorted((order[it.name], it.name, it.args) for it in items if it.name in order)


def validate(licenses: str, modes: Mapping[str, Mode], options: Mapping[str, Any]) -> Called | None:
    """hres_validate_args of each resource of a request that has a plugin (and defines
    it: without it every argument is accepted), every one run; the first failure."""
    limit = timeouts(options).prolog
    failed = None
    for _pos, resource, args in _plugin_items(licenses, modes):
        script, plugin = _script(resource), lua_plugins.plugin_conf(resource)
        if script is None and failed is None:
            failed = _not_loaded(resource, -1)
        if script is None or plugin is None or not script.has("hres_validate_args"):
            continue
        called = call(
            script,
            resource,
            "hres_validate_args",
            ctx_table(resource, plugin.config),
            dict(args),
            timeout=limit,
        )
        if called.rc != SUCCESS and failed is None:
            failed = called
    return failed


def check_request(licenses: str, modes: Mapping[str, Mode]) -> None:
    """At submission and at a licenses update: a failed validation rejects the request."""
    failed = validate(licenses, modes, _options())
    if failed is not None:
        raise ServiceError(
            strerror(INVALID_LICENSES),
            field="licenses",
            err_msg=failed.message or f"{PLUGIN}: hres_validate_args returned {failed.rc}",
        )


def _why(called: Called, function: str) -> str:
    return called.message or f"{PLUGIN}: {function} returned {called.rc}"


def validate_pending(
    modes: Mapping[str, Mode], *, now: datetime, job_ids: Iterable[int] | None = None
) -> list[int]:
    """The pending jobs (not held) whose plugin arguments the plugins reject are held with
    the plugin's message: at start, at reconfigure and for a requeued job."""
    options = _options()
    found = Job.objects.select_for_update().filter(state=JobState.PENDING, hold="").exclude(licenses="")
    if job_ids is not None:
        found = found.filter(pk__in=list(job_ids))
    held = []
    for job in found.order_by("id"):
        failed = validate(job.licenses, modes, options)
        if failed is not None:
            hold_pending(job, now=now, reason=_why(failed, "hres_validate_args"), why="hres_validate_args")
            held.append(job.id)
    return held


# --------------------------------------------------------------------------- pre-run


def _ids(user: str) -> tuple[int | None, int | None]:
    try:
        entry = pwd.getpwnam(user)
    except (KeyError, TypeError):
        return None, None
    return entry.pw_uid, entry.pw_gid


def _job(job: Job, nodes: Iterable[str], end: int) -> dict[str, Any]:
    uid, gid = _ids(job.user)
    return job_table(
        job_id=job.id,
        run=job.restart_count,
        user=job.user,
        uid=uid,
        gid=gid,
        account=job.account,
        partition=job.partition,
        nodes=list(nodes),
        end=end,
    )


def _layer_nodes(state: HresState, resource: str) -> dict[str, frozenset[str]]:
    return {layer.name: layer.nodes for layer in state.resource(resource).structure.layers}


def prerun_allocated(
    allocation: Allocation, started: Mapping[int, Iterable[Charge]], state: HresState, *, now: datetime
) -> list[tuple[Job, dict[str, Any], list[tuple[str, dict[str, Any]]]]]:
    """The pre-runs of the jobs a pass is starting, their rows locked (the pass's
    ``jobs_allocated``).  A job whose pre-run fails is dropped from the pass: left pending
    on ESLURM_HRES_REMOTE_FAIL, held with the plugin's message otherwise, and the revoke
    of the resources whose pre-run had succeeded is called.  The ``prep`` of each
    resource, its payload included, is kept with the job for its nodes.  Returns the jobs
    whose pre-runs all succeeded, with their ``job`` table and (resource, prep) pairs (for
    the asynchronous pre-run)."""
    order = {name: i for i, name in enumerate(lua_plugins.resources_with_plugins())}
    succeeded: list[tuple[Job, dict[str, Any], list[tuple[str, dict[str, Any]]]]] = []
    if not order:
        return succeeded
    kept = allocation.kept()
    wanted = {
        job_id: sorted((c for c in charges if c.resource in order), key=lambda c: order[c.resource])
        for job_id, charges in started.items()
        if job_id in kept
    }
    wanted = {job_id: charges for job_id, charges in wanted.items() if charges}
    if not wanted:
        return succeeded
    limit = timeouts(_options()).prolog
    stored: list[JobPluginRun] = []
    # A job without a time limit gets its partition's DefaultTime, else its MaxTime, as
    # slurmctld gives it at submission; without either it has none (a year, for end_time).
    limits = {
        name: default or most
        for name, default, most in Partition.objects.values_list("name", "default_time", "max_time")
    }
    for job in Job.objects.filter(pk__in=list(wanted)).order_by("id"):
        nodes = kept[job.id]
        jt = _job(job, nodes, end_time(now.timestamp(), job.time_limit or limits.get(job.partition)))
        done: list[tuple[str, LuaScript, PluginConf, dict[str, Any]]] = []
        failed: Called | None = None
        for charge in wanted[job.id]:
            resource = charge.resource
            script, plugin = _script(resource), lua_plugins.plugin_conf(resource)
            if script is None:
                # Never started without its pre-run: left pending for a later pass, maybe in
                # a process that has the script.
                failed = _not_loaded(resource, REMOTE_FAIL)
                if failed is not None:
                    break
            if script is None or plugin is None:
                continue
            prep = prep_table(
                name=resource,
                config=plugin.config,
                args=charge.args,
                charge=charge,
                layer_nodes=_layer_nodes(state, resource),
                job_nodes=nodes,
            )
            ctx = ctx_table(resource, plugin.config)
            called = call(script, resource, "hres_controller_job_prerun", ctx, jt, prep, timeout=limit)
            if called.rc != SUCCESS:
                failed = called
                break  # the pre-runs stop at the first failure
            payload = called.values[0] if called.values else None
            prep["payload"] = payload if isinstance(payload, str) else None
            done.append((resource, script, plugin, prep))
        if failed is None:
            stored += [
                JobPluginRun(
                    job=job, run=job.restart_count, resource=r, position=order[r], prep=p, nodes=jt["nodes"]
                )
                for r, _s, _p, p in done
            ]
            succeeded.append((job, jt, [(r, p) for r, _s, _p, p in done]))
            continue
        allocation.dropped.add(job.id)
        for resource, script, plugin, prep in done:
            call(
                script,
                resource,
                "hres_controller_job_revoke",
                ctx_table(resource, plugin.config),
                jt,
                prep,
                timeout=timeouts(_options()).epilog,
            )
        if failed.outcome is not Outcome.REMOTE_FAIL:
            hold_pending(
                job,
                now=now,
                reason=_why(failed, "hres_controller_job_prerun"),
                why="hres_controller_job_prerun",
            )
    if stored:
        JobPluginRun.objects.bulk_create(stored)
    return succeeded


def job_preps(job_id: int, run: int) -> list[dict[str, Any]]:
    """The ``prep`` of each resource of a run of the job, in resources.yaml's order: what
    its nodes receive."""
    found = JobPluginRun.objects.filter(job_id=job_id, run=run).order_by("position")
    return [_sent(prep) for prep in found.values_list("prep", flat=True)]


def runs_preps(runs: Iterable[tuple[int, int]]) -> dict[tuple[int, int], list[dict[str, Any]]]:
    """job_preps of several runs (job id, run) in one query; a run without any is left out."""
    wanted = set(runs)
    if not wanted:
        return {}
    found = JobPluginRun.objects.filter(job_id__in={job_id for job_id, _ in wanted}).order_by(
        "job_id", "run", "position"
    )
    out: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for job_id, run, prep in found.values_list("job_id", "run", "prep"):
        if (job_id, run) in wanted:
            out.setdefault((job_id, run), []).append(_sent(prep))
    return out


def _sent(prep: dict[str, Any]) -> dict[str, Any]:
    # The marker of a running asynchronous pre-run (hres.lua_async) is the controller's.
    return {k: v for k, v in prep.items() if k not in lua_async_jobs.MARKER_KEYS}


# --------------------------------------------------------------------------- epilog


def run_epilogs(modes: Mapping[str, Mode], *, now: datetime | None = None) -> int:
    """The controller epilogs of the runs that ended (the job no longer holds its nodes,
    or was requeued since): every resource, in the reverse of resources.yaml's order.
    A requeued job's arguments are then validated again, as at its submission."""
    now = now or clock.now()
    due: dict[tuple[int, int], list[JobPluginRun]] = {}
    # In the database: a pass runs this, and the running jobs' rows are not due.
    holding = Q(job__restart_count=F("run"), job__state__in=[s.value for s in HOLDING_JOB_STATES])
    for row in JobPluginRun.objects.filter(epilog_done=False).exclude(holding).select_related("job"):
        due.setdefault((row.job_id, row.run), []).append(row)
    if not due:
        return 0
    limit = timeouts(_options()).epilog
    requeued: list[int] = []
    for (_job_id, run), found in sorted(due.items()):
        job = found[0].job
        ended = job.end_time.timestamp() if job.restart_count == run and job.end_time else now.timestamp()
        jt = _job(job, (), int(ended))
        jt["nodes"] = found[0].nodes
        for row in sorted(found, key=lambda r: r.position, reverse=True):
            script, plugin = _script(row.resource), lua_plugins.plugin_conf(row.resource)
            if script is not None and plugin is not None:
                # True while the job's asynchronous pre-run of this run has not ended, in this
                # process or (its marker) in another.
                marked = bool(row.prep.get(lua_async_jobs.MARKER_KEYS[0]))
                prep = {k: v for k, v in row.prep.items() if k not in lua_async_jobs.MARKER_KEYS}
                prep["async_running"] = marked or lua_async_jobs.running(row.job_id, run)
                call(
                    script,
                    row.resource,
                    "hres_controller_job_epilog",
                    ctx_table(row.resource, plugin.config),
                    jt,
                    prep,
                    timeout=limit,
                )
        JobPluginRun.objects.filter(pk__in=[r.pk for r in found]).update(epilog_done=True)
        if job.restart_count != run and job.state == JobState.PENDING:
            requeued.append(job.id)
    if requeued:
        with transaction.atomic():
            validate_pending(modes, now=now, job_ids=requeued)
    return len(due)
