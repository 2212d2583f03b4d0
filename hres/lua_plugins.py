"""The hres/lua scripts of resources.yaml's ``plugin`` sections, loaded with the
configuration (Slurm's hres.html, "hres/lua").

A script is loaded when the configuration is read, after the security check of
``luaplug.security``: one that cannot be loaded (missing, refused, not valid Lua, lacking
a required function) refuses the start, naming ``resources.yaml:LINE`` and the reason.  On
a reconfigure a resource whose script no longer loads keeps the one loaded before (logged
as a warning); a resource new to the configuration has none to keep, so the reconfigure is
refused.

These are the controller's states: one per resource, shared by its controller functions
(:func:`controller_script`).  The callbacks themselves (create context, maintenance,
validate arguments, pre-run, ...) are called on them by the code of #17's callbacks, which
attaches here; the maintenance, the asynchronous pre-run and the node functions make states
of their own from :func:`plugin_conf`'s path.
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


def install(prepared: Prepared) -> None:
    """The scripts of the configuration now in force (the others are dropped)."""
    with _guard:
        _scripts.clear()
        _scripts.update(prepared.scripts)
        _plugins.clear()
        _plugins.update(prepared.plugins)


def controller_script(resource: str) -> LuaScript | None:
    """The controller's state of ``resource``'s script, reloaded first if its file
    changed (a failed reload keeps it, logged); None when the resource has no plugin."""
    with _guard:
        script = _scripts.get(resource)
    if script is not None:
        script.refresh()
    return script


def plugin_conf(resource: str) -> PluginConf | None:
    with _guard:
        return _plugins.get(resource)


def resources_with_plugins() -> tuple[str, ...]:
    """In resources.yaml's order, which the callbacks follow (epilogs in reverse)."""
    with _guard:
        return tuple(_scripts)
