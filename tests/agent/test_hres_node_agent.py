"""hres/lua's node job prolog and epilog (#17 point 2, node side; point 4) run by a real
agent against the fake controller of tests/agent/harness.py, with small Lua scripts: the
launch's ``hres`` preps reach the functions, a failure is reported as the Prolog's or the
Epilog's (drain, or not for ESLURM_HRES_REMOTE_FAIL), several resources' epilogs run in
reverse, PrologTimeout stops a loop, an unsafe script never runs."""

from __future__ import annotations

import json
from pathlib import Path

from agent.daemon import Agent
from agent.hres_node import REQUIRED
from agent.nodeconf import NodeRules
from cluster.core.prolog_conf import PrologConfig
from tests.agent.harness import ME, FakeController, launch_object, run_with_agent

BODY = "return slurm.SUCCESS"


def lua(path: Path, log: Path, **bodies: str) -> Path:
    """A script defining every hres/lua function; the node job functions append a JSON
    line of what they were given to ``log``, then run ``bodies[name]`` (default: success)."""
    lines = [
        f'local LOG = "{log}"',
        "local function note(kind, prep, job)",
        '  local f = io.open(LOG, "a")',
        "  local layers = {}",
        "  for i, l in ipairs(prep.layers or {}) do",
        '    layers[i] = string.format("%s*%d@%s", l.name, l.count, l.nodes)',
        "  end",
        '  f:write(string.format(\'{"kind":"%s","name":"%s","payload":"%s","path":"%s",\''
        ' .. \'"mode":"%s","async":%s,"layers":"%s","job_id":%d,"sluid":"%s",\''
        ' .. \'"user":"%s","account":"%s","nodes":"%s","end_time":%d}\\n\','
        " kind, prep.name, prep.payload or '', prep.config.path, prep.plugin_args.mode or '',"
        " tostring(prep.async_running), table.concat(layers, ','), job.job_id, job.sluid,"
        " job.user_name or '', job.account or '', job.nodes, job.end_time))",
        "  f:close()",
        "end",
    ]
    for name in REQUIRED:
        if name in ("hres_node_job_prolog", "hres_node_job_epilog"):
            kind = name.removeprefix("hres_node_job_")
            body = bodies.get(name, BODY)
            lines.append(f'function {name}(prep, job)\n  note("{kind}", prep, job)\n  {body}\nend')
        else:
            lines.append(f"function {name}(a, b, c, d, e)\n  {bodies.get(name, BODY)}\nend")
    path.write_text("\n".join(lines) + "\n")
    path.chmod(0o644)
    return path


def prep(name: str, path: Path, payload: str | None = "token=21") -> dict:
    return {
        "name": name,
        "config": {"path": str(path), "service": "https://qpu.example"},
        "plugin_args": {"mode": "fast"},
        "payload": payload,
        "async_running": False,
        "layers": [{"name": f"{name}1", "count": 1, "nodes": "node[01-02]"}],
    }


def calls(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def rules(**conf: object) -> NodeRules:
    return NodeRules(root_jobs=True, prolog=PrologConfig(**conf))  # type: ignore[arg-type]


def test_job_prolog_gets_the_prep_and_its_payload_then_the_job_starts(tmp_path: Path, work: Path) -> None:
    log = tmp_path / "calls.log"
    script = lua(tmp_path / "qpu.lua", log)

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        job = launch_object(21, "#!/bin/bash\ntrue\n", work, run=3, hres=[prep("qpu", script)])
        await ctl.send({"type": "launch", "job": job})
        await ctl.expect("started", job_id=21)
        seen = calls(log)[0]
        assert seen["kind"] == "prolog"
        assert (seen["name"], seen["payload"], seen["path"]) == ("qpu", "token=21", str(script))
        assert (seen["mode"], seen["async"], seen["layers"]) == ("fast", False, "qpu1*1@node[01-02]")
        assert (seen["job_id"], seen["sluid"], seen["user"], seen["account"]) == (21, "21.3", ME, "physics")
        assert seen["nodes"] == "node[01-02]"
        await ctl.expect("completed", job_id=21)
        # The job epilog once its processes are gone, though slurm.conf has no Epilog.
        done = await ctl.expect("prolog_epilog", job_id=21)
        assert (done["what"], done["error"]) == ("epilog_done", "")
        assert [c["kind"] for c in calls(log)] == ["prolog", "epilog"]

    run_with_agent(tmp_path, scenario, rules=rules())


def test_a_failing_job_prolog_is_the_prologs_failure_and_drains(tmp_path: Path, work: Path) -> None:
    log = tmp_path / "calls.log"
    script = lua(
        tmp_path / "qpu.lua",
        log,
        hres_node_job_prolog='slurm.user_msg("qpu service refused the token")\n  return slurm.ERROR',
    )
    ran = work / "ran"

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        job = launch_object(22, f"#!/bin/bash\ntouch {ran}\n", work, hres=[prep("qpu", script)])
        await ctl.send({"type": "launch", "job": job})
        msg = await ctl.expect("prolog_epilog", job_id=22)
        assert (msg["what"], msg["drain"]) == ("prolog_failed", True)
        assert msg["error"] == "qpu service refused the token"
        await ctl.nothing("started", 0.5)
        assert not ran.exists()

    run_with_agent(tmp_path, scenario, rules=rules())


def test_a_job_prolog_remote_fail_does_not_drain(tmp_path: Path, work: Path) -> None:
    log = tmp_path / "calls.log"
    script = lua(tmp_path / "qpu.lua", log, hres_node_job_prolog="return slurm.ESLURM_HRES_REMOTE_FAIL")

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        job = launch_object(23, "#!/bin/bash\ntrue\n", work, hres=[prep("qpu", script)])
        await ctl.send({"type": "launch", "job": job})
        msg = await ctl.expect("prolog_epilog", job_id=23)
        assert (msg["what"], msg["drain"]) == ("prolog_failed", False)
        assert msg["error"] == "hres/lua: qpu: hres_node_job_prolog returned 8100"
        await ctl.nothing("started", 0.3)

    run_with_agent(tmp_path, scenario, rules=rules())


def test_every_job_prolog_runs_after_a_failure_and_one_that_drains_drains(tmp_path: Path, work: Path) -> None:
    log = tmp_path / "calls.log"
    remote = lua(tmp_path / "a.lua", log, hres_node_job_prolog="return slurm.ESLURM_HRES_REMOTE_FAIL")
    broken = lua(tmp_path / "b.lua", log, hres_node_job_prolog="return slurm.ERROR")

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        job = launch_object(24, "#!/bin/bash\ntrue\n", work, hres=[prep("a", remote), prep("b", broken)])
        await ctl.send({"type": "launch", "job": job})
        msg = await ctl.expect("prolog_epilog", job_id=24)
        assert (msg["what"], msg["drain"]) == ("prolog_failed", True)
        assert msg["error"].endswith("hres_node_job_prolog returned 8100")  # the first failure's words
        assert [(c["kind"], c["name"]) for c in calls(log)] == [("prolog", "a"), ("prolog", "b")]

    run_with_agent(tmp_path, scenario, rules=rules())


def test_job_epilogs_run_in_reverse_after_a_failed_epilog_and_drain(tmp_path: Path, work: Path) -> None:
    log = tmp_path / "calls.log"
    first = lua(tmp_path / "a.lua", log, hres_node_job_epilog="error('service gone')")
    second = lua(tmp_path / "b.lua", log)
    epilog = tmp_path / "epilog"
    epilog.write_text("#!/bin/bash\nexit 1\n")
    epilog.chmod(0o755)

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        job = launch_object(25, "#!/bin/bash\ntrue\n", work, hres=[prep("a", first), prep("b", second)])
        await ctl.send({"type": "launch", "job": job})
        await ctl.expect("completed", job_id=25)
        msg = await ctl.expect("prolog_epilog", job_id=25)
        assert (msg["what"], msg["drain"]) == ("epilog_failed", True)
        assert "exited with status 1" in msg["error"]  # slurm.conf's Epilog failed first
        names = [(c["kind"], c["name"]) for c in calls(log)]
        assert names == [("prolog", "a"), ("prolog", "b"), ("epilog", "b"), ("epilog", "a")]

    run_with_agent(tmp_path, scenario, rules=rules(epilog=(str(epilog),)))


def test_a_job_epilog_error_drains_and_remote_fail_does_not(tmp_path: Path, work: Path) -> None:
    log = tmp_path / "calls.log"
    broken = lua(tmp_path / "a.lua", log, hres_node_job_epilog="error('service gone')")
    remote = lua(tmp_path / "b.lua", log, hres_node_job_epilog="return slurm.ESLURM_HRES_REMOTE_FAIL")

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        await ctl.send({"type": "launch", "job": launch_object(26, "#!/bin/bash\ntrue\n", work,
                                                               hres=[prep("a", broken)])})  # fmt: skip
        msg = await ctl.expect("prolog_epilog", job_id=26)
        assert (msg["what"], msg["drain"]) == ("epilog_failed", True)
        assert "hres_node_job_epilog" in msg["error"] and "service gone" in msg["error"]
        await ctl.send({"type": "launch", "job": launch_object(27, "#!/bin/bash\ntrue\n", work,
                                                               hres=[prep("b", remote)])})  # fmt: skip
        msg = await ctl.expect("prolog_epilog", job_id=27)
        assert (msg["what"], msg["drain"]) == ("epilog_failed", False)

    run_with_agent(tmp_path, scenario, rules=rules())


def test_prolog_timeout_stops_a_job_prolog_that_loops(tmp_path: Path, work: Path) -> None:
    script = lua(tmp_path / "qpu.lua", tmp_path / "calls.log", hres_node_job_prolog="while true do end")

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        job = launch_object(28, "#!/bin/bash\ntrue\n", work, hres=[prep("qpu", script)])
        await ctl.send({"type": "launch", "job": job})
        msg = await ctl.expect("prolog_epilog", job_id=28, timeout=10)
        assert (msg["what"], msg["drain"]) == ("prolog_failed", True)
        assert "timed out after 1 s" in msg["error"]

    run_with_agent(tmp_path, scenario, rules=rules(prolog_timeout=1))


def test_a_script_others_may_write_never_runs_and_fails_the_prolog(tmp_path: Path, work: Path) -> None:
    log = tmp_path / "calls.log"
    script = lua(tmp_path / "qpu.lua", log)
    script.chmod(0o666)

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        job = launch_object(29, "#!/bin/bash\ntrue\n", work, hres=[prep("qpu", script)])
        await ctl.send({"type": "launch", "job": job})
        msg = await ctl.expect("prolog_epilog", job_id=29)
        assert msg["what"] == "prolog_failed"
        assert f"{script} is writable by others (mode 0666): refused" in msg["error"]
        assert calls(log) == []

    run_with_agent(tmp_path, scenario, rules=rules())


def test_a_job_without_plugin_resources_takes_no_prolog_or_epilog_stage(tmp_path: Path, work: Path) -> None:
    async def scenario(ctl: FakeController, agent: Agent) -> None:
        await ctl.send({"type": "launch", "job": launch_object(30, "#!/bin/bash\ntrue\n", work)})
        await ctl.expect("completed", job_id=30)
        await ctl.nothing("prolog_epilog", 0.5)

    run_with_agent(tmp_path, scenario, rules=rules())


def test_the_agents_required_functions_are_the_controllers() -> None:
    from hres.lua_plugins import REQUIRED as CONTROLLER

    assert REQUIRED == CONTROLLER


def script_with(path: Path, **bodies: str) -> Path:
    """Every hres/lua function with the signature of the spec, ``bodies`` replacing some."""
    lines = []
    for name in REQUIRED:
        params = (
            "prep, job, node_tid, global_tid, env"
            if name.startswith("hres_node_task") or name.startswith("hres_node_user")
            else "a, b, c"
        )
        lines.append(f"function {name}({params})\n{bodies.get(name, BODY)}\nend")
    path.write_text("\n".join(lines) + "\n")
    path.chmod(0o644)
    return path


TASK_NOTE = """\
local f = io.open("{log}", "a")
local count = 0
for _ in pairs(env) do count = count + 1 end
env.SLURM_JOB_ID = "changed"
f:write(string.format("%s %s %d %d %s %s %s %d\\n", "{kind}", prep.payload, node_tid, global_tid,
  env.SLURM_JOB_ID, env.SLURM_PROCID or "-", env.FROM_SUBMITTER or "-", count))
f:close()
"""


def test_task_prologs_and_task_epilog_run_around_the_task_with_its_environment(
    tmp_path: Path, work: Path
) -> None:
    log = tmp_path / "calls.log"
    script = script_with(
        tmp_path / "qpu.lua",
        hres_node_task_prolog=TASK_NOTE.format(log=log, kind="task_prolog"),
        hres_node_user_task_prolog=TASK_NOTE.format(log=log, kind="user_task_prolog")
        + 'io.write("from the user task prolog\\n")\nio.flush()\n',
        hres_node_task_epilog=TASK_NOTE.format(log=log, kind="task_epilog"),
    )
    task_prolog = tmp_path / "task_prolog"
    task_prolog.write_text(
        f'#!/bin/bash\necho "task_prolog(slurm.conf)" >> {log}\necho "print from TaskProlog"\n'
    )
    task_prolog.chmod(0o755)

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        job = launch_object(31, "#!/bin/bash\necho job\n", work, hres=[prep("qpu", script)])
        await ctl.send({"type": "launch", "job": job})
        await ctl.expect("completed", job_id=31)
        await ctl.expect("prolog_epilog", job_id=31)
        # Root's, the user's, then slurm.conf's TaskProlog; the task epilog after the task.
        # env: looked up by name (the job's id), never iterated (0 fields), not changed by a write.
        assert log.read_text().splitlines() == [
            "task_prolog token=21 0 0 31 - yes 0",
            "user_task_prolog token=21 0 0 31 0 yes 0",  # the batch task is task 0
            "task_prolog(slurm.conf)",
            "task_epilog token=21 0 0 31 0 yes 0",
        ]
        out = (work / "slurm-31.out").read_text().splitlines()
        assert out == ["from the user task prolog", "from TaskProlog", "job"]

    run_with_agent(tmp_path, scenario, rules=rules(task_prolog=(str(task_prolog),)))


def test_a_failing_task_prolog_fails_the_task(tmp_path: Path, work: Path) -> None:
    script = script_with(tmp_path / "qpu.lua", hres_node_task_prolog="return slurm.ERROR")

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        await ctl.send({"type": "launch", "job": launch_object(32, "#!/bin/bash\ntrue\n", work,
                                                               hres=[prep("qpu", script)])})  # fmt: skip
        msg = await ctl.expect("launch_failed", job_id=32)
        assert msg["error"] == "task prolog failed: hres/lua: qpu: hres_node_task_prolog returned -1"
        await ctl.nothing("started", 0.3)

    run_with_agent(tmp_path, scenario, rules=rules())


def test_a_failing_user_task_prolog_fails_the_task(tmp_path: Path, work: Path) -> None:
    script = script_with(
        tmp_path / "qpu.lua",
        hres_node_user_task_prolog='slurm.user_msg("no quota for " .. job.user_name)\nreturn 1',
    )

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        await ctl.send({"type": "launch", "job": launch_object(33, "#!/bin/bash\ntrue\n", work,
                                                               hres=[prep("qpu", script)])})  # fmt: skip
        msg = await ctl.expect("launch_failed", job_id=33)
        assert msg["error"] == f"task prolog failed: no quota for {ME}"
        await ctl.nothing("started", 0.3)

    run_with_agent(tmp_path, scenario, rules=rules())


def test_a_user_task_prolog_that_loops_is_stopped_by_prolog_timeout(tmp_path: Path, work: Path) -> None:
    script = script_with(tmp_path / "qpu.lua", hres_node_user_task_prolog="while true do end")

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        await ctl.send({"type": "launch", "job": launch_object(34, "#!/bin/bash\ntrue\n", work,
                                                               hres=[prep("qpu", script)])})  # fmt: skip
        msg = await ctl.expect("launch_failed", job_id=34, timeout=15)
        assert "hres_node_user_task_prolog: timed out after 1 s" in msg["error"]

    run_with_agent(tmp_path, scenario, rules=rules(prolog_timeout=1))


def test_a_failing_task_epilog_is_only_logged(tmp_path: Path, work: Path) -> None:
    script = script_with(tmp_path / "qpu.lua", hres_node_task_epilog="error('gone')")

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        await ctl.send({"type": "launch", "job": launch_object(35, "#!/bin/bash\ntrue\n", work,
                                                               hres=[prep("qpu", script)])})  # fmt: skip
        await ctl.expect("completed", job_id=35)
        msg = await ctl.expect("prolog_epilog", job_id=35)
        assert (msg["what"], msg["error"]) == ("epilog_done", "")

    run_with_agent(tmp_path, scenario, rules=rules())


def test_run_prolog_and_run_epilog_run_the_job_prolog_and_epilog_on_a_node_without_the_launch(
    tmp_path: Path,
) -> None:
    """PrologFlags=Alloc's run_prolog and the run_epilog of the job's other nodes carry the
    preps beside the facts: those nodes run the job prolog and epilog too."""
    log = tmp_path / "calls.log"
    script = lua(tmp_path / "qpu.lua", log, hres_node_job_epilog="return slurm.ESLURM_HRES_REMOTE_FAIL")
    facts = {"user": ME, "node_list": "node[01-02]", "num_nodes": 2, "partition": "debug", "run": 2,
             "hres": [prep("qpu", script)]}  # fmt: skip

    async def scenario(ctl: FakeController, agent: Agent) -> None:
        await ctl.send({"type": "run_prolog", "job_id": 36, "node": "node02", "run": 2, "job": facts})
        msg = await ctl.expect("prolog_epilog", job_id=36)
        assert (msg["what"], msg["node"]) == ("prolog_done", "node02")
        await ctl.send({"type": "run_epilog", "job_id": 36, "node": "node02", "run": 2, "exit_code": 0,
                        "signal": 0, "job": facts})  # fmt: skip
        msg = await ctl.expect("prolog_epilog", job_id=36)
        assert (msg["what"], msg["drain"]) == ("epilog_failed", False)
        assert [(c["kind"], c["job_id"], c["sluid"]) for c in calls(log)] == [
            ("prolog", 36, "36.2"),
            ("epilog", 36, "36.2"),
        ]

    run_with_agent(tmp_path, scenario, rules=rules())
