"""srun --pty: task 0 on a pseudo-terminal the agent opens, a real srun session on the
other side (agent/steps.py with cli/step_run.py's Session, no controller): the task's
standard streams are the terminal, its session's controlling one, of srun's size; srun's
input is typed at it, a WINCH frame resizes it; the other tasks' output goes nowhere."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import os
import socket
import sys

from agent.containment import Containment
from agent.steps import StepRunner
from cli import step_output
from cli.step_run import Session
from slurmwords import agent_messages as am
from slurmwords import step_io
from tests.agent.test_step_runner import NODE, launch

TASK = """
import os, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGWINCH])
if os.environ["SLURM_PROCID"] != "0":
    print("from task 1")
    sys.exit(0)
fd = os.open("/dev/tty", os.O_RDWR)  # only with a controlling terminal
print("tty", os.isatty(0), os.isatty(1), os.isatty(2), os.getsid(0) == os.getpid(), os.get_terminal_size(0))
print("read", input())
print("ready", flush=True)
signal.sigtimedwait([signal.SIGWINCH], 20)
print("resized", os.get_terminal_size(0))
print("eof", sys.stdin.read() == "")
sys.exit(4)
"""


def test_task_zero_runs_on_a_terminal_of_srun_s_size(tmp_path) -> None:
    async def scenario() -> tuple[int, bytes, list[am.Message]]:
        key = step_io.new_key()
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        step = {"step_id": 0, "num_tasks": 2, "nodes": [{"name": NODE, "tasks": [0, 1]}]}
        session = Session(None, 5, step, key, {})
        out = io.BytesIO()
        session.out = step_output.TaskOutput(out, io.BytesIO(), ntasks=2, label=False)
        typed, session.input_fd = os.pipe()[::-1]  # what srun reads: "typed" then its end
        os.write(typed, b"hello\n")
        emitted: list[am.Message] = []
        runner = StepRunner([NODE], Containment(usable=sorted(os.sched_getaffinity(0))), emitted.append,
                            clock=lambda: 1.0, root_jobs=True)  # fmt: skip
        msg = dataclasses.replace(
            launch(sock.getsockname()[1], key, tmp_path), argv=[sys.executable, "-c", TASK], pty=True,
            pty_rows=30, pty_cols=100,
        )  # fmt: skip
        runner.launch(msg)
        running = asyncio.ensure_future(session.run(sock))
        while b"ready" not in out.getvalue():
            assert not running.done(), out.getvalue()
            await asyncio.sleep(0.05)
        for writer in session.writers:  # srun's terminal was resized
            writer.write(step_io.pack_winch(50, 120))
        os.close(typed)
        status = await asyncio.wait_for(running, 30)
        while not emitted:
            await asyncio.sleep(0.05)
        return status, out.getvalue(), emitted

    status, out, emitted = asyncio.run(asyncio.wait_for(scenario(), 60))
    lines = out.decode().splitlines()
    assert "tty True True True True os.terminal_size(columns=100, lines=30)" in lines, lines
    assert "read hello" in lines  # srun's input, through the terminal
    assert "resized os.terminal_size(columns=120, lines=50)" in lines
    assert "eof True" in lines  # srun's input ended: the terminal's end of file
    assert not any("from task 1" in line for line in lines)  # /dev/null, as --pty sets it
    assert status == 4
    assert isinstance(emitted[0], am.StepDone) and emitted[0].exit_code == 4
