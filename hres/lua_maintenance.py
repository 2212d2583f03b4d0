"""hres/lua's maintenance callback, one of the cluster's periodic cycles per resource
(Slurm's hres.html, "Callbacks": every ``maintenance_cycle`` seconds, with the current
state of each layer).

It runs in a Lua state of its own, kept from one run to the next (reloaded when the
script changes), bounded by ``maintenance_timeout``.  The plugin may set or clear
``disable_layer`` of a layer, as ``scontrol update DisableLayer=`` does, or set ``down``:
the layer is disabled and the running jobs that use it are requeued, or cancelled when
they cannot be.  A failure is logged; what the run changed in the table still applies.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from django.db import transaction

from cluster import clock, publish, triggers
from cluster.core.states import HOLDING_JOB_STATES, JobState
from cluster.extensions import Cycle
from cluster.models import Job
from cluster.services.state import record_transition, terminate_running
from hres import lua_history, lua_plugins, services
from hres.core.lua_calls import ctx_table, layer_changes, layers_table
from hres.lua_callbacks import call, set_layer
from luaplug import LuaScript, ScriptError
from luaplug.codes import SUCCESS

log = logging.getLogger("fsched.hres.lua")

CYCLE_PREFIX = "hres_maintenance_"

_guard = threading.Lock()
_states: dict[str, LuaScript] = {}


def _state(resource: str) -> LuaScript | None:
    """The maintenance's own state of the resource's script (a new one when its path
    changed), reloaded when the file changed; None when it cannot be loaded."""
    plugin = lua_plugins.plugin_conf(resource)
    if plugin is None:
        return None
    with _guard:
        script = _states.get(resource)
        if script is None or str(script.path) != plugin.path:
            script = _states[resource] = lua_plugins.new_script(plugin)
    try:
        script.refresh()
    except ScriptError as exc:
        log.error("%s", exc)
        return None
    return script


def maintenance(resource: str) -> str:
    """One run of the maintenance of ``resource``: what it returned and changed (the
    cycle's row shows it as its last result)."""
    lua_plugins.resources_with_plugins()  # this process in step with the configuration in force
    script, plugin = _state(resource), lua_plugins.plugin_conf(resource)
    if script is None or plugin is None:
        return f"{resource}: no script loaded"
    before = layers_table(services.state_with_usage().resource(resource))
    table = script.table(before)
    called = call(
        script,
        resource,
        "hres_maintenance",
        ctx_table(resource, plugin.config),
        table,
        timeout=float(plugin.maintenance_timeout) if plugin.maintenance_timeout else None,
    )
    changes = layer_changes(before, script.to_python(table))
    now = clock.now()
    requeued = cancelled = 0
    with transaction.atomic():
        for change in changes:
            set_layer(resource, change.name, disable=change.disable, now=now, why="hres_maintenance")
            if change.down:
                r, c = _down(resource, change.name, now=now)
                requeued, cancelled = requeued + r, cancelled + c
        if changes:
            publish.console_changed(services.TOPIC)
            triggers.schedule_after_commit()
    result = "rc=0" if called.rc == SUCCESS else f"failed rc={called.rc}"
    if called.message:
        result += f" ({called.message})"
    disabled = [c.name for c in changes if c.disable and not c.down]
    enabled = [c.name for c in changes if not c.disable]
    down = [c.name for c in changes if c.down]
    for label, names in (("disabled", disabled), ("enabled", enabled), ("down", down)):
        if names:
            result += f" {label}={','.join(names)}"
    if requeued or cancelled:
        result += f" requeued={requeued} cancelled={cancelled}"
    lua_history.record_maintenance(resource, result, disabled=disabled, down=down)
    return result


def _down(resource: str, layer: str, *, now) -> tuple[int, int]:
    """The running jobs using a layer set down: requeued, or cancelled when they cannot be."""
    ids = [h["job_id"] for h in services.layer_holders(resource, layer)]
    requeued = cancelled = 0
    jobs = Job.objects.select_for_update().filter(pk__in=ids, state__in=[s.value for s in HOLDING_JOB_STATES])
    for job in jobs.order_by("id"):
        if job.final_state or job.state == JobState.COMPLETING:
            continue  # already ending
        old = job.state
        if job.requeue:
            terminate_running(job, final_state=JobState.REQUEUED, now=now)
            requeued += 1
        else:
            terminate_running(job, final_state=JobState.CANCELLED, now=now)
            cancelled += 1
        record_transition(job, old, now=now, why=f"hres layer {resource}/{layer} down", user="slurm")
    if requeued or cancelled:
        publish.console_changed("jobs")
    return requeued, cancelled


def _runner(resource: str) -> Callable[[], str]:
    def run() -> str:
        return maintenance(resource)

    run.__doc__ = f"hres/lua maintenance of the resource {resource} (resources.yaml's maintenance_cycle)"
    return run


def cycles() -> tuple[Cycle, ...]:
    """A cycle per resource whose plugin sets a maintenance_cycle, in resources.yaml's order.
    Read from the configuration in force, no script loaded: Celery beat, which sends the
    runs to the workers, lists them too."""
    out = []
    for resource in services.current_config().resources:
        plugin = resource.plugin
        if plugin is not None and plugin.maintenance_cycle:
            name = resource.name
            out.append(Cycle(CYCLE_PREFIX + name, _runner(name), float(plugin.maintenance_cycle)))
    return tuple(out)
