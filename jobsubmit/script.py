"""The process's job_submit.lua: loaded when slurm.conf is read, kept across reconfigures
that fail to load it, and reloaded when its file changes (Slurm's job_submit/lua)."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from luaplug import LuaScript, ScriptError
from luaplug.security import trusted_uids
from slurmwords.option_lists import option_items

log = logging.getLogger("fsched.job_submit")

PLUGIN = "job_submit/lua"
FILE = "job_submit.lua"
REQUIRED = ("slurm_job_submit", "slurm_job_modify")

_guard = threading.Lock()
_script: LuaScript | None = None


def plugin_names(options: dict[str, str]) -> list[str]:
    """JobSubmitPlugins='s names, without their ``job_submit/`` prefix."""
    return [name.removeprefix("job_submit/") for name in option_items(options.get("JobSubmitPlugins"))]


def enabled(options: dict[str, str]) -> bool:
    """JobSubmitPlugins= names lua (as ``lua`` or ``job_submit/lua``)."""
    return "lua" in plugin_names(options)


def prepare(conf_dir: Path, options: dict[str, str]) -> tuple[LuaScript, str]:
    """The script for a configuration being read: the one in use when it is this file,
    reloaded if it changed, else loaded anew.  A change that fails to load keeps the one
    in use and comes back as a warning; with none in use, ScriptError (start refused)."""
    path = conf_dir / FILE
    with _guard:
        current = _script
    if current is not None and current.path == path:
        if current.refresh():
            return current, ""
        return current, f"{PLUGIN}: {path}: failed to load, the script loaded before stays in use"
    script = LuaScript(
        path, plugin=PLUGIN, required=REQUIRED, trusted=trusted_uids(options.get("SlurmUser")), logger=log
    )
    script.load()
    return script, ""


def install(script: LuaScript | None) -> None:
    """The script of the configuration now in force (None: the plugin is off)."""
    global _script  # noqa: PLW0603 - the process's plugin, as slurmctld's
    with _guard:
        _script = script


def current(conf_dir: Path, options: dict[str, str]) -> LuaScript:
    """The script to call: the one in use (refreshed when its file changed), or, in a
    process that has not read the configuration, loaded now; ScriptError when none loads."""
    with _guard:
        script = _script
    if script is None or script.path != conf_dir / FILE:
        script, _ = prepare(conf_dir, options)
        install(script)
    else:
        script.refresh()
    return script


__all__ = [
    "FILE",
    "PLUGIN",
    "REQUIRED",
    "ScriptError",
    "current",
    "enabled",
    "install",
    "plugin_names",
    "prepare",
]
