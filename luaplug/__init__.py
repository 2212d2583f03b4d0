"""Lua plugins on lupa: the runtime that job_submit/lua and hres/lua share, pure.

A package of its own, not a module of an app, because three places load Lua scripts: the
controller (the job-submit plugin, the HRES controller callbacks) and the node agent (the
HRES node callbacks).  The agent may import neither Django nor the controller's apps, so
this package imports only the standard library and lupa.

* :mod:`luaplug.codes`: Slurm's return codes as the ``slurm`` table gives them, and their
  messages (``slurm_strerror``);
* :mod:`luaplug.security`: the check a script passes before it is loaded;
* :mod:`luaplug.runtime`: one Lua state per script, the ``slurm`` table, calls with
  values converted both ways, the instruction-count timeout, reload on change.
"""

from __future__ import annotations

from luaplug.codes import ERROR, SUCCESS, strerror
from luaplug.runtime import CallFailed, CallResult, LuaScript, ScriptError
from luaplug.security import ScriptRefused, check_script

__all__ = [
    "ERROR",
    "SUCCESS",
    "CallFailed",
    "CallResult",
    "LuaScript",
    "ScriptError",
    "ScriptRefused",
    "check_script",
    "strerror",
]
