"""A step's tasks on an agent talking to a real srun session (agent/steps.py with
cli/step_run.py's Session), no controller: the key is proved both ways, each task's output
and exit reach srun, a stranger's key starts nothing, and slurm.conf's TaskProlog and
TaskEpilog run around each task."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import os
import pwd
import re
import signal
import socket
import sys

import pytest

from agent.containment import Containment
from agent.jobs import resolve_account
from agent.prolog import NodeHooks
from agent.steps import StepRunner
from cli import step_output
from cli.step_run import Session
from cluster.core.prolog_conf import PrologConfig
from slurmwords import agent_messages as am
from slurmwords import step_io

NODE = "node01"
ME = pwd.getpwuid(os.getuid()).pw_name
CODE = (
    "import os, sys; e = os.environ; print('task', e['SLURM_PROCID'], e['SLURM_STEP_TASKS_PER_NODE']); "
    "sys.exit(int(e['SLURM_PROCID']) + 2)"
)


def launch(port: int, key: str, tmp_path) -> am.StepLaunch:
    return am.StepLaunch(
        job_id=5, step_id=0, node=NODE, node_index=0, tasks=[0, 1], cpu_ids=[0, 1], ntasks=2,
        node_list=NODE, num_nodes=1, tasks_per_node="2", argv=[sys.executable, "-c", CODE],
        environment={"PATH": os.environ.get("PATH", "")}, work_dir=str(tmp_path),
        job={"job_id": 5, "user": ME, "cpus_on_node": 2}, io_host="127.0.0.1", io_port=port, io_key=key,
    )  # fmt: skip


async def run(tmp_path, agent_key: str, edit=None, opts=None) -> tuple[int, bytes, bytes, list[am.Message]]:
    key = step_io.new_key()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    step = {"step_id": 0, "num_tasks": 2, "nodes": [{"name": NODE, "tasks": [0, 1]}]}
    session = Session(None, 5, step, key, opts or {})
    out, err = io.BytesIO(), io.BytesIO()
    session.out = step_output.TaskOutput(out, err, ntasks=2, label=True)
    emitted: list[am.Message] = []
    runner = StepRunner([NODE], Containment(usable=sorted(os.sched_getaffinity(0))), emitted.append,
                        clock=lambda: 1.0, root_jobs=True)  # fmt: skip

    async def to_agent(name: str) -> None:  # what the controller does with srun's signal
        runner.signal(am.StepSignal(job_id=5, step_id=0, node=NODE, signal=name))

    session._signal = to_agent
    msg = launch(sock.getsockname()[1], agent_key if agent_key else key, tmp_path)
    runner.launch(edit(msg) if edit else msg)
    if agent_key:  # refused: srun never hears of a task, the agent reports why
        server = await asyncio.start_server(session._serve, sock=sock)
        while not emitted:
            await asyncio.sleep(0.05)
        server.close()
        return -1, out.getvalue(), err.getvalue(), emitted
    status = await asyncio.wait_for(session.run(sock), 20)
    while not emitted:
        await asyncio.sleep(0.05)
    return status, out.getvalue(), err.getvalue(), emitted


def test_tasks_stream_to_srun_and_the_agent_reports_the_step(tmp_path) -> None:
    status, out, _err, emitted = asyncio.run(run(tmp_path, ""))
    assert sorted(out.splitlines()) == [b"0: task 0 2", b"1: task 1 2"]
    assert status == 3  # the highest exit code
    (done,) = emitted
    assert done == am.StepDone(job_id=5, step_id=0, node=NODE, exit_code=3, signal=0, time=1.0, error="",
                               tasks=done.tasks)  # fmt: skip
    # Each task's figures from its reaping (wait4's rusage): its CPU time to the end; its
    # largest RSS is no larger than the agent's, which its fork inherited: not told.
    assert [t.task for t in done.tasks] == [0, 1]
    assert all(t.user_cpu_secs >= 0 and t.system_cpu_secs >= 0 and t.max_rss_kb is None for t in done.tasks)


def test_srun_multi_prog_runs_each_task_s_own_program(tmp_path) -> None:
    own = {str(t): [sys.executable, "-c", f"print('program {t}')"] for t in (0, 1)}
    status, out, _err, _ = asyncio.run(run(tmp_path, "", lambda m: dataclasses.replace(m, task_argv=own)))
    assert (status, sorted(out.splitlines())) == (0, [b"0: program 0", b"1: program 1"])


def test_srun_cpu_bind_none_and_verbose(tmp_path) -> None:
    # Each task says its mask first, as slurmstepd's task_slurm_chkaffinity; with none
    # both tasks have the step's two CPUs, else one each.
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two CPUs")
    code = "import os; print('cpus', sorted(os.sched_getaffinity(0)))"

    def bound(kind: str):
        return lambda m: dataclasses.replace(m, argv=[sys.executable, "-c", code], cpu_bind=kind,
                                             cpu_bind_verbose=True)  # fmt: skip

    _status, out, err, _ = asyncio.run(run(tmp_path, "", bound("none")))
    lines = sorted(err.decode().splitlines())
    assert all(
        re.fullmatch(r"\d: cpu-bind=NONE - node01, task  \d  \d \[\d+\]: mask 0x[0-9a-f]+", x) for x in lines
    )
    assert len(lines) == 2 and len({x.split("mask")[1] for x in lines}) == 1  # the same mask
    shares = {x.split(": cpus")[1] for x in out.decode().splitlines()}
    assert len(shares) == 1 and shares.pop().count(",") == 1  # both tasks, the step's two CPUs
    _status, out, err, _ = asyncio.run(run(tmp_path, "", bound("cores")))
    lines = sorted(err.decode().splitlines())
    line = r"\d: cpu-bind-cores=MASK - node01, task  \d  \d \[\d+\]: mask 0x[0-9a-f]+ set"
    assert all(re.fullmatch(line, x) for x in lines), lines
    assert len({x.split(": cpus")[1] for x in out.decode().splitlines()}) == 2  # one CPU each


def test_srun_wait_kills_the_tasks_left_its_seconds_after_the_first_ended(tmp_path, capsys) -> None:
    own = {"0": [sys.executable, "-c", "pass"], "1": [sys.executable, "-c", "import time; time.sleep(30)"]}
    edit = lambda m: dataclasses.replace(m, task_argv=own)  # noqa: E731
    status, _out, _err, _ = asyncio.run(asyncio.wait_for(run(tmp_path, "", edit, {"max_wait": 1}), 20))
    said = capsys.readouterr().err.splitlines()
    assert said[:3] == ["srun: First task exited 1s ago", "srun: StepId=5.0 task 0: exited",
                        "srun: StepId=5.0 task 1: running"]  # fmt: skip
    assert status == 128 + 9


def test_a_listener_without_the_key_gets_nothing_and_no_task_starts(tmp_path) -> None:
    _, out, _err, emitted = asyncio.run(run(tmp_path, step_io.new_key()))
    assert out == b""
    assert len(emitted) == 1 and isinstance(emitted[0], am.StepDone)
    assert "srun failed to prove the step's key" in emitted[0].error and emitted[0].exit_code == 1


def test_a_command_that_cannot_be_exec_d_fails_every_task_as_slurmstepd_does(tmp_path) -> None:
    async def go():
        key = step_io.new_key()
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        step = {"step_id": 0, "num_tasks": 2, "nodes": [{"name": NODE, "tasks": [0, 1]}]}
        session = Session(None, 5, step, key, {"input": "none"})
        out, err = io.BytesIO(), io.BytesIO()
        session.out = step_output.TaskOutput(out, err, ntasks=2, label=False)
        emitted: list[am.Message] = []
        runner = StepRunner([NODE], Containment(usable=sorted(os.sched_getaffinity(0))), emitted.append,
                            clock=lambda: 1.0, root_jobs=True)  # fmt: skip
        missing = str(tmp_path / "no-such-command")
        msg = dataclasses.replace(launch(sock.getsockname()[1], key, tmp_path), argv=[missing])
        runner.launch(msg)
        status = await asyncio.wait_for(session.run(sock), 20)
        return status, err.getvalue(), emitted

    status, err, emitted = asyncio.run(go())
    assert status == 2  # ENOENT, as slurmstepd's failed execve()
    assert err.count(b"slurmstepd: error: node01: StepId=5.0: execve(): ") == 2
    assert b"No such file or directory" in err
    assert emitted[0].exit_code == 2 and "execve()" in emitted[0].error


def test_sbatch_signal_without_b_reaches_the_step_s_tasks_at_its_instant(tmp_path) -> None:
    """--signal=USR1@T (no B:): the controller puts the instant in the step's launch, and the
    agent signals the step's tasks then (Slurm signals every step, not the batch shell)."""
    trap = (
        "import signal, sys, time; "
        "signal.signal(signal.SIGUSR1, lambda *a: (print('caught USR1', flush=True), sys.exit(0))); "
        "time.sleep(20); print('no signal'); sys.exit(3)"
    )

    async def go():
        key = step_io.new_key()
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        step = {"step_id": 0, "num_tasks": 2, "nodes": [{"name": NODE, "tasks": [0, 1]}]}
        session = Session(None, 5, step, key, {"input": "none"})
        out, err = io.BytesIO(), io.BytesIO()
        session.out = step_output.TaskOutput(out, err, ntasks=2, label=True)
        emitted: list[am.Message] = []
        clock = asyncio.get_running_loop().time
        runner = StepRunner([NODE], Containment(usable=sorted(os.sched_getaffinity(0))), emitted.append,
                            clock=clock, root_jobs=True)  # fmt: skip
        msg = dataclasses.replace(
            launch(sock.getsockname()[1], key, tmp_path),
            argv=[sys.executable, "-c", trap],
            warn_signal=int(signal.SIGUSR1),
            warn_at=clock() + 1.0,  # time for the interpreters to start and set their traps
        )
        runner.launch(msg)
        status = await asyncio.wait_for(session.run(sock), 20)
        return status, out.getvalue()

    status, out = asyncio.run(go())
    assert sorted(out.splitlines()) == [b"0: caught USR1", b"1: caught USR1"]
    assert status == 0


def script(path, text: str) -> str:
    path.write_text("#!/bin/sh\n" + text)
    path.chmod(0o755)
    return str(path)


async def run_with_hooks(tmp_path, conf: PrologConfig, argv: list[str]) -> tuple[int, bytes, bytes, list]:
    """A two-task step on a runner whose agent has slurm.conf's TaskProlog/TaskEpilog."""
    key = step_io.new_key()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    step = {"step_id": 0, "num_tasks": 2, "nodes": [{"name": NODE, "tasks": [0, 1]}]}
    session = Session(None, 5, step, key, {"input": "none"})
    out, err = io.BytesIO(), io.BytesIO()
    session.out = step_output.TaskOutput(out, err, ntasks=2, label=True)
    emitted: list[am.Message] = []
    runner = StepRunner([NODE], Containment(usable=sorted(os.sched_getaffinity(0))), emitted.append,
                        clock=lambda: 1.0, root_jobs=True, hooks=NodeHooks(conf))  # fmt: skip
    runner.launch(dataclasses.replace(launch(sock.getsockname()[1], key, tmp_path), argv=argv))
    status = await asyncio.wait_for(session.run(sock), 20)
    while not emitted:
        await asyncio.sleep(0.05)
    return status, out.getvalue(), err.getvalue(), emitted


def test_task_prolog_runs_for_each_task_its_exports_and_prints_reach_that_task(tmp_path) -> None:
    """slurm.conf TaskProlog runs for every task of a step (not only the batch script): it
    sees the task's SLURM_PROCID, its ``export`` reaches that task only, ``unset`` removes a
    variable, and its ``print`` line starts that task's output."""
    prolog = script(tmp_path / "task_prolog",
                    'echo "export FROM_PROLOG=rank$SLURM_PROCID.$SLURM_STEP_ID"\n'
                    'echo "unset SLURM_NTASKS"\n'
                    'echo "print hello from task prolog $SLURM_PROCID $SLURM_SCRIPT_CONTEXT"\n')  # fmt: skip
    code = (
        "import os; e = os.environ; "
        "print('task', e['SLURM_PROCID'], e.get('FROM_PROLOG'), e.get('SLURM_NTASKS', 'unset'))"
    )
    status, out, _err, emitted = asyncio.run(
        run_with_hooks(tmp_path, PrologConfig(task_prolog=(prolog,)), [sys.executable, "-c", code])
    )
    lines = out.splitlines()
    assert sorted(lines) == [
        b"0: hello from task prolog 0 prolog_task",
        b"0: task 0 rank0.0 unset",
        b"1: hello from task prolog 1 prolog_task",
        b"1: task 1 rank1.0 unset",
    ]
    for task in (b"0", b"1"):  # the print line comes before the task's own output
        mine = [line for line in lines if line.startswith(task + b":")]
        assert mine[0].startswith(task + b": hello")
    assert status == 0 and emitted[0].exit_code == 0


def test_a_failing_task_prolog_fails_its_task_which_never_runs(tmp_path) -> None:
    """As slurmstepd: a TaskProlog that fails for one task ends that task with its status
    ("TaskProlog failed"), its command never started; the other task runs."""
    prolog = script(tmp_path / "task_prolog", '[ "$SLURM_PROCID" = 1 ] && exit 3\nexit 0\n')
    marker = tmp_path / "ran"
    code = f"import os; open('{marker}' + os.environ['SLURM_PROCID'], 'w').close(); print('ran')"
    status, out, err, emitted = asyncio.run(
        run_with_hooks(tmp_path, PrologConfig(task_prolog=(prolog,)), [sys.executable, "-c", code])
    )
    assert out.splitlines() == [b"0: ran"]
    assert b"1: slurmstepd: error: node01: StepId=5.0: TaskProlog failed status=3" in err
    assert (tmp_path / "ran0").exists() and not (tmp_path / "ran1").exists()
    assert status == 3 and emitted[0].exit_code == 3


def test_task_epilog_runs_after_each_task_with_its_environment(tmp_path) -> None:
    """TaskEpilog runs once each task has ended (before srun hears of its exit), as the
    job's user, with that task's SLURM_PROCID and SLURM_STEP_ID; its failure is only logged."""
    epilog = script(tmp_path / "task_epilog",
                    'echo "$SLURM_SCRIPT_CONTEXT $SLURM_STEP_ID $(id -u)" > "$PWD/epilog.$SLURM_PROCID"\n'
                    "exit 1\n")  # fmt: skip
    code = "import os, time; time.sleep(0.2); print('done', os.environ['SLURM_PROCID'])"
    status, out, _err, emitted = asyncio.run(
        run_with_hooks(tmp_path, PrologConfig(task_epilog=(epilog,)), [sys.executable, "-c", code])
    )
    assert sorted(out.splitlines()) == [b"0: done 0", b"1: done 1"]
    for task in (0, 1):  # there when srun returned: srun hears of the exit after the epilog
        assert (tmp_path / f"epilog.{task}").read_text() == f"epilog_task 0 {os.getuid()}\n"
    assert status == 0 and emitted[0].exit_code == 0 and emitted[0].error == ""


def test_a_step_task_sees_its_node_s_task_ids(tmp_path) -> None:
    # setup_env's SLURM_GTIDS: every global task id of the node, not the batch task's 0.
    msg = dataclasses.replace(launch(1, step_io.new_key(), tmp_path), tasks=[2, 3], node_index=1)
    job = {**msg.job, "environment": {}, "batch_host": NODE}
    env = StepRunner._task_env(msg, job, resolve_account(ME, root_jobs=True), 1, 3)
    ids = [env[k] for k in ("SLURM_GTIDS", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID")]
    assert ids == ["2,3", "3", "1", "1"]


def test_srun_e_keeps_the_counts_srun_has(tmp_path) -> None:
    # srun -E (the interactive step's --preserve-env): the job's SLURM_NTASKS and
    # SLURM_NNODES as srun sent them, so a plain srun typed in the step runs the job's tasks.
    sent = {"SLURM_NTASKS": "8", "SLURM_NNODES": "2", "SLURM_NPROCS": "8", "SLURM_TASKS_PER_NODE": "4(x2)"}
    msg = dataclasses.replace(launch(1, step_io.new_key(), tmp_path), environment=sent, preserve_env=True)
    job = {**msg.job, "environment": dict(sent), "batch_host": NODE}
    env = StepRunner._task_env(msg, job, resolve_account(ME, root_jobs=True), 0, 0)
    assert (env["SLURM_NTASKS"], env["SLURM_NNODES"], env["SLURM_TASKS_PER_NODE"]) == ("8", "2", "4(x2)")
    assert env["SLURM_STEP_NUM_TASKS"] == "2"  # the step's own
    plain = StepRunner._task_env(dataclasses.replace(msg, preserve_env=False), job,
                                 resolve_account(ME, root_jobs=True), 0, 0)  # fmt: skip
    assert plain["SLURM_NTASKS"] == "2"
