"""The hres/lua scripts of a process that did not read the configuration itself.

In distributed mode any server process takes submissions and license updates, and the
Celery workers run the passes (pre-runs, asynchronous pre-runs, epilogs) and the
maintenance cycles; only the process that started or reconfigured read resources.yaml
and loaded its scripts.  Every other process loads them here, lazily, from the
resources.yaml in force (``hres.ResourcesFile``, whose ``version`` each reconfigure
raises), and again whenever that version changes: :func:`sync`, called by
:func:`hres.lua_plugins.resources_with_plugins`, which every entry point of the callbacks
asks first (one read of one row when nothing changed).

Per process, the rules of a single controller hold: a script whose file changed is loaded
again before its next call (its globals dropped, create context not called again), and
one that no longer loads keeps the last good one.  Each process's shared state runs
``hres_create_context`` when the process first loads the script, as a restarted slurmctld
would, and a configuration that changed elsewhere ends the old contexts and creates the
new ones, as the reconfigure did in the process that read it.  Only that process acts on
create context's return code (the MAINTENANCE codes disabling the layers, another error
refusing the configuration); here it is logged.  A script this process cannot load
leaves its resource's callbacks failing here (the pre-run leaves the job pending for a
later pass) until it loads: it is tried again at most every :data:`RETRY` seconds.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

from django.db import DatabaseError

from cluster.core.slurmconf import ConfigError
from cluster.models import ClusterConfig
from cluster.services import pass_snapshot
from hres import lua_callbacks, lua_history, lua_plugins, services
from hres.core.config import PluginConf
from hres.models import ResourcesFile
from luaplug import LuaScript, ScriptError

log = logging.getLogger("fsched.hres.lua")

RETRY = 10.0  # seconds between two tries of a script this process could not load

_lock = threading.Lock()
_last_try = 0.0


def version_in_force() -> int:
    """resources.yaml's version in the database (0: never loaded), read without a write.

    Every pass asks (twice: its plugins, its epilogs): kept between passes while
    ``hres.ResourcesFile`` is not written, here or, live, in another process."""
    return pass_snapshot.kept_value("hres.version_in_force", (ResourcesFile,), _read_version)


def _read_version() -> int:
    found = ResourcesFile.objects.filter(pk=1).values_list("version", flat=True).first()
    return found or 0


def sync() -> None:
    """This process's scripts brought in step with the configuration in force."""
    try:
        version = version_in_force()
    except DatabaseError as exc:
        log.warning("%s: the configuration in force unreadable, scripts kept: %s", lua_plugins.PLUGIN, exc)
        return
    if version == lua_plugins.installed_version() and not _retry_due():
        return
    with _lock:
        if version != lua_plugins.installed_version():
            _follow(version)
        elif _retry_due():
            _retry()


def _retry_due() -> bool:
    return bool(lua_plugins.failed()) and time.monotonic() - _last_try >= RETRY


def _load(resource: str, plugin: PluginConf, kept: LuaScript | None) -> LuaScript:
    """The process's state of a resource's script: the one it has when the path is the
    same (reloaded if its file changed; a failed reload keeps it), else a new one."""
    if kept is not None and str(kept.path) == plugin.path:
        kept.refresh()
        return kept
    slurm_user = ClusterConfig.current().options.get("SlurmUser")
    script = lua_plugins.new_script(plugin, slurm_user)
    script.load()
    return script


def _follow(version: int) -> None:
    """The configuration of ``version`` (or a newer one): its scripts loaded, the old
    contexts destroyed and the new ones created, as the reconfigure did elsewhere."""
    global _last_try  # noqa: PLW0603 - the process's
    options = ClusterConfig.current().options
    before = lua_plugins.loaded()
    config = services.current_config()
    scripts: dict[str, LuaScript] = {}
    plugins: dict[str, PluginConf] = {}
    failed: dict[str, ScriptError] = {}
    for resource in config.resources:
        if resource.plugin is None:
            continue
        plugins[resource.name] = resource.plugin
        try:
            scripts[resource.name] = _load(resource.name, resource.plugin, before.scripts.get(resource.name))
        except ScriptError as exc:
            failed[resource.name] = exc
            _not_loaded(resource.name, exc)
    if before.scripts and lua_plugins.installed_version() is not None:
        lua_callbacks.destroy_contexts(options)  # the contexts of the configuration left
    _last_try = time.monotonic()
    lua_plugins.install(lua_plugins.Prepared(scripts, plugins), version, failed)
    _create(lua_plugins.Prepared(scripts, plugins), options)


def _retry() -> None:
    """The scripts this process could not load, tried again; a new one gets its context."""
    global _last_try  # noqa: PLW0603
    _last_try = time.monotonic()
    now = lua_plugins.loaded()
    scripts, still = dict(now.scripts), {}
    fresh: dict[str, LuaScript] = {}
    for resource, error in lua_plugins.failed().items():
        plugin = now.plugins[resource]
        try:
            fresh[resource] = scripts[resource] = _load(resource, plugin, None)
        except ScriptError as exc:
            still[resource] = exc
            if str(exc) != str(error):
                _not_loaded(resource, exc)
    if not fresh:
        return
    order = {name: i for i, name in enumerate(now.plugins)}
    scripts = dict(sorted(scripts.items(), key=lambda kv: order[kv[0]]))
    lua_plugins.install(lua_plugins.Prepared(scripts, now.plugins), lua_plugins.installed_version(), still)
    options = ClusterConfig.current().options
    _create(lua_plugins.Prepared(fresh, {r: now.plugins[r] for r in fresh}), options)


def _not_loaded(resource: str, exc: ScriptError) -> None:
    log.error("%s: %s: not loaded in this process: %s", lua_plugins.PLUGIN, resource, exc)
    lua_history.record(resource, "load", str(exc))


def _create(prepared: lua_plugins.Prepared, options: Mapping[str, Any]) -> None:
    """hres_create_context of each newly (re)loaded state, its result logged only: the
    process that read the configuration has acted on it."""
    if not prepared.scripts:
        return
    try:
        disabled = lua_callbacks.create_contexts(
            prepared, services.current_config(), services.configured_state(), options
        )
    except ConfigError as exc:
        log.error("%s: in this process: %s", lua_plugins.PLUGIN, exc)
        return
    for resource in disabled:
        log.warning(
            "%s: %s: hres_create_context asked to disable the layers; the process that read "
            "the configuration acts on it",
            lua_plugins.PLUGIN,
            resource,
        )
    lua_callbacks.destroy_at_exit()
