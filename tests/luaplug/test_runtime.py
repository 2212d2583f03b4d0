"""The Lua runtime of the plugins (luaplug, #17 points 2, 5 and 6): the security check,
the ``slurm`` table, conversions both ways, Slurm's return-code rule, the instruction-count
timeout, and one state per script reloaded when the file changes."""

from __future__ import annotations

import logging
import os
import time

import pytest

from luaplug import CallFailed, LuaScript, ScriptError, ScriptRefused, check_script, codes
from luaplug.security import trusted_uids


def write(path, text: str, mode: int = 0o644):
    path.write_text(text)
    path.chmod(mode)
    return path


@pytest.fixture
def script_dir(tmp_path):
    d = tmp_path / "etc"
    d.mkdir(mode=0o755)
    d.chmod(0o755)
    return d


def loaded(path, **kw) -> LuaScript:
    s = LuaScript(path, plugin="test/lua", **kw)
    s.load()
    return s


# -- the security check


def test_a_world_writable_script_is_refused_naming_the_file_and_its_mode(script_dir):
    path = write(script_dir / "p.lua", "function f() end", 0o666)
    with pytest.raises(ScriptRefused) as caught:
        check_script(path)
    assert str(caught.value) == f"{path} is writable by others (mode 0666): refused"
    # LuaScript.load refuses it too, and runs nothing of it.
    marker = script_dir / "ran"
    write(path, f'io.open("{marker}", "w"):close()', 0o666)
    with pytest.raises(ScriptError, match=r"writable by others \(mode 0666\)"):
        LuaScript(path, plugin="test/lua").load()
    assert not marker.exists()


def test_a_script_in_a_directory_others_may_write_is_refused(script_dir):
    path = write(script_dir / "p.lua", "function f() end")
    script_dir.chmod(0o777)
    with pytest.raises(ScriptRefused) as caught:
        check_script(path)
    assert (
        str(caught.value) == f"{path}: its directory {script_dir} is writable by others (mode 0777): refused"
    )


def test_a_root_owned_sticky_directory_such_as_tmp_is_not_writable_by_others_in_this_sense(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to make a root-owned sticky directory")
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)
    path = write(sticky / "p.lua", "function f() end")
    assert check_script(path) == path
    # Without the sticky bit the same directory is refused.
    sticky.chmod(0o777)
    with pytest.raises(ScriptRefused, match=r"mode 0777"):
        check_script(path)


def test_a_script_owned_by_another_account_is_refused(script_dir):
    path = write(script_dir / "p.lua", "function f() end")
    with pytest.raises(ScriptRefused) as caught:
        check_script(path, frozenset({os.geteuid() + 12345}))
    assert str(caught.value) == f"{path} is owned by uid {os.geteuid()} (mode 0644): refused"


def test_slurm_user_is_trusted_by_name_or_number():
    assert trusted_uids("4242") == frozenset({0, os.geteuid(), 4242})
    assert trusted_uids("root") == frozenset({0, os.geteuid()})
    assert trusted_uids("no-such-account-xyz") == frozenset({0, os.geteuid()})


def test_a_missing_script_is_an_error_naming_it(script_dir):
    with pytest.raises(ScriptError) as caught:
        LuaScript(script_dir / "none.lua", plugin="test/lua").load()
    assert str(caught.value) == f"test/lua: {script_dir / 'none.lua'}: No such file or directory"


# -- loading


def test_a_syntax_error_names_the_file_and_line(script_dir):
    path = write(script_dir / "p.lua", "x = 1\nfunction f( end\n")
    with pytest.raises(ScriptError) as caught:
        loaded(path)
    assert (caught.value.path, caught.value.line) == (path, 2)
    assert str(caught.value).startswith(f"test/lua: {path}:2: ")


def test_a_missing_required_function_or_a_failing_chunk_is_a_failed_load(script_dir):
    path = write(script_dir / "p.lua", "function a() end\n")
    with pytest.raises(ScriptError, match=r"missing required function b, c$"):
        loaded(path, required=("a", "b", "c"))
    write(path, "function a() end\nreturn slurm.ERROR\n")
    with pytest.raises(ScriptError, match=r"returned -1 on load$"):
        loaded(path)
    write(path, "error('boom')\n")
    with pytest.raises(ScriptError) as caught:
        loaded(path)
    assert (caught.value.line, caught.value.reason) == (1, "boom")


def test_the_slurm_table_and_the_standard_libraries_are_there_and_python_is_not(script_dir, caplog):
    path = write(
        script_dir / "p.lua",
        """
function f()
  slurm.log_info("info %s %d", "x", 3)
  slurm.log_error("err %s", "y")
  slurm.log_debug("dbg")
  slurm.log_verbose("verb")
  return slurm.SUCCESS, slurm.ERROR, slurm.ESLURM_INVALID_ACCOUNT, slurm.ESLURM_HRES_REMOTE_FAIL,
    slurm.NO_VAL, type(os.execute), type(io.popen), type(string.gmatch), type(table.concat),
    type(math.floor), type(python)
end
""",
    )
    s = loaded(path)
    with caplog.at_level(logging.DEBUG, logger="luaplug"):
        result = s.call("f")
    assert result.values == [0, -1, 2045, 8100, codes.NO_VAL, "function", "function", "function",
                             "function", "function", "nil"]  # fmt: skip
    logged = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "luaplug"]
    assert logged == [
        (logging.INFO, "test/lua: info x 3"),
        (logging.ERROR, "test/lua: err y"),
        (logging.DEBUG, "test/lua: dbg"),
        (logging.DEBUG, "test/lua: verb"),
    ]


def test_python_objects_passed_in_expose_no_attributes(script_dir):
    path = write(script_dir / "p.lua", "function f(o) return o.__class__ end\n")
    with pytest.raises(CallFailed, match="Python attributes are not available"):
        loaded(path).call("f", ValueError("x"))


# -- calling: conversions and return codes


def test_tables_convert_both_ways_and_changes_are_read_back(script_dir):
    path = write(
        script_dir / "p.lua",
        """
function f(desc, parts, n)
  desc.name = desc.name .. "-x"
  desc.comment = "set"
  desc.account = nil
  return slurm.SUCCESS, {n, parts.p1.nodes, #parts.list, parts.list[2]}, {k = {1, 2}}
end
""",
    )
    s = loaded(path)
    desc = s.table({"name": "job", "account": "acct", "skip": None})
    parts = s.table({"p1": {"nodes": "n[1-2]"}, "list": ["a", "b"]})
    result = s.call("f", desc, parts, 7)
    assert result.rc == codes.SUCCESS
    assert result.values[1:] == [[7, "n[1-2]", 2, "b"], {"k": [1, 2]}]
    assert s.to_python(desc) == {"name": "job-x", "comment": "set"}


@pytest.mark.parametrize(
    ("body", "rc"),
    [
        ("", codes.SUCCESS),  # no return at all
        ("return nil", codes.SUCCESS),
        ("return 'not a number'", codes.SUCCESS),  # non-numeric: success, as Slurm says
        ("return {}", codes.SUCCESS),
        ("return slurm.ERROR", codes.ERROR),
        ("return 2045", 2045),
        ("return '2050'", 2050),  # lua_isnumber takes a numeric string
    ],
)
def test_the_return_code_follows_slurms_rule(script_dir, body, rc):
    path = write(script_dir / "p.lua", f"function f()\n{body}\nend\n")
    assert loaded(path).call("f").rc == rc


def test_user_msg_collects_lines_per_call(script_dir):
    path = write(
        script_dir / "p.lua",
        'function f(n) slurm.user_msg("first " .. n); slurm.log_user("second %d", n) end\n',
    )
    s = loaded(path)
    assert s.call("f", 1).user_msg == "first 1\nsecond 1"
    assert s.call("f", 2).user_msgs == ["first 2", "second 2"]


def test_a_lua_error_is_a_failed_call_naming_the_line(script_dir):
    path = write(script_dir / "p.lua", "function f()\n  local x = nil\n  return x.y\nend\n")
    with pytest.raises(CallFailed) as caught:
        loaded(path).call("f")
    assert str(caught.value).startswith("p.lua:3: attempt to index") and not caught.value.timed_out


# -- the timeout


@pytest.mark.parametrize(
    "body",
    [
        "while true do end",
        # pcall cannot swallow the timeout...
        "while true do pcall(function() while true do end end) end",
        "while true do xpcall(function() while true do end end, function(e) return e end) end",
        # ...nor can a coroutine escape the hook.
        "coroutine.wrap(function() while true do end end)()",
        "while true do coroutine.resume(coroutine.create(function() while true do end end)) end",
    ],
)
def test_code_that_runs_too_long_is_stopped_as_a_failure_of_that_call(script_dir, body):
    path = write(script_dir / "p.lua", f"function loop()\n{body}\nend\nfunction ok() return 5 end\n")
    s = loaded(path)
    started = time.monotonic()
    with pytest.raises(CallFailed) as caught:
        s.call("loop", timeout=0.3)
    assert caught.value.timed_out
    assert str(caught.value) == "timed out after 0.3 s"
    assert time.monotonic() - started < 30  # stopped, not hung (the suite's timeout is 300 s)
    # The state stays usable, without a deadline left behind.
    assert s.call("ok").rc == 5


def test_a_script_cannot_remove_the_timeouts_hook(script_dir):
    path = write(script_dir / "p.lua", "function f() debug.sethook() while true do end end\n")
    with pytest.raises(CallFailed, match=r"debug\.sethook is reserved for the plugin's timeout"):
        loaded(path).call("f", timeout=5)


def test_a_call_without_timeout_is_not_stopped(script_dir):
    path = write(
        script_dir / "p.lua", "function f() local n = 0 for i = 1, 300000 do n = n + i end return n end\n"
    )
    s = loaded(path)
    assert s.call("f").values == [45000150000]


# -- one state per script, reloaded when its file changes


def test_a_changed_script_is_reloaded_with_its_globals_dropped(script_dir):
    path = write(script_dir / "p.lua", "count = 0\nfunction f() count = count + 1 return count end\n")
    s = loaded(path)
    assert [s.call("f").rc, s.call("f").rc] == [1, 2]
    # Another script's state is its own.
    other = loaded(write(script_dir / "q.lua", "function f() return count end\n"))
    assert other.call("f").rc == codes.SUCCESS  # count is nil there
    assert s.refresh() is True and s.call("f").rc == 3  # unchanged: not reloaded
    write(path, "function f() return (count or 100) end\n")
    assert s.changed()
    assert s.refresh() is True
    assert s.call("f").rc == 100


def test_a_change_that_fails_to_load_keeps_the_last_script_and_is_logged(script_dir, caplog):
    path = write(script_dir / "p.lua", "function f() return 7 end\n")
    s = loaded(path)
    write(path, "function f( end\n")
    with caplog.at_level(logging.ERROR, logger="luaplug"):
        assert s.refresh() is False
    assert s.call("f").rc == 7
    assert any("using previous script" in r.getMessage() for r in caplog.records)
    # A change made world-writable is refused the same way, never loaded.
    write(path, "function f() return 8 end\n", 0o666)
    assert s.refresh() is False and s.call("f").rc == 7
    path.chmod(0o644)
    assert s.refresh() is True and s.call("f").rc == 8


def test_refresh_with_nothing_loaded_raises():
    s = LuaScript("/nonexistent/p.lua", plugin="test/lua")
    with pytest.raises(ScriptError):
        s.refresh()
    with pytest.raises(CallFailed, match="not loaded"):
        s.call("f")
