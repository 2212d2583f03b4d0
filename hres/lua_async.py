"""hres/lua's asynchronous pre-run (Slurm's hres.html, "hres/lua"):
``hres_controller_job_async_prerun``, optional, run after the pre-runs of a job that was
allocated.

It runs in a thread of its own, never in the scheduler's pass or a request, on a new Lua
state per call, bounded by PrologTimeout.  Meanwhile the job stays CONFIGURING and is not
launched (:func:`launch_ready`, the core's ``launch_ready`` hook).  Its payload replaces the
pre-run's; success launches the job, failure requeues it, or cancels it when it cannot be
requeued.  A job that no longer holds its nodes when the result comes (cancelled
meanwhile) has the result dropped and its revoke called.  The job is not scheduled again
until the asynchronous pre-run ends (:func:`busy`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import close_old_connections, connection, transaction
from django.db.models import F

from cluster import clock, publish
from cluster.core.states import JobState
from cluster.cycles import cycle_lock
from cluster.extensions import Cycle
from cluster.models import ClusterConfig, Job
from cluster.services.state import launch_configured, record_transition, terminate_running
from hres import lua_async_jobs, lua_async_owner, lua_plugins, services
from hres.core.lua_calls import ctx_table, timeouts
from hres.lua_callbacks import Called, call
from hres.models import JobPluginRun
from luaplug import ScriptError
from luaplug.codes import SUCCESS

log = logging.getLogger("fsched.hres.lua")

FUNCTION = "hres_controller_job_async_prerun"
PENDING_KEY, OWNER_KEY = lua_async_jobs.MARKER_KEYS
# The lease of the recovery: one process of the cluster recovers at a time.
RECOVER_LOCK = "hres_async_recover"

_guard = threading.Lock()
_threads: list[threading.Thread] = []


@dataclass(frozen=True)
class Pending:
    """One job's asynchronous pre-run to do: its ``job`` table and the (resource, prep)
    of each resource whose pre-run succeeded, in resources.yaml's order."""

    job_id: int
    run: int
    job: dict[str, Any]
    preps: tuple[tuple[str, dict[str, Any]], ...]


def wanted(resources: Sequence[str]) -> bool:
    """Whether one of ``resources`` defines the asynchronous pre-run (in its script as
    the controller loaded it)."""
    for resource in resources:
        try:
            script = lua_plugins.controller_script(resource)
        except ScriptError:
            continue  # not loaded by this process: its pre-run failed already
        if script is not None and script.has(FUNCTION):
            return True
    return False


def start(pending: Pending) -> None:
    """Held back from now on; the thread starts once the pass's transaction commits, so
    that it finds the job CONFIGURING."""
    lua_async_jobs.begin(pending.job_id, pending.run)
    # Kept in the database too, naming this process: passes and cycles of other processes
    # hold the job, and a controller that stops meanwhile leaves it to the recovery of
    # another (:func:`recover_lost`).
    owner = lua_async_owner.hold()
    for row in JobPluginRun.objects.filter(job_id=pending.job_id, run=pending.run):
        row.prep = {**row.prep, PENDING_KEY: True, OWNER_KEY: owner}
        row.save(update_fields=["prep"])
    transaction.on_commit(lambda: _spawn(pending))


def _spawn(pending: Pending) -> None:
    name = f"hres-async-{pending.job_id}"
    thread = threading.Thread(target=_thread, args=(pending,), name=name, daemon=True)
    with _guard:
        _threads[:] = [t for t in _threads if t.is_alive()]
        _threads.append(thread)
    thread.start()


def launch_ready(job: Any) -> bool:
    """Not while its asynchronous pre-run runs: this process's own, or (a CONFIGURING job,
    with passes and cycles in other processes) the marker of its run's rows."""
    if not lua_async_jobs.launch_ready(job):
        return False
    if job.state != JobState.CONFIGURING:
        return True  # a pass starting it: its marker would be this process's
    return not JobPluginRun.objects.filter(
        job_id=job.id, run=job.restart_count, **{f"prep__{PENDING_KEY}": True}
    ).exists()


def busy(job_ids: Any) -> set[int]:
    """The jobs whose asynchronous pre-run (of any run) has not ended: not scheduled."""
    ids = list(job_ids)
    if not ids:
        return set()
    found = JobPluginRun.objects.filter(job_id__in=ids, **{f"prep__{PENDING_KEY}": True})
    return {j for j in ids if lua_async_jobs.busy(j)} | set(found.values_list("job_id", flat=True))


def wait(timeout: float) -> bool:
    """Join the threads started so far (tests, shutdown); False when one still runs."""
    with _guard:
        threads = list(_threads)
    for thread in threads:
        thread.join(timeout)
    return not any(t.is_alive() for t in threads)


def _call(resource: str, pending: Pending, prep: dict[str, Any], limit: float | None) -> Called | None:
    """The function on a new state of the resource's script; None when it lacks it.  A
    script that no longer loads fails the call (the spec: not the last one kept)."""
    plugin = lua_plugins.plugin_conf(resource)
    if plugin is None:
        return None
    script = lua_plugins.new_script(plugin)
    try:
        script.load()
    except ScriptError as exc:
        log.error("%s: %s: %s: %s", lua_plugins.PLUGIN, resource, FUNCTION, exc)
        return Called(-1, (), f"{lua_plugins.PLUGIN}: {FUNCTION}: {exc.reason}")
    if not script.has(FUNCTION):
        return None
    ctx = ctx_table(resource, plugin.config)
    return call(script, resource, FUNCTION, ctx, pending.job, prep, timeout=limit)


def _thread(pending: Pending) -> None:
    try:
        close_old_connections()
        finish(pending, run_calls(pending))
    except Exception:  # a thread of its own: logged, never silent
        log.exception("%s: job %s: %s", lua_plugins.PLUGIN, pending.job_id, FUNCTION)
        lua_async_jobs.end(pending.job_id, pending.run)
    finally:
        connection.close()


def run_calls(pending: Pending) -> tuple[Called | None, dict[str, str]]:
    """Each resource's function, in resources.yaml's order, stopping at the first failure:
    (the failure or None, the payloads returned by resource)."""
    limit = timeouts(ClusterConfig.current().options).prolog
    payloads: dict[str, str] = {}
    for resource, prep in pending.preps:
        called = _call(resource, pending, {**prep, "async_running": True}, limit)
        if called is None:
            continue
        if called.rc != SUCCESS:
            return called, payloads
        payload = called.values[0] if called.values else None
        if isinstance(payload, str):
            payloads[resource] = payload
    return None, payloads


def finish(pending: Pending, result: tuple[Called | None, dict[str, str]]) -> str:
    """The result applied on the locked job row: launched, requeued or cancelled, or
    dropped (and revoked) when the run no longer holds its nodes.  Returns what was done."""
    failed, payloads = result
    now = clock.now()
    with transaction.atomic():
        job = Job.objects.select_for_update().filter(pk=pending.job_id).first()
        lua_async_jobs.end(pending.job_id, pending.run)
        holds = (
            job is not None
            and job.restart_count == pending.run
            and job.state == JobState.CONFIGURING
            and not job.final_state
        )
        _mark(pending.job_id, pending.run, {})
        if not holds:
            _revoke(pending)
            return "dropped"
        if failed is not None:
            why = failed.message or f"{lua_plugins.PLUGIN}: {FUNCTION} returned {failed.rc}"
            return _end(job, now=now, why=why)
        _mark(job.id, pending.run, payloads)
        launched = launch_configured(job, now=now, why=FUNCTION)
        publish.console_changed("jobs")
        return "launched" if launched else "configuring"


def _mark(job_id: int, run: int, payloads: dict[str, str]) -> None:
    """The run's rows: the marker of a running asynchronous pre-run dropped (the
    ``start`` path: none yet), and the payloads it returned stored."""
    for row in JobPluginRun.objects.select_for_update().filter(job_id=job_id, run=run):
        prep = {k: v for k, v in row.prep.items() if k not in lua_async_jobs.MARKER_KEYS}
        if row.resource in payloads:
            prep["payload"] = payloads[row.resource]
        if prep != row.prep:
            row.prep = prep
            row.save(update_fields=["prep"])


def _end(job: Job, *, now: Any, why: str) -> str:
    """Requeued, or cancelled when it cannot be requeued."""
    old = job.state
    final = JobState.REQUEUED if job.requeue else JobState.CANCELLED
    terminate_running(job, final_state=final, now=now)
    record_transition(job, old, now=now, why=why, user="slurm")
    publish.console_changed("jobs")
    return "requeued" if final == JobState.REQUEUED else "cancelled"


def recover_lost(*, now: Any) -> list[int]:
    """At a start (and every RECOVER_INTERVAL, :func:`recovery_cycles`): a CONFIGURING job
    whose asynchronous pre-run no live process runs was left by one that stopped meanwhile;
    its result is lost, so it is requeued, or cancelled when it cannot be requeued.  One
    process of the cluster recovers at a time (an advisory lock, as the cycles'; a process
    that finds it held leaves the recovery to the holder), and a job whose pre-run is
    alive in another process is left alone."""
    with cycle_lock(RECOVER_LOCK) as got:
        if not got:
            return []
        return _recover(now)


# Between two starts: a worker that ended (crashed, restarted) while one ran.  Slurm's
# slurmctld has no such cycle, its threads end only with it; fsched's workers end alone.
RECOVER_INTERVAL = 60.0


def recovery_cycles() -> tuple[Cycle, ...]:
    """The recovery as one of the cluster's cycles, while a resource has a plugin (read
    from the configuration in force, no script loaded)."""
    if not any(r.plugin is not None for r in services.current_config().resources):
        return ()
    return (Cycle(RECOVER_LOCK, _recover_cycle, RECOVER_INTERVAL),)


def _recover_cycle() -> str:
    """Recover the asynchronous pre-runs (hres/lua) lost with the process that ran them."""
    # run_cycle holds the lease (the cycle's lock is RECOVER_LOCK) for this run.
    with transaction.atomic():
        lost = _recover(clock.now())
    return f"recovered={len(lost)}"


def _recover(now: Any) -> list[int]:
    lost = []
    found = JobPluginRun.objects.filter(
        **{f"prep__{PENDING_KEY}": True}, job__state=JobState.CONFIGURING, job__restart_count=F("run")
    ).values_list("job_id", "run", "prep")
    owners = {(job_id, run): str(prep.get(OWNER_KEY) or "") for job_id, run, prep in found}
    for (job_id, run), owner in sorted(owners.items()):
        if lua_async_jobs.running(job_id, run) or lua_async_owner.alive_elsewhere(owner):
            continue
        job = Job.objects.select_for_update().get(pk=job_id)
        _mark(job_id, run, {})
        if job.state == JobState.CONFIGURING and job.restart_count == run and not job.final_state:
            _end(job, now=now, why=f"{lua_plugins.PLUGIN}: {FUNCTION} lost: its process stopped")
            lost.append(job_id)
    return lost


def _revoke(pending: Pending) -> None:
    """The result is dropped: each resource's revoke, as for a pre-run that did not start."""
    limit = timeouts(ClusterConfig.current().options).epilog
    for resource, prep in pending.preps:
        try:
            script, plugin = lua_plugins.controller_script(resource), lua_plugins.plugin_conf(resource)
        except ScriptError as exc:
            log.error("%s", exc)
            continue
        if script is not None and plugin is not None:
            call(
                script,
                resource,
                "hres_controller_job_revoke",
                ctx_table(resource, plugin.config),
                pending.job,
                {**prep, "async_running": False},
                timeout=limit,
            )
