"""The hres/lua scripts of resources.yaml's ``plugin`` sections, loaded with the
configuration (Slurm's hres.html, "hres/lua").

A script is loaded when the configuration is read, after the security check of
``luaplug.security``: one that cannot be loaded (missing, refused, not valid Lua, lacking
a required function) refuses the start, naming ``resources.yaml:LINE`` and the reason.  On
a reconfigure a resource whose script no longer loads keeps the one loaded before (logged
as a warning); a resource new to the configuration has none to keep, so the reconfigure is
refused.

These are the controller's states: one per resource, shared by its controller functions
(:func:`controller_script`).  They are this process's: the process that read the
configuration installs them (:func:`install`); any other (another server process, a
Celery worker) loads them from the configuration in force when it first needs them and
again when that configuration's version changes (:mod:`hres.lua_process`).  The callbacks
themselves are in :mod:`hres.lua_callbacks`; the maintenance, the asynchronous pre-run and
the node functions make states of their own from :func:`plugin_conf`'s path.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass

from cluster.core.slurmconf import ConfigError
from hres.core.config import HresConfig, HresProblem, PluginConf
from luaplug import LuaScript, ScriptError
from luaplug.hres_functions import OPTIONAL, PLUGIN, REQUIRED  # noqa: F401 - re-exported
from luaplug.security import trusted_uids

log = logging.getLogger("fsched.hres.lua")


@dataclass(frozen=True)
class Prepared:
    """The scripts of a configuration being read, by resource name, and its warnings."""

    scripts: Mapping[str, LuaScript]
    plugins: Mapping[str, PluginConf]
    warnings: tuple[str, ...] = ()


_guard = threading.Lock()
_scripts: dict[str, LuaScript] = {}
_plugins: dict[str, PluginConf] = {}
# Resources with a plugin whose script this process could not load (another process read
# the configuration): their callbacks fail with this error until it loads.
_failed: dict[str, ScriptError] = {}
# The resources.yaml version (hres.ResourcesFile) the scripts are for; None: not known yet.
_version: int | None = None


def new_script(plugin: PluginConf, slurm_user: str | None = None) -> LuaScript:
    """A state of ``plugin``'s script, not loaded yet (for the callbacks that need a
    state of their own: maintenance, the asynchronous pre-run, the node functions)."""
    return LuaScript(
        plugin.path, plugin=PLUGIN, required=REQUIRED, trusted=trusted_uids(slurm_user), logger=log
    )


def prepare(config: HresConfig | None, *, slurm_user: str | None = None) -> Prepared:
    """Load the scripts of ``config``'s plugins; ConfigError lists the ones that cannot
    be loaded and have no earlier script to keep."""
    if config is None:
        return Prepared({}, {})
    with _guard:
        current = dict(_scripts)
    scripts: dict[str, LuaScript] = {}
    plugins: dict[str, PluginConf] = {}
    problems: list[HresProblem] = []
    warnings: list[str] = []
    for resource in config.resources:
        plugin = resource.plugin
        if plugin is None:
            continue
        kept = current.get(resource.name)
        if kept is not None and str(kept.path) == plugin.path:
            if not kept.refresh():
                warnings.append(
                    f"{config.file}:{plugin.path_line}: resource {resource.name}: {PLUGIN}: "
                    f"{plugin.path} failed to load, the script loaded before stays in use"
                )
            scripts[resource.name], plugins[resource.name] = kept, plugin
            continue
        script = new_script(plugin, slurm_user)
        try:
            script.load()
        except ScriptError as exc:
            where = f"{exc.path.name}:{exc.line}: " if exc.line else ""
            problems.append(
                HresProblem(
                    config.file,
                    plugin.path_line,
                    f"resource {resource.name}: {PLUGIN}: {plugin.path}: {where}{exc.reason}",
                    resource.name,
                )
            )
            continue
        scripts[resource.name], plugins[resource.name] = script, plugin
    if problems:
        raise ConfigError(problems)
    return Prepared(scripts, plugins, tuple(warnings))


def install(
    prepared: Prepared, version: int | None = None, failed: Mapping[str, ScriptError] | None = None
) -> None:
    """The scripts of the configuration now in force (the others are dropped), for
    resources.yaml's ``version`` (None: to be read again from the database)."""
    global _version  # noqa: PLW0603 - the process's scripts, as slurmctld's
    with _guard:
        _scripts.clear()
        _scripts.update(prepared.scripts)
        _plugins.clear()
        _plugins.update(prepared.plugins)
        _failed.clear()
        _failed.update(failed or {})
        _version = version


def installed_version() -> int | None:
    with _guard:
        return _version


def loaded() -> Prepared:
    """The scripts this process has now, without looking at the configuration in force."""
    with _guard:
        return Prepared(dict(_scripts), dict(_plugins))


def failed() -> dict[str, ScriptError]:
    with _guard:
        return dict(_failed)


def controller_script(resource: str) -> LuaScript | None:
    """The controller's state of ``resource``'s script, reloaded first if its file
    changed (a failed reload keeps it, logged); None when the resource has no plugin.
    ScriptError when it has one that this process could not load."""
    with _guard:
        script = _scripts.get(resource)
        error = _failed.get(resource)
    if error is not None:
        raise error
    if script is not None:
        script.refresh()
    return script


def plugin_conf(resource: str) -> PluginConf | None:
    with _guard:
        return _plugins.get(resource)


def resources_with_plugins() -> tuple[str, ...]:
    """In resources.yaml's order, which the callbacks follow (epilogs in reverse), of the
    configuration in force: this process's scripts are brought in step with it first."""
    from hres import lua_process  # noqa: PLC0415 - it runs the callbacks, which import this module

    lua_process.sync()
    return loaded_resources()


def loaded_resources() -> tuple[str, ...]:
    """The resources of the scripts this process has, as they are (no look at the database)."""
    with _guard:
        return tuple(_plugins)
