"""hres/lua's task functions around every task of an srun step (#17 point 2, the task rows
of the callback table): a real step runner (agent/steps.py) with the agent's hooks
(agent/daemon.node_hooks' HresNodeHooks) talking to a real srun session (cli/step_run.py),
small Lua scripts run in real processes.  Three tasks on two nodes (task 0 on node01,
tasks 1-2 on node02), so a task's node_tid (its local id) and global_tid (its rank)
differ."""

from __future__ import annotations

import asyncio
import io
import os
import pwd
import socket
import sys
from pathlib import Path

from agent.containment import Containment
from agent.hres_node import HresNodeHooks
from agent.prolog import NodeHooks
from agent.steps import StepRunner
from cli import step_output
from cli.step_run import Session
from cluster.core.prolog_conf import PrologConfig
from luaplug.hres_functions import REQUIRED
from slurmwords import agent_messages as am
from slurmwords import step_io

ME = pwd.getpwuid(os.getuid()).pw_name
LAYOUT = {"node01": [0], "node02": [1, 2]}
START, LIMIT = 1_000_000, 10  # the job's start (Unix time) and time limit (minutes)
CODE = "import os; print('ran', os.environ['SLURM_PROCID'], flush=True)"

# Each task function appends one line of what it was given; ``{extra}`` then decides.
NOTE = """\
local f = io.open("{log}", "a")
f:write(string.format(
  "%s %s %s node_tid=%d global_tid=%d procid=%s localid=%s task_pid=%s job=%d end=%d payload=%s\\n",
  "{kind}", prep.name, env.SLURMD_NODENAME or "?", node_tid, global_tid, env.SLURM_PROCID or "-",
  env.SLURM_LOCALID or "-", env.SLURM_TASK_PID and "set" or "-", job.job_id, job.end_time,
  prep.payload or ""))
f:close()
{extra}
"""


def script(path: Path, log: Path, **extra: str) -> Path:
    """Every hres/lua function; the three task functions note their call, then run
    ``extra[name]`` (default: return success)."""
    lines = []
    for name in REQUIRED:
        kind = name.removeprefix("hres_node_")
        if kind in ("task_prolog", "user_task_prolog", "task_epilog"):
            body = NOTE.format(log=log, kind=kind, extra=extra.get(name, "return slurm.SUCCESS"))
            lines.append(f"function {name}(prep, job, node_tid, global_tid, env)\n{body}end")
        else:
            lines.append(f"function {name}() return slurm.SUCCESS end")
    path.write_text("\n".join(lines) + "\n")
    path.chmod(0o644)
    return path


def prep(name: str, path: Path) -> dict:
    layers = [{"name": f"{name}1", "count": 1, "nodes": "node[01-02]"}]
    return {"name": name, "config": {"path": str(path)}, "plugin_args": {}, "payload": f"token-{name}",
            "async_running": False, "layers": layers}  # fmt: skip


def launch(node: str, index: int, port: int, key: str, *, work: Path, preps: list[dict], argv: list[str]):
    tasks = LAYOUT[node]
    job = {"job_id": 7, "user": ME, "cpus_on_node": 2, "node_list": "node[01-02]", "run": 0,
           "start_time": START, "time_limit": LIMIT, "hres": preps}  # fmt: skip
    return am.StepLaunch(
        job_id=7, step_id=0, node=node, node_index=index, tasks=tasks, cpu_ids=[], ntasks=3,
        node_list="node[01-02]", num_nodes=2, tasks_per_node="1,2", argv=argv,
        environment={"PATH": os.environ.get("PATH", "")}, work_dir=str(work), job=job,
        io_host="127.0.0.1", io_port=port, io_key=key,
    )  # fmt: skip


def run_step(
    tmp_path: Path,
    preps: list[dict],
    *,
    argv: list[str] | None = None,
    conf: PrologConfig | None = None,
    prolog_timeout: float | None = None,
    epilog_timeout: float | None = None,
) -> tuple[int, list[bytes], bytes, list[str], list]:
    """The step through the agent's hooks: srun's status, its standard output's lines,
    its standard error, its exit report, and the agent's step_done messages."""

    async def go():
        key = step_io.new_key()
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        step = {"step_id": 0, "num_tasks": 3, "nodes": [{"name": n, "tasks": t} for n, t in LAYOUT.items()]}
        session = Session(None, 7, step, key, {"input": "none"})
        out, err = io.BytesIO(), io.BytesIO()
        session.out = step_output.TaskOutput(out, err, ntasks=3, label=True)
        hooks = NodeHooks(conf)
        HresNodeHooks(prolog_timeout=prolog_timeout, epilog_timeout=epilog_timeout).attach(hooks)
        emitted: list[am.Message] = []
        runner = StepRunner(list(LAYOUT), Containment(usable=sorted(os.sched_getaffinity(0))), emitted.append,
                            clock=lambda: 1.0, root_jobs=True, hooks=hooks)  # fmt: skip
        for index, node in enumerate(LAYOUT):
            runner.launch(launch(node, index, sock.getsockname()[1], key, work=tmp_path, preps=preps,
                                 argv=argv or [sys.executable, "-c", CODE]))  # fmt: skip
        status = await asyncio.wait_for(session.run(sock), 30)
        while len(emitted) < len(LAYOUT):
            await asyncio.sleep(0.05)
        report = step_output.exit_report(session.by_node)
        return status, out.getvalue().splitlines(), err.getvalue(), report, emitted

    return asyncio.run(go())


def noted(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def calls_of(log: Path, task: int) -> list[str]:
    return [line for line in noted(log) if f" global_tid={task} " in line]


def test_each_task_of_a_step_runs_the_task_functions_with_its_ids_and_environment(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    writes = 'io.write("user task prolog of task " .. global_tid .. "\\n")\nio.flush()\nreturn slurm.SUCCESS'
    lua = script(tmp_path / "qpu.lua", log, hres_node_user_task_prolog=writes)
    status, out, _err, report, emitted = run_step(tmp_path, [prep("qpu", lua)])
    assert status == 0 and report == [] and all(m.exit_code == 0 for m in emitted)
    end = START + LIMIT * 60  # the job's expected end as of the step's start
    for task, node, local in ((0, "node01", 0), (1, "node02", 0), (2, "node02", 1)):
        ids = f"node_tid={local} global_tid={task}"
        tail = f"job=7 end={end} payload=token-qpu"
        assert calls_of(log, task) == [
            # root's, with the step's environment: no task variables yet
            f"task_prolog qpu {node} {ids} procid=- localid=- task_pid=- {tail}",
            # the user's, in the task's context: its SLURM_PROCID, SLURM_LOCALID and SLURM_TASK_PID
            f"user_task_prolog qpu {node} {ids} procid={task} localid={local} task_pid=set {tail}",
            # after the task, TaskEpilog's environment
            f"task_epilog qpu {node} {ids} procid={task} localid={local} task_pid=- {tail}",
        ]
        mine = [line for line in out if line.startswith(f"{task}: ".encode())]
        # What the user task prolog writes starts the task's output.
        assert mine == [f"{task}: user task prolog of task {task}".encode(), f"{task}: ran {task}".encode()]


def test_several_resources_run_in_order_and_their_task_epilogs_in_reverse(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    first, second = script(tmp_path / "a.lua", log), script(tmp_path / "b.lua", log)
    status, *_ = run_step(tmp_path, [prep("a", first), prep("b", second)])
    assert status == 0
    for task in (0, 1, 2):
        kinds = [" ".join(line.split()[:2]) for line in calls_of(log, task)]
        assert kinds == ["task_prolog a", "task_prolog b", "user_task_prolog a", "user_task_prolog b",
                         "task_epilog b", "task_epilog a"]  # fmt: skip


def test_a_failing_task_prolog_fails_that_task_only_as_a_failed_taskprolog(tmp_path: Path) -> None:
    """The task whose prolog fails never starts (nor its user task prolog); srun prints
    slurmstepd's error line and reports the task's exit code 1, as for a failed TaskProlog.
    The other resource's task prolog still runs for it; the other tasks run."""
    log = tmp_path / "calls.log"
    failing = script(tmp_path / "a.lua", log, hres_node_task_prolog=(
        "if global_tid == 1 then return slurm.ERROR end\nreturn slurm.SUCCESS"))  # fmt: skip
    other = script(tmp_path / "b.lua", log)
    status, out, err, report, emitted = run_step(tmp_path, [prep("a", failing), prep("b", other)])
    assert sorted(out) == [b"0: ran 0", b"2: ran 2"]
    words = b"hres/lua: a: hres_node_task_prolog returned -1"
    assert b"1: slurmstepd: error: node02: StepId=7.0: " + words + b"\n" in err
    assert report == ["srun: error: node02: task 1: Exited with exit code 1"]
    assert status == 1
    assert [" ".join(line.split()[:2]) for line in calls_of(log, 1)] == ["task_prolog a", "task_prolog b"]
    by_node = {m.node: m.exit_code for m in emitted}
    assert by_node == {"node01": 0, "node02": 1}


def test_the_plugin_s_message_is_one_line_of_the_task_s_error(tmp_path: Path) -> None:
    refuse = 'if global_tid == 0 then slurm.user_msg("qpu busy\\nretry later") return slurm.ERROR end'
    lua = script(tmp_path / "qpu.lua", tmp_path / "calls.log", hres_node_task_prolog=refuse)
    status, _out, err, report, _ = run_step(tmp_path, [prep("qpu", lua)])
    assert b"0: slurmstepd: error: node01: StepId=7.0: qpu busy retry later\n" in err
    assert report == ["srun: error: node01: task 0: Exited with exit code 1"] and status == 1


def test_a_failing_user_task_prolog_fails_that_task(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    lua = script(tmp_path / "qpu.lua", log, hres_node_user_task_prolog=(
        'if global_tid == 0 then slurm.user_msg("no quota for task " .. global_tid) return 1 end\n'
        "return slurm.SUCCESS"))  # fmt: skip
    marker = tmp_path / "task-ran"
    code = f"import os; open('{marker}' + os.environ['SLURM_PROCID'], 'w').close(); print('ran')"
    status, out, err, report, _ = run_step(tmp_path, [prep("qpu", lua)], argv=[sys.executable, "-c", code])
    assert sorted(out) == [b"1: ran", b"2: ran"]
    assert b"0: slurmstepd: error: node01: StepId=7.0: no quota for task 0\n" in err
    assert report == ["srun: error: node01: task 0: Exited with exit code 1"] and status == 1
    assert not Path(f"{marker}0").exists() and Path(f"{marker}1").exists()
    assert [line.split()[0] for line in calls_of(log, 0)] == ["task_prolog", "user_task_prolog"]


def test_the_hres_task_prolog_runs_before_slurm_conf_taskprolog_which_a_failure_skips(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    remote = "if global_tid == 2 then return slurm.ESLURM_HRES_REMOTE_FAIL end\nreturn slurm.SUCCESS"
    lua = script(tmp_path / "qpu.lua", log, hres_node_task_prolog=remote)
    task_prolog = tmp_path / "task_prolog"
    task_prolog.write_text(f'#!/bin/sh\necho "TaskProlog $SLURM_PROCID" >> {log}\n')
    task_prolog.chmod(0o755)
    status, out, err, report, _ = run_step(tmp_path, [prep("qpu", lua)],
                                           conf=PrologConfig(task_prolog=(str(task_prolog),)))  # fmt: skip
    assert sorted(out) == [b"0: ran 0", b"1: ran 1"]
    words = b"hres/lua: qpu: hres_node_task_prolog returned 8100"
    assert b"2: slurmstepd: error: node02: StepId=7.0: " + words in err
    assert report == ["srun: error: node02: task 2: Exited with exit code 1"] and status == 1
    lines = noted(log)
    for task in (0, 1):
        mine = [line for line in lines if f"global_tid={task} " in line or line == f"TaskProlog {task}"]
        assert [line.split()[0] for line in mine] == ["task_prolog", "user_task_prolog", "TaskProlog",
                                                      "task_epilog"]  # fmt: skip
    assert "TaskProlog 2" not in lines


def test_a_failing_task_epilog_is_only_logged(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    lua = script(tmp_path / "qpu.lua", log, hres_node_task_epilog="error('service gone')")
    status, out, err, report, emitted = run_step(tmp_path, [prep("qpu", lua)])
    assert sorted(out) == [b"0: ran 0", b"1: ran 1", b"2: ran 2"]
    assert status == 0 and report == [] and b"slurmstepd" not in err
    assert all(m.exit_code == 0 and m.error == "" for m in emitted)
    assert sum(line.startswith("task_epilog") for line in noted(log)) == 3


def test_prolog_timeout_stops_a_task_prolog_that_loops(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    lua = script(tmp_path / "qpu.lua", log, hres_node_task_prolog=(
        "if global_tid == 0 then while true do end end\nreturn slurm.SUCCESS"))  # fmt: skip
    status, out, err, report, _ = run_step(tmp_path, [prep("qpu", lua)], prolog_timeout=1)
    assert sorted(out) == [b"1: ran 1", b"2: ran 2"]
    assert b"0: slurmstepd: error: node01: StepId=7.0: hres/lua: qpu: hres_node_task_prolog: timed out" in err
    assert report == ["srun: error: node01: task 0: Exited with exit code 1"] and status == 1


def test_epilog_timeout_stops_a_task_epilog_that_loops_which_is_only_logged(tmp_path: Path) -> None:
    """EpilogTimeout bounds the task epilog (the spec's "EpilogTimeout for the epilogs"):
    the step ends, its tasks' exits as they were."""
    lua = script(tmp_path / "qpu.lua", tmp_path / "calls.log", hres_node_task_epilog="while true do end")
    status, out, _err, report, emitted = run_step(tmp_path, [prep("qpu", lua)], epilog_timeout=1)
    assert sorted(out) == [b"0: ran 0", b"1: ran 1", b"2: ran 2"]
    assert status == 0 and report == [] and all(m.exit_code == 0 for m in emitted)


def test_a_job_without_plugin_resources_runs_no_lua(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    status, out, *_ = run_step(tmp_path, [])
    assert status == 0 and sorted(out) == [b"0: ran 0", b"1: ran 1", b"2: ran 2"]
    assert not log.exists()
