"""One Lua state per loaded script: the ``slurm`` table, calls with Python values
converted both ways, a timeout that stops Lua code, and a reload when the file changes.

Lua 5.4 (``lupa.lua54``): Slurm builds its Lua plugins against 5.3 or 5.4, the two behave
alike for plugin scripts (integers and floats, ``table.unpack``, ``//``), and 5.4 is the
one still maintained.

As Slurm's slurm_lua_loadscript does, a state is made afresh on every (re)load: the
standard libraries opened, the ``slurm`` table registered, the script's chunk run (a
non-zero number returned by it is a failed load), its required functions checked.  A
reload drops every global of the previous state.  Unlike Slurm, fsched removes lupa's own
``python`` global and refuses Lua any attribute of a Python object: the bridge is for the
plugin API, not a way from Lua into the controller.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lupa.lua54 as lupa

from luaplug import codes
from luaplug.security import ScriptRefused, check_script, trusted_uids

log = logging.getLogger("luaplug")

# Instructions between two looks at the clock: a Python call per 10,000 Lua instructions
# costs next to nothing, and an endless loop is seen within a millisecond or so.
HOOK_COUNT = 10_000


class ScriptError(Exception):
    """A script that cannot be loaded: refused by the security check, missing, not valid
    Lua, failing when its chunk runs, or lacking a required function.  ``str()`` names the
    plugin, the file (with the line when Lua gave one) and the reason; ``path``, ``line``
    (0: none) and ``reason`` are the parts, for ``file:line: reason`` errors."""

    def __init__(self, plugin: str, path: Path, reason: str) -> None:
        line = 0
        # Lua's messages start with the chunk's name (the file's name, see load): "NAME:LINE: ".
        prefix = f"{path.name}:"
        if reason.startswith(prefix):
            number, sep, rest = reason[len(prefix) :].partition(": ")
            if sep and number.isdigit():
                line, reason = int(number), rest
        self.path, self.line, self.reason = path, line, reason
        where = f"{path}:{line}" if line else str(path)
        super().__init__(f"{plugin}: {where}: {reason}")


class CallFailed(Exception):
    """A call that did not return: a Lua error, or the timeout.  ``str()`` is the reason."""

    def __init__(self, message: str, *, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


@dataclass
class CallResult:
    """What a function returned: its return code by Slurm's rule (a number, else
    SUCCESS), its values converted to Python, and what it gave ``slurm.user_msg``."""

    rc: int
    values: list[Any]
    user_msgs: list[str] = field(default_factory=list)

    @property
    def user_msg(self) -> str:
        """The messages joined as Slurm joins them, one per line."""
        return "\n".join(self.user_msgs)


# The part of the ``slurm`` table written in Lua: the log functions format as Slurm's do
# (string.format of their arguments), and the timeout is made final: pcall, xpcall and
# coroutines pass the timeout's error on instead of catching it, a coroutine gets the hook
# too (Lua keeps a hook per thread), and debug.sethook is withheld from the script.
_PRELUDE = r"""
local slurm, emit, expired, count = ...
local fmt, sethook, error, type = string.format, debug.sethook, error, type
local TIMEOUT = setmetatable({}, {__tostring = function() return "timeout" end})
local function hook()
  if expired() then error(TIMEOUT, 0) end
end
local function again(ok, ...)
  if not ok and (...) == TIMEOUT then error(TIMEOUT, 0) end
  return ok, ...
end
local pcall0, xpcall0 = pcall, xpcall
pcall = function(f, ...) return again(pcall0(f, ...)) end
xpcall = function(f, h, ...)
  return again(xpcall0(f, function(e) if e == TIMEOUT then return e end return h(e) end, ...))
end
local create0, resume0, wrap0 = coroutine.create, coroutine.resume, coroutine.wrap
coroutine.create = function(f)
  local co = create0(f)
  if count > 0 then sethook(co, hook, "", count) end
  return co
end
coroutine.resume = function(co, ...) return again(resume0(co, ...)) end
coroutine.wrap = function(f)
  local co = coroutine.create(f)
  return function(...)
    local res = table.pack(resume0(co, ...))
    if not res[1] then error(res[2], 0) end
    return table.unpack(res, 2, res.n)
  end
end
-- The timeout's hook is the plugin's own: a script may not remove it.
debug.sethook = function() error("debug.sethook is reserved for the plugin's timeout", 2) end
slurm.log = function(level, msg) emit(level, tostring(msg)) end
slurm.error = function(msg) emit(-1, tostring(msg)) end
slurm.log_error = function(...) emit(-1, fmt(...)) end
slurm.log_info = function(...) emit(0, fmt(...)) end
slurm.log_verbose = function(...) emit(1, fmt(...)) end
slurm.log_debug = function(...) emit(2, fmt(...)) end
slurm.log_debug2 = function(...) emit(3, fmt(...)) end
slurm.log_debug3 = function(...) emit(4, fmt(...)) end
slurm.log_debug4 = function(...) emit(5, fmt(...)) end
slurm.user_msg = function(...) emit(-2, tostring(select(select("#", ...), ...))) end
slurm.log_user = function(...) emit(-2, fmt(...)) end
return function(on) if on and count > 0 then sethook(hook, "", count) else sethook() end end
"""


def _refuse_attributes(obj: object, name: object, is_setting: bool) -> str:
    raise AttributeError("Python attributes are not available to Lua plugins")


def _python_level(level: int) -> int:
    # slurm.log's levels: 0 info, 1 verbose, 2 and more debug; -1 error.
    if level < 0:
        return logging.ERROR
    return logging.INFO if level == 0 else logging.DEBUG


class LuaScript:
    """A script file, loaded into a Lua state of its own.

    ``plugin`` names it in logs and errors ("job_submit/lua"); ``required`` are the
    global functions it must define; ``trusted`` the accounts that may write it
    (:func:`luaplug.security.trusted_uids`); ``logger`` receives ``slurm.log_*``.
    A script is used from several threads: one call at a time, as Slurm's lua_lock."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        plugin: str,
        required: Sequence[str] = (),
        trusted: frozenset[int] | None = None,
        logger: logging.Logger | None = None,
    ) -> None:
        self.path = Path(path)
        self.plugin = plugin
        self.required = tuple(required)
        self.trusted = trusted if trusted is not None else trusted_uids()
        self.log = logger or log
        self._lock = threading.RLock()
        self._lua: Any = None
        self._hook: Any = None
        self._signature: tuple[int, int, int, int] | None = None
        self._deadline: float | None = None
        self._messages: list[str] = []
        self.loaded_at: float | None = None  # time.time() of the load in use

    # -- loading

    @property
    def loaded(self) -> bool:
        return self._lua is not None

    def _stat(self) -> tuple[int, int, int, int]:
        st = os.stat(self.path)
        return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def changed(self) -> bool:
        """Whether the file differs from the one loaded (or cannot be read any more)."""
        try:
            return self._stat() != self._signature
        except OSError:
            return True

    def load(self) -> None:
        """Load the script into a new state, replacing the one in use only on success;
        else :class:`ScriptError`."""
        with self._lock:
            try:
                check_script(self.path, self.trusted)
                signature = self._stat()
                source = self.path.read_bytes()
            except ScriptRefused as exc:
                raise ScriptError(self.plugin, self.path, str(exc)) from None
            except OSError as exc:
                raise ScriptError(self.plugin, self.path, str(exc.strerror)) from None
            lua, hook = self._new_state()
            try:
                # Lua's own load(), text only: a precompiled chunk could break the VM.
                # Named by the file's name: Lua cuts longer chunk names to 60 characters.
                compiled = lua.globals().load(source, "@" + self.path.name, "t")
                if isinstance(compiled, tuple):  # nil and the syntax error
                    raise ScriptError(self.plugin, self.path, str(compiled[1]))
                rc = self._run(hook, compiled, timeout=None)
            except CallFailed as exc:
                raise ScriptError(self.plugin, self.path, str(exc)) from None
            if rc and self._number(rc[0]) not in (None, codes.SUCCESS):
                raise ScriptError(self.plugin, self.path, f"returned {rc[0]} on load")
            missing = [name for name in self.required if lupa.lua_type(lua.globals()[name]) != "function"]
            if missing:
                raise ScriptError(self.plugin, self.path, "missing required function " + ", ".join(missing))
            self._lua, self._hook, self._signature = lua, hook, signature
            self.loaded_at = time.time()
            self._messages.clear()

    def refresh(self) -> bool:
        """Reload the script if its file changed, as Slurm does before each call.  A
        script that fails to load again keeps the one in use (logged) and False is
        returned; with none in use the :class:`ScriptError` is raised."""
        with self._lock:
            if self._lua is not None and not self.changed():
                return True
            try:
                self.load()
            except ScriptError as exc:
                if self._lua is None:
                    raise
                self.log.error("%s, using previous script", exc)
                return False
            return True

    def _new_state(self) -> tuple[Any, Any]:
        lua = lupa.LuaRuntime(
            register_eval=False,
            register_builtins=False,
            unpack_returned_tuples=True,
            attribute_filter=_refuse_attributes,
        )
        g = lua.globals()
        g.python = None  # lupa's bridge to Python's builtins
        slurm = lua.table_from(codes.CONSTANTS)
        prelude = lua.execute("return function(...) " + _PRELUDE + " end")
        hook = prelude(slurm, self._emit, self._expired, HOOK_COUNT)
        g.slurm = slurm
        return lua, hook

    # -- calling

    def _emit(self, level: int, message: str) -> None:
        if level == -2:
            self._messages.append(message)
            return
        self.log.log(_python_level(level), "%s: %s", self.plugin, message)

    def _expired(self) -> bool:
        return self._deadline is not None and time.monotonic() > self._deadline

    def _run(self, hook: Any, function: Any, *args: Any, timeout: float | None) -> list[Any]:
        self._deadline = None if timeout is None else time.monotonic() + timeout
        hook(timeout is not None)
        try:
            out = function(*args)
        except lupa.LuaError as exc:
            if self._expired():
                raise CallFailed(f"timed out after {timeout:g} s", timed_out=True) from None
            # lupa appends Lua's traceback; the message is Slurm's error line.
            raise CallFailed(str(exc).split("\nstack traceback:", 1)[0]) from None
        except Exception as exc:  # raised in Python under Lua: lupa re-raises it as it was
            raise CallFailed(f"{type(exc).__name__}: {exc}") from None
        finally:
            hook(False)
            self._deadline = None
        if out is None:
            return []
        return list(out) if isinstance(out, tuple) else [out]

    def has(self, name: str) -> bool:
        with self._lock:
            return self._lua is not None and lupa.lua_type(self._lua.globals()[name]) == "function"

    def call(self, name: str, *args: Any, timeout: float | None = None) -> CallResult:
        """Call the global function ``name`` with ``args`` converted to Lua (dicts and
        lists become tables); :class:`CallFailed` on a Lua error or the timeout.  A table
        passed in may be changed by the function: read it back with :meth:`to_python`."""
        with self._lock:
            if self._lua is None:
                raise CallFailed(f"{self.path}: not loaded")
            function = self._lua.globals()[name]
            if lupa.lua_type(function) != "function":
                raise CallFailed(f"{self.path}: no function {name}")
            self._messages = []
            values = self._run(self._hook, function, *args, timeout=timeout)
            converted = [self.to_python(v) for v in values]
            rc = self._number(values[0]) if values else None
            return CallResult(codes.SUCCESS if rc is None else rc, converted, self._messages)

    def table(self, value: Mapping[str, Any] | Sequence[Any]) -> Any:
        """A Lua table of a dict (keys as given) or a list (indexed from 1), recursively."""
        with self._lock:
            return self._to_lua(value)

    def lookup_table(self, values: Mapping[str, str]) -> Any:
        """A table that reads ``values`` by name only: it cannot be iterated (``pairs``
        and ``next`` see nothing) and a field set on it changes nothing (hres/lua's ``env``)."""
        with self._lock:
            make = self._lua.execute(
                "return function(data) return setmetatable({}, {"
                "__index = function(_, k) return data[k] end,"
                "__newindex = function() end,"
                "__pairs = function(t) return function() return nil end, t, nil end,"
                '__metatable = "env"}) end'
            )
            return make(self._lua.table_from(dict(values)))

    def _to_lua(self, value: Any) -> Any:
        if isinstance(value, Mapping):
            return self._lua.table_from({k: self._to_lua(v) for k, v in value.items() if v is not None})
        if isinstance(value, list | tuple):
            return self._lua.table_from([self._to_lua(v) for v in value])
        return value

    @staticmethod
    def _number(value: Any) -> int | None:
        """Slurm's lua_isnumber: a number, or a string that reads as one."""
        if isinstance(value, bool):
            return None
        if isinstance(value, int):
            return value
        if isinstance(value, float):
            return int(value) if math.isfinite(value) else None
        if isinstance(value, str):
            try:
                return int(float(value.strip()))
            except ValueError:
                return None
        return None

    @classmethod
    def to_python(cls, value: Any) -> Any:
        """A Lua value as Python: a table whose keys are 1..n becomes a list, any other
        table a dict; functions and other Lua objects stay as they are."""
        if lupa.lua_type(value) != "table":
            return value
        items = list(value.items())
        keys = [k for k, _ in items]
        ints = keys and all(isinstance(k, int) and not isinstance(k, bool) for k in keys)
        if ints and sorted(keys) == list(range(1, len(keys) + 1)):
            return [cls.to_python(v) for _, v in sorted(items)]
        return {k: cls.to_python(v) for k, v in items}
